"""DDP and torch.compile: Dynamo's DDPOptimizer splits the graph where DDP's gradient buckets end.

Run it as it is: `python examples/distributed/ddp.py`. Two ranks, each a Python process of its own on
this machine's CPU (this same file, started with the argument `rank`), train over gloo.
"""

# execdocs: devices=cpu

import copy
import logging
import sys
import time
import warnings

import torch
from torch import nn
from torch._dynamo.testing import CompileCounterWithBackend
from torch.nn.parallel import DistributedDataParallel as DDP

from distributed import _dynamo_log, _ranks
from distributed._mlp import DEPTH, MLP, WIDTH

started = time.perf_counter()
WORLD_SIZE, BATCH = 2, 32
# (how the model is wrapped, DDP's bucket_cap_mb, torch._dynamo.config.optimize_ddp)
SETTINGS = [
    ("torch.compile(DDP(model))", 25, True),
    ("torch.compile(DDP(model))", 1, True),
    ("torch.compile(DDP(model))", 25, False),
    ("DDP(torch.compile(model))", 25, True),
    ("DDP(torch.compile(model))", 1, True),
    ("DDP(torch.compile(model))", 25, False),
]


# --8<-- [start:wrap]
def wrapped(model, wrapping: str, bucket_cap_mb: int, backend):
    if wrapping == "torch.compile(DDP(model))":
        return torch.compile(DDP(model, bucket_cap_mb=bucket_cap_mb), backend=backend)
    return DDP(torch.compile(model, backend=backend), bucket_cap_mb=bucket_cap_mb)


def gradients_after_one_step(module, x) -> list[torch.Tensor]:
    module(x).sum().backward()  # DDP all-reduces the gradients during the backward pass
    return [parameter.grad for parameter in module.parameters()]


# --8<-- [end:wrap]


# --8<-- [start:sequential-model]
def sequential_mlp() -> nn.Module:
    """The same eight layers built of torch.nn's own modules: no forward of our own."""
    return nn.Sequential(*[nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU()) for _ in range(DEPTH)])


# --8<-- [end:sequential-model]


