"""FSDP2 (fully_shard) and torch.compile: what Dynamo traces of a sharded model, per block and whole.

Run it as it is: `python examples/distributed/fsdp.py`. Two ranks, each a Python process of its own on
this machine's CPU (this same file, started with the argument `rank`), train over gloo.
"""

# execdocs: devices=cpu

import copy
import sys
import time

import torch
from torch import nn
from torch._dynamo.testing import CompileCounterWithBackend
from torch.distributed.fsdp import fully_shard

from distributed import _dynamo_log, _ranks
from distributed._mlp import MLP, WIDTH

started = time.perf_counter()
WORLD_SIZE, BATCH, STEPS = 2, 32, 2
COLLECTIVES = ("all_gather", "reduce_scatter", "all_reduce", "_c10d_functional")


# --8<-- [start:model]
class Block(nn.Module):
    """One layer of the MLP, in a module of our own: a Linear and a ReLU."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        return torch.relu(self.linear(x))


class BlockMLP(MLP):
    """The chapter's MLP with each Linear inside a Block: the unit that fully_shard shards and Dynamo traces."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(Block() for _ in self.layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


# --8<-- [end:model]


# --8<-- [start:shard-and-compile]
def sharded(model: nn.Module) -> nn.Module:
    """FSDP2: each layer is a unit of its own (its parameters all-gathered before it runs), then the model."""
    for layer in model.layers:
        fully_shard(layer)
    return fully_shard(model)


def compiled(model: nn.Module, how: str, backend) -> nn.Module:
    if how == "whole model":
        return torch.compile(model, backend=backend)
    for layer in model.layers:  # per block
        layer.compile(backend=backend)
    return model


# --8<-- [end:shard-and-compile]


def work(rank: int, world_size: int) -> dict:
    """On each rank: STEPS training steps of each model, compiled each way; graphs, breaks, recompiles."""
    x = torch.randn(BATCH, WIDTH, generator=torch.Generator().manual_seed(rank))
    results = {}
    for model_name, model_class in (("Linear layers (MLP)", MLP), ("Block layers (BlockMLP)", BlockMLP)):
        torch.manual_seed(0)
        base = model_class()
        reference = sharded(copy.deepcopy(base))
        reference(x).sum().backward()
        expected = [parameter.grad.full_tensor() for parameter in reference.parameters()]
        for how in ("whole model", "per block"):
            torch._dynamo.reset()
            torch._dynamo.utils.counters.clear()
            backend = CompileCounterWithBackend("eager")  # keeps Dynamo's graphs and runs them as they are
            model = compiled(sharded(copy.deepcopy(base)), how, backend)
            with _dynamo_log.dynamo_said() as said:
                for _ in range(STEPS):
                    model(x).sum().backward()
                    gradients = [parameter.grad.full_tensor() for parameter in model.parameters()]
                    model.zero_grad()
            results[f"{model_name}, {how}"] = {
                "graphs": len(backend.graphs),
                "collectives_in_graphs": sum(
                    any(name in str(node.target) for name in COLLECTIVES)
                    for graph in backend.graphs
                    for node in graph.graph.nodes
                ),  # fmt: skip
                **said,
                "largest_difference": max((g - e).abs().max().item() for g, e in zip(gradients, expected, strict=True)),
            }
    return results


if _ranks.is_rank_process():
    _ranks.rank_main(work)
    sys.exit(0)

# --8<-- [start:graphs]
ranks = _ranks.run_ranks(__file__, WORLD_SIZE)
print(f"{WORLD_SIZE} ranks over gloo, {STEPS} training steps; on rank 0:")
for name, result in ranks[0].items():
    print(f"{name}: {result['graphs']} Dynamo graphs, {result['collectives_in_graphs']} collectives in them")
    for reason in result["graph_breaks"]:
        print(f"  graph break: {reason}")
    for reason in result["recompiles"]:
        print(f"  recompiled: {reason}")
    for frame in result["skipped_forward"]:
        print(f"  forward frame not traced: {frame}")
# --8<-- [end:graphs]
results = ranks[0]
assert results["Linear layers (MLP), whole model"]["graphs"] == 0, "the layers are torch.nn's own: nothing traced"
assert results["Linear layers (MLP), per block"]["graphs"] == 0
for how in ("whole model", "per block"):
    assert results[f"Block layers (BlockMLP), {how}"]["graphs"] == 2, "one graph, once more for requires_grad"
    assert any("requires_grad" in reason for reason in results[f"Block layers (BlockMLP), {how}"]["recompiles"])
assert all(result["collectives_in_graphs"] == 0 for result in results.values()), "FSDP2's hooks run eagerly"
assert any("loop" in reason for reason in results["Block layers (BlockMLP), whole model"]["graph_breaks"])
# --8<-- [start:traceable]
# Traceable FSDP2, the switch that let Dynamo trace the hooks and put the collectives in the graph
print(f"torch {torch.__version__}: torch._dynamo.config.skip_fsdp_hooks exists: "
      f"{hasattr(torch._dynamo.config, 'skip_fsdp_hooks')}")  # fmt: skip
# --8<-- [end:traceable]
# torch 2.11 still had it (the Versions page's run under 2.11.0 checks this line), 2.13 and later do not.
assert hasattr(torch._dynamo.config, "skip_fsdp_hooks") == (torch.__version__ < "2.13")
for rank in ranks:
    for name, result in rank.items():
        assert result["largest_difference"] < 1e-5, f"{name}: the gradients are eager FSDP2's"

# --8<-- [start:control]
def graphs_without_fsdp2(how: str) -> int:
    """The control: the same MLP of nn.Linear layers, not sharded, compiled the same way, one training step in
    this process; how many graphs Dynamo made."""
    torch._dynamo.reset()
    backend = CompileCounterWithBackend("eager")
    torch.manual_seed(0)
    model = compiled(MLP(), how, backend)
    model(torch.randn(BATCH, WIDTH)).sum().backward()
    return len(backend.graphs)


control = {how: graphs_without_fsdp2(how) for how in ("whole model", "per block")}
print("Linear layers (MLP), without FSDP2: " + "; ".join(f"{how}: {n} Dynamo graphs" for how, n in control.items()))
# --8<-- [end:control]
assert control["whole model"] == 1, "without FSDP2 the whole model compiles: FSDP2's hooks are what stop Dynamo"
assert control["per block"] == 0, "layer.compile() on nn.Linear makes no graph without FSDP2 either: the skip list"

# --8<-- [start:gradients]
worst = max(result["largest_difference"] for rank in ranks for result in rank.values())
print(f"largest difference from eager FSDP2's gradients, any way, any rank: {worst:.1e}")
# --8<-- [end:gradients]

# --8<-- [start:took]
print(f"this example ran in {time.perf_counter() - started:.0f} s")
# --8<-- [end:took]
