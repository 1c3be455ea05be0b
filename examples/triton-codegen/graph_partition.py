"""CUDA graphs around an op that cannot be captured: without graph partitioning Inductor runs the whole
graph with ordinary launches; with it, Inductor cuts the graph at the op and replays a CUDA graph for
each part. Then when a kept output raises an error, and when the next call overwrites it silently.

Run it as it is: `python examples/triton-codegen/graph_partition.py`. It needs a GPU.
"""
# execdocs: devices=cuda

import functools
import re
import statistics
from collections import Counter

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

import compile_tools
from _blocks import Block
from benchmarking import _profile_diff
from benchmarking._cuda_graphs import GraphCounter

torch.manual_seed(0)
torch.set_grad_enabled(False)  # inference: each call starts a new generation of CUDA graph trees
device = compile_tools.device()


# --8<-- [start:op]
@torch.library.custom_op("demo::fake_quantize", mutates_args=(), tags=(torch.Tag.cudagraph_unsafe,))
def fake_quantize(x: torch.Tensor) -> torch.Tensor:
    """Round x to 255 int8 steps of a per-tensor scale that the host reads: `.item()` waits for the GPU,
    which a stream being captured into a CUDA graph does not allow. Hence the tag."""
    scale = x.abs().amax().item() / 127
    return torch.round(x / scale).clamp(-127, 127) * scale


@fake_quantize.register_fake
def _(x):
    return torch.empty_like(x)
# --8<-- [end:op]


# --8<-- [start:model]
class QuantizedMiddle(nn.Module):
    """Six small blocks, with the activations between the third and the fourth fake-quantized."""

    def __init__(self, width=512):
        super().__init__()
        self.first = nn.Sequential(*[Block(width) for _ in range(3)])
        self.second = nn.Sequential(*[Block(width) for _ in range(3)])

    def forward(self, x):
        return self.second(fake_quantize(self.first(x)))


model = QuantizedMiddle().to(device).eval()
x = torch.randn(8, 512, device=device)  # a small batch: launches, not the GPU's work, set the time
# --8<-- [end:model]

print(f"torch {torch.__version__}: graph_partition is {torch._inductor.config.graph_partition} by default")


# --8<-- [start:two-ways]
PARTITION_FUNCTION = re.compile(r"def partition_\d+\(")


def reduce_overhead(partition: bool):
    """The model compiled with mode="reduce-overhead"'s one option, CUDA graphs, and Inductor's graph
    partitioning on or off; its first three calls (a warm-up, a capture, a replay), then three more, counted."""
    torch._dynamo.utils.counters.clear()
    compiled = torch.compile(model, options={"triton.cudagraphs": True, "graph_partition": partition})
    with compile_tools.captured_logs(cudagraphs=True) as log:  # TORCH_LOGS="cudagraphs"
        _, (code,) = torch._inductor.utils.run_and_get_code(compiled, x)
        for _ in range(2):
            compiled(x)
    with GraphCounter() as graphs:
        for _ in range(3):
            torch.testing.assert_close(compiled(x), model(x), rtol=2e-3, atol=2e-3)
    skips = [line.strip() for line in log.getvalue().splitlines() if "skipping cudagraphs" in line]
    print(f"graph_partition={partition}:")
    print(f"  output code: {len(PARTITION_FUNCTION.findall(code))} partition functions")
    print(f"  counters['inductor']['cudagraph_skips']: {torch._dynamo.utils.counters['inductor']['cudagraph_skips']}")
    print(f"  the log: {skips[0][:120] if skips else 'no skip'}")
    print(f"  in 3 later calls: {graphs.counts['captured']} graphs captured, {graphs.counts['replayed']} replayed")
    return compiled, graphs.counts["replayed"] // 3, skips


without, without_replays, without_skips = reduce_overhead(partition=False)
with_partition, with_replays, with_skips = reduce_overhead(partition=True)
# --8<-- [end:two-ways]
assert without_skips and "incompatible op" in without_skips[0], "one op the graph cannot capture: no CUDA graph"
assert without_replays == 0, "without partitioning, every call runs with ordinary launches"
assert not with_skips and with_replays == 2, "with it, two parts around the op, each replayed once per call"

# --8<-- [start:time]
def kernel_names(step) -> Counter:
    """The GPU kernels one call of step() ran, by name, from torch.profiler."""
    step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as trace:
        step()
        torch.cuda.synchronize()
    gpu = [event for event in trace.key_averages() if event.device_type == torch.autograd.DeviceType.CUDA]
    return Counter({event.key: event.count for event in gpu})


steps = {
    "eager": lambda: model(x),
    "default": functools.partial(torch.compile(model), x),
    "reduce-overhead, not partitioned": functools.partial(without, x),
    "reduce-overhead, partitioned": functools.partial(with_partition, x),
}
times = _profile_diff.paired_times(steps, pairs=21, block_ms=20.0)  # interleaved blocks, the order alternating
print(f"{'':>33} {'host us':>8} {'wall us':>8} {'GPU kernels':>12}")
for name, step in steps.items():
    calls = [call for block in times[name] for call in block]
    host, wall = (statistics.median(call[side] for call in calls) * 1e3 for side in (0, 1))
    print(f"{name:>33} {host:8.1f} {wall:8.1f} {sum(kernel_names(step).values()):12}")
block_wall = {name: [statistics.median(wall for _, wall in block) for block in times[name]] for name in steps}
not_partitioned = block_wall["reduce-overhead, not partitioned"]
partitioned = block_wall["reduce-overhead, partitioned"]
ratios = [a / b for a, b in zip(not_partitioned, partitioned, strict=True)]
deciles = statistics.quantiles(ratios, n=10)
gain = statistics.median(ratios)
print(f"not partitioned / partitioned, wall time of paired blocks: {gain:.2f}x ({deciles[0]:.2f}-{deciles[-1]:.2f})")
extra = kernel_names(steps["reduce-overhead, partitioned"]) - kernel_names(steps["reduce-overhead, not partitioned"])
print(f"kernels only the partitioned call ran: {dict(extra)}")
# --8<-- [end:time]
assert gain > 1.1, f"two graph launches instead of a launch per kernel: expected > 1.1x, got {gain:.2f}x"


# --8<-- [start:overwritten]
first_half = nn.Sequential(*model.first)  # three blocks: nothing to cut around
compiled = torch.compile(first_half, mode="reduce-overhead")
kept = []
for call in ("warm-up", "capture", "replay", "replay"):
    new_input = torch.randn(8, 512, device=device)
    kept.append((call, new_input, compiled(new_input)))  # the output kept, not cloned


def read(new_input, output) -> str:
    try:
        same = torch.allclose(output, first_half(new_input), rtol=1e-3, atol=1e-3)
    except RuntimeError as error:
        return f"RuntimeError: {str(error).split('. Stack trace')[0]}"
    return "its own call's result" if same else "another call's result, and no error"


readings = [read(new_input, output) for _, new_input, output in kept[:-1]]
for number, ((call, _, _), reading) in enumerate(zip(kept, readings, strict=False), start=1):
    print(f"call {number} ({call}), read after call {len(kept)}: {reading}")
# --8<-- [end:overwritten]
assert readings[0].startswith("RuntimeError") and readings[1].startswith("RuntimeError"), readings
assert "no error" in readings[2], "a replay's output: no error, the next replay's numbers"