class WarningsSeen(logging.Handler):
    """The records of level WARNING and above that torch's loggers emit while it is attached."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def parameter_bytes(graph_module) -> int:
    """Bytes of the parameters a Dynamo graph takes as inputs (Dynamo lifts a module's parameters into inputs)."""
    inputs = [node for node in graph_module.graph.nodes if node.op == "placeholder"]
    return sum(node.meta["example_value"].numel() * 4 for node in inputs if "_parameters_" in node.name)


def work(rank: int, world_size: int) -> dict:
    """On each rank: one training step per setting, its Dynamo graphs counted, its gradients checked."""
    torch.manual_seed(0)  # the same weights on every rank, as DDP requires
    model = MLP()
    x = torch.randn(BATCH, WIDTH, generator=torch.Generator().manual_seed(rank))  # each rank its own data
    expected = gradients_after_one_step(DDP(copy.deepcopy(model)), x)  # eager DDP: the reference
    results = []
    for wrapping, bucket_cap_mb, optimize_ddp in SETTINGS:
        torch._dynamo.reset()
        torch._dynamo.config.optimize_ddp = optimize_ddp
        backend = CompileCounterWithBackend("eager")  # keeps Dynamo's graphs and runs them as they are
        # DDPOptimizer says, on the logger of its module, how many buckets it made
        with _dynamo_log.logger_output("torch._dynamo.backends.distributed", logging.INFO) as log:
            gradients = gradients_after_one_step(wrapped(copy.deepcopy(model), wrapping, bucket_cap_mb, backend), x)
        results.append({
            "setting": [wrapping, bucket_cap_mb, optimize_ddp],
            "layers_per_graph": [sum(node.target is torch._C._nn.linear for node in graph.graph.nodes)
                                 for graph in backend.graphs],
            "megabytes_per_graph": [parameter_bytes(graph) / 1e6 for graph in backend.graphs],
            "log": [line for line in log.getvalue().splitlines() if line.startswith("DDPOptimizer used bucket cap")],
            "largest_difference": max((g - e).abs().max().item() for g, e in zip(gradients, expected, strict=True)),
        })  # fmt: skip
    torch._dynamo.config.optimize_ddp = True
    sequential = sequential_mlp()
    outer = {}  # under torch.compile(DDP(model)): graphs, graph breaks' explanations, forward frames skipped
    for name, module in (("MLP", model), ("nn.Sequential", sequential)):
        torch._dynamo.reset()
        backend = CompileCounterWithBackend("eager")
        seen = WarningsSeen()
        # every torch logger: torch's logging setup stops some of them from passing records up to "torch"
        torch_loggers = [logging.getLogger(name) for name in list(logging.root.manager.loggerDict)
                         if name == "torch" or name.startswith("torch.")]  # fmt: skip
        for logger in torch_loggers:
            logger.addHandler(seen)
        with warnings.catch_warnings(record=True) as python_warnings, _dynamo_log.dynamo_said() as said:
            warnings.simplefilter("always")
            gradients_after_one_step(wrapped(copy.deepcopy(module), "torch.compile(DDP(model))", 25, backend), x)
        for logger in torch_loggers:
            logger.removeHandler(seen)
        warned = [str(warning.message) for warning in python_warnings] + list(dict.fromkeys(seen.messages))
        outer[name] = {"graphs": len(backend.graphs), **said, "warnings": warned}
    torch._dynamo.reset()
    backend = CompileCounterWithBackend("eager")
    gradients_after_one_step(wrapped(copy.deepcopy(sequential), "DDP(torch.compile(model))", 25, backend), x)
    outer["nn.Sequential, DDP(torch.compile(model))"] = {"graphs": len(backend.graphs)}
    return {"settings": results, "outer": outer}


if _ranks.is_rank_process():
    _ranks.rank_main(work)
    sys.exit(0)

# --8<-- [start:graphs]
ranks = _ranks.run_ranks(__file__, WORLD_SIZE)
print(f"{WORLD_SIZE} ranks over gloo; one training step each; Dynamo's graphs on rank 0:")
print(f"{'wrapping':27}{'bucket_cap_mb':>14}{'optimize_ddp':>13}{'graphs':>8}  layers per graph, MB of parameters")
for result in ranks[0]["settings"]:
    wrapping, bucket_cap_mb, optimize_ddp = result["setting"]
    graphs = zip(result["layers_per_graph"], result["megabytes_per_graph"], strict=True)
    sizes = ", ".join(f"{layers} ({mb:.2f})" for layers, mb in graphs)
    print(f"{wrapping:27}{bucket_cap_mb:14d}{optimize_ddp!s:>13}{len(result['layers_per_graph']):8d}  {sizes}")
first_bucket_mib = torch.distributed._DEFAULT_FIRST_BUCKET_BYTES / 2**20
print(f"DDP caps its first bucket (the last layers' gradients, which are ready first) at {first_bucket_mib:.0f} MiB")
print("DDPOptimizer's log, setting by setting:")
for result in ranks[0]["settings"]:
    print(f"  {result['setting']}: {result['log'] or 'nothing (not used)'}")
# --8<-- [end:graphs]
settings = {tuple(result["setting"]): result for result in ranks[0]["settings"]}
for wrapping in ("torch.compile(DDP(model))", "DDP(torch.compile(model))"):
    graphs = {cap_and_flag: len(settings[(wrapping, *cap_and_flag)]["layers_per_graph"]) for cap_and_flag in
              [(25, True), (1, True), (25, False)]}  # fmt: skip
    assert graphs == {(25, True): 2, (1, True): DEPTH, (25, False): 1}, f"{wrapping}: {graphs}"
    assert settings[(wrapping, 25, True)]["layers_per_graph"] == [DEPTH - 1, 1], "the last layer: DDP's first bucket"
for rank in ranks:
    for result in rank["settings"]:
        assert result["largest_difference"] < 1e-5, f"the split changes no gradient: {result['setting']}"

# --8<-- [start:gradients]
worst = max(result["largest_difference"] for rank in ranks for result in rank["settings"])
print(f"largest difference from eager DDP's gradients, any setting, any rank: {worst:.1e}")
# --8<-- [end:gradients]

# --8<-- [start:sequential]
print("bucket_cap_mb=25, optimize_ddp=True; Dynamo's graphs on rank 0:")
for name, seen in ranks[0]["outer"].items():
    label = name if "," in name else f"{name}, torch.compile(DDP(model))"
    print(f"{label}: {seen['graphs']} Dynamo graphs")
    for explanation in seen.get("graph_breaks", []):
        print(f"  graph break (from the graph_breaks log, off by default): {explanation}")
    for frame in seen.get("skipped_forward", []):
        print(f"  forward frame not traced: {frame}")
    if "warnings" in seen:
        print(f"  warnings: {len(seen['warnings'])} (Python's, and torch's loggers at WARNING and above)")
# --8<-- [end:sequential]
outer = ranks[0]["outer"]
assert outer["MLP"]["graphs"] == 2 and outer["nn.Sequential"]["graphs"] == 0, "the Sequential is never traced"
assert outer["nn.Sequential, DDP(torch.compile(model))"]["graphs"] == 2, "compiled inside DDP, it is"
assert outer["MLP"]["graph_breaks"] == outer["nn.Sequential"]["graph_breaks"], "the same graph breaks in DDP.forward"
assert not outer["nn.Sequential"]["warnings"], "nothing warns that the Sequential runs eagerly"


def skipped_container(name: str) -> bool:
    """Whether Dynamo left nn.Sequential's forward untraced because its file is on the skip list."""
    frames = outer[name]["skipped_forward"]
    return any(frame.startswith("torch/nn/modules/container.py") and "skipfiles" in frame for frame in frames)


assert skipped_container("nn.Sequential") and not skipped_container("MLP"), "Sequential.forward: on the skip list"

# --8<-- [start:took]
print(f"this example ran in {time.perf_counter() - started:.0f} s")
# --8<-- [end:took]
