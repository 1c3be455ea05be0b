"""A fake process group: one process plays one rank of a group of any size, on one GPU.

Import it from an example of this chapter: `from distributed._fake_group import fake_group`.
"""

import torch.distributed as dist
from torch.testing._internal.distributed.fake_pg import FakeStore


# --8<-- [start:fake-group]
def fake_group(world_size: int) -> dist.ProcessGroup:
    """Rank 0 of `world_size` ranks, in this one process: collectives return at once and move no data."""
    if dist.is_initialized():
        dist.destroy_process_group()
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world_size)
    return dist.group.WORLD


# --8<-- [end:fake-group]
