"""What torch.compile(mode="reduce-overhead") changes: CUDA graphs record the kernel launches of a
call once, then replay them with one launch.

Run it as it is: `python examples/triton-codegen/cuda_graphs.py`. It needs a GPU to show anything
about CUDA graphs; on a CPU it runs (Inductor skips CUDA graphs there), and the counts stay zero.
"""
# execdocs: devices=cuda

import re
import statistics
import time
from collections import Counter

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

import compile_tools
from _blocks import Block
from benchmarking._cuda_graphs import GraphCounter

torch.manual_seed(0)
torch.set_grad_enabled(False)  # inference: no backward, no autograd state to keep
device = compile_tools.device()
on_gpu = device.type == "cuda"


def synchronize():
    if on_gpu:
        torch.cuda.synchronize()


# --8<-- [start:model]
model = nn.Sequential(*[Block(512) for _ in range(6)]).to(device).eval()
x = torch.randn(8, 512, device=device)  # a small batch: every kernel is tiny

eager = model
default = torch.compile(model)
reduce_overhead = torch.compile(model, mode="reduce-overhead")
# --8<-- [end:model]


def runtime_calls(fn, *args):
    """The launch calls the CPU makes during one call of fn(*args), from the profiler's CPU-side events.

    Kernels are launched through the CUDA runtime (cudaLaunchKernel, by ATen and cuBLAS) or the driver
    (cuLaunchKernel and cuLaunchKernelEx, by Triton's launcher); a CUDA graph is launched by cudaGraphLaunch.
    """
    activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA] if on_gpu else [ProfilerActivity.CPU]
    fn(*args)
    synchronize()
    with profile(activities=activities) as prof:
        fn(*args)
        synchronize()
    counts = Counter()
    for event in prof.key_averages():
        if re.match(r"cu(da)?LaunchKernel", event.key):
            counts["kernel launches"] += event.count
        elif re.match(r"cu(da)?GraphLaunch", event.key):
            counts["graph launches"] += event.count
    return counts


# --8<-- [start:launches]
for _ in range(3):  # reduce-overhead: a warm-up call, a call that records the graph, a replay
    reduce_overhead(x)
torch.testing.assert_close(reduce_overhead(x), eager(x), rtol=1e-3, atol=1e-3)

launches = {}
print(f"{'':>16}  {'kernel launch calls':>19}  {'graph launch calls':>18}  {'kernels run on the GPU':>22}")
for name, fn in (("eager", eager), ("default", default), ("reduce-overhead", reduce_overhead)):
    calls = runtime_calls(fn, x)
    gpu_kernels = compile_tools.gpu_kernel_launches(fn, x) if on_gpu else 0
    launches[name] = (calls["kernel launches"], calls["graph launches"], gpu_kernels)
    print(f"{name:>16}  {calls['kernel launches']:19}  {calls['graph launches']:18}  {gpu_kernels:22}")
# --8<-- [end:launches]
if on_gpu:
    assert launches["default"][1] == 0 and launches["reduce-overhead"][1] >= 1, launches
    assert launches["default"][0] < launches["eager"][0], "fused kernels: fewer launches than eager"
    assert launches["reduce-overhead"][0] < launches["eager"][0], launches
    assert launches["reduce-overhead"][0] <= 2, "at most a copy of the input into the graph's buffer"
    assert launches["reduce-overhead"][2] >= launches["default"][2], "the graph still runs every kernel"


# --8<-- [start:static-outputs]
x1, x2 = torch.randn(8, 512, device=device), torch.randn(8, 512, device=device)
out1 = reduce_overhead(x1)
out2 = reduce_overhead(x2)  # replays the same graph, into the same output buffer
same_memory = out1.data_ptr() == out2.data_ptr()
print("out1 and out2 share memory:", same_memory)
holds_call_1 = torch.allclose(out1, eager(x1), rtol=1e-3, atol=1e-3)
print("out1 still holds the result of call 1:", holds_call_1)

