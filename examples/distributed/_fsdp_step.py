"""A sharded model and its training step, for the FSDP2 pages that measure one: the model sharded per block,
the two phases of a step, and the peak memory of a phase.

Import it from an example of this chapter: `from distributed import _fsdp_step`.
"""

import torch
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

GIB = 2**30


# --8<-- [start:shard-and-step]
def sharded(model):
    """Each block a unit, then the model; bfloat16 compute and all-gathers, float32 gradient reduce-scatters."""
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.layers:
        fully_shard(layer, mp_policy=policy)
    return fully_shard(model, mp_policy=policy)


class TrainingStep:
    """One training step, in its two phases: forward and backward, then AdamW's step."""

    def __init__(self, model, x, **adamw):
        self.model, self.x = model, x
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, **adamw)

    def forward_backward(self):
        self.model(self.x).float().square().mean().backward()

    def optimizer_step(self):
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def __call__(self):
        self.forward_backward()
        self.optimizer_step()


# --8<-- [end:shard-and-step]


def peak_gib(phase, base: int) -> float:
    """The most memory allocated while phase() runs, above `base` bytes."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    phase()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - base) / GIB