kept = reduce_overhead(x1).clone()  # a copy that belongs to us, outside the graph's memory pool
reduce_overhead(x2)
torch.testing.assert_close(kept, eager(x1), rtol=1e-3, atol=1e-3)
print("a clone survives the next call: True")
# --8<-- [end:static-outputs]
if on_gpu:
    assert same_memory and not holds_call_1, "the next replay wrote over out1, silently"
del out1, out2  # the graph's buffers: let them go before the graphs are reset below


# --8<-- [start:latency]
def wall_clock_us(fn, *args, calls=200 if on_gpu else 5, repeats=5):
    """Microseconds per call for back-to-back calls: what a serving loop sees (median of `repeats`)."""
    for _ in range(10):
        fn(*args)
    per_call = []
    for _ in range(repeats):
        synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        synchronize()
        per_call.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(per_call)


print(f"{'':>16}  {'back-to-back calls':>18}  {'do_bench (GPU time)':>19}")
wall, bench = {}, {}
for name, fn in (("eager", eager), ("default", default), ("reduce-overhead", reduce_overhead)):
    wall[name] = wall_clock_us(fn, x)
    bench[name] = compile_tools.timing_ms(fn, x)["median"] * 1e3
    print(f"{name:>16}  {wall[name]:15.1f} us  {bench[name]:16.1f} us")
speedup = wall["default"] / wall["reduce-overhead"]
print(f"reduce-overhead over default, back to back: {speedup:.2f}x")
# --8<-- [end:latency]
if on_gpu:
    assert speedup > 1.2, f"one graph launch instead of a launch per kernel; expected > 1.2x, got {speedup:.2f}x"
    assert wall["eager"] / wall["reduce-overhead"] > 1.2, wall


# --8<-- [start:warm-up]
torch._dynamo.reset()  # forget everything compiled so far: start again from a first call
fresh = torch.compile(model, mode="reduce-overhead")
per_call = []
with GraphCounter() as graphs:
    for number in range(1, 5):
        graphs.counts.clear()
        fresh(x)
        captured, replayed = graphs.counts["captured"], graphs.counts["replayed"]
        per_call.append((captured, replayed))
        print(f"call {number}: {captured} graph captured, {replayed} graph replayed")
# --8<-- [end:warm-up]
if on_gpu:
    # A new tree manager (after reset) captures one empty graph to own its memory pool; the warm-up replays nothing.
    assert per_call[0] == (1, 0), "the first call: the pool's empty graph, then the warm-up without a graph"
    assert per_call[1][0] >= 1 and per_call[1][1] >= 1, "the second call captures, then replays to compute"
    assert all(captures == 0 and replays >= 1 for captures, replays in per_call[2:]), per_call


# --8<-- [start:skipped]
def scale_in_place(t):
    t.mul_(2)  # mutates its input, which lives outside the graph's static buffers
    return t + 1


torch._dynamo.reset()
torch._dynamo.utils.counters.clear()
skipping = torch.compile(scale_in_place, mode="reduce-overhead")
with GraphCounter() as graphs, compile_tools.captured_logs(cudagraphs=True) as log:  # TORCH_LOGS="cudagraphs"
    for _ in range(3):
        torch.testing.assert_close(skipping(x.clone()), scale_in_place(x.clone()))
skips = [line for line in log.getvalue().splitlines() if "skipping cudagraphs" in line]
print("the log:", *skips, sep="\n  ")
print("counters['inductor']['cudagraph_skips']:", torch._dynamo.utils.counters["inductor"]["cudagraph_skips"])
print(f"in 3 calls: {graphs.counts['captured']} graphs captured, {graphs.counts['replayed']} replayed")
# --8<-- [end:skipped]
if on_gpu:
    assert skips and "mutated inputs" in skips[0], "the reason is in the log"
    assert torch._dynamo.utils.counters["inductor"]["cudagraph_skips"] >= 1, "and in the counter"
    # the one capture is the empty graph a new tree manager captures for its memory pool (the warm-up above)
    assert graphs.counts["replayed"] == 0 and graphs.counts["captured"] <= 1, "the graph runs with ordinary launches"
