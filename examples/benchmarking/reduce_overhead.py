"""mode="reduce-overhead" on real models: ResNet-50 and MobileNetV2, inference and a training step, against
mode="default": speed, GPU memory, a new CUDA graph for each new shape, and the training loop's
cudagraph_mark_step_begin.

Run it as it is: `python examples/benchmarking/reduce_overhead.py`. It needs a GPU and takes a few
minutes there, most of it compiling.
"""
# execdocs: devices=cuda

from collections import Counter

import torch

import compile_tools
from benchmarking import _harness, _memory, _profile_diff, _zoo
from benchmarking._cuda_graphs import GraphCounter

device = compile_tools.device()
MODELS = ["ResNet-50", "MobileNetV2"]  # 32 images of 224 x 224, bf16 autocast


# --8<-- [start:measure]
def steps(name: str, train: bool) -> tuple[dict, dict]:
    """One fresh model per mode (same seed, same weights), each with its step; and the GPU memory each
    took, from building it through its first four calls: the allocator's peak reservation (what
    nvidia-smi sees) above what the process held before, in GiB."""
    built, memory = {}, {}
    for mode in ("default", "reduce-overhead"):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        before = torch.cuda.memory_reserved()
        torch.cuda.reset_peak_memory_stats()
        model = _zoo.build(name, device).train(train)
        inputs = _zoo.input_maker(name, model, device, train=train)()
        module = torch.compile(model, mode=mode)
        if train:  # cudagraph_mark_step_begin at each step: see the last section
            step = _memory.TrainingStep(model, module, inputs, mark_step_begin=mode == "reduce-overhead")
        else:
            step = _profile_diff.inference_step(module, inputs)
        for _ in range(4):  # compile, then (reduce-overhead) warm up, capture and replay
            step()
        torch.cuda.synchronize()
        memory[mode] = (torch.cuda.max_memory_reserved() - before) / _memory.GIB
        built[mode] = (model, step)
    return built, memory


results = {}
for name in MODELS:
    for train in (False, True):
        built, memory = steps(name, train)
        pool = _memory.cuda_graph_pool_gib()
        comparison = _profile_diff.compare(built["default"][1], built["reduce-overhead"][1])
        results[name, train] = {"memory": memory, "pool": pool, **comparison}
        del built, comparison
        _harness.release()
# --8<-- [end:measure]


# --8<-- [start:table]
print(f"{'':<24} {'reduce-overhead':>18} {'wall ms':>15} {'host ms':>15} {'GPU busy ms':>15} {'peak GiB':>15}")
print(f"{'':<24} {'over default':>18} {'(default / RO)':>15} {'(default / RO)':>15} {'(default / RO)':>15} "
      f"{'(default / RO)':>15}")  # fmt: skip
for (name, train), r in results.items():
    low, high = r["speedup_range"]
    default, graphs = r["eager"], r["compiled"]  # compare() calls its first step "eager"
    pairs = [(default[key], graphs[key]) for key in ("ms", "host_ms", "busy_ms")]
    pairs.append((r["memory"]["default"], r["memory"]["reduce-overhead"]))
    cells = " ".join(f"{a:7.2f} /{b:6.2f}" for a, b in pairs)
    label = f"{name}, {'training' if train else 'inference'}"
    speedup = f"{r['speedup']:.2f}x ({low:.2f}-{high:.2f})"
    print(f"{label:<24} {speedup:>18} {cells}")
print("speedup: median of 21 interleaved pairs of wall-clock times (10th-90th percentile)")
# --8<-- [end:table]
for (name, _), r in results.items():
    assert r["compiled"]["busy_ms"] <= 1.05 * r["eager"]["busy_ms"], f"{name}: the same kernels, replayed"
    assert r["compiled"]["host_ms"] < 0.5 * r["eager"]["host_ms"], f"{name}: one graph launch, not one per kernel"
    assert r["pool"] > 0, "the graphs' memory pool"
assert results["MobileNetV2", False]["speedup"] > 1.2, "MobileNetV2 inference: launch-bound"


# --8<-- [start:new-shapes]
model = _zoo.build("ResNet-50", device).eval()
reduce_overhead = torch.compile(model, mode="reduce-overhead")
images = _zoo.input_maker("ResNet-50", model, device, train=False)()["pixel_values"]
per_call = []
with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16), GraphCounter() as graphs:
    for batch in (32, 32, 32, 16, 16, 16, 8, 8, 8, 32, 32, 32):
        before = Counter(graphs.counts)
        frames_before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
        reduce_overhead(pixel_values=images[:batch])
        new = graphs.counts - before
        compiled = torch._dynamo.utils.counters["stats"]["unique_graphs"] - frames_before
        per_call.append((batch, new["captured"], new["replayed"], compiled))
        print(f"batch {batch:2d}: {compiled} new Dynamo graph, {new['captured']} CUDA graph captured, "
              f"{new['replayed']} replayed")  # fmt: skip
# --8<-- [end:new-shapes]
groups = [per_call[start : start + 3] for start in range(0, len(per_call), 3)]  # three calls per size
assert [compiled for _, _, _, compiled in per_call] == [1, 0, 0, 1] + [0] * 8, "one recompile, to a dynamic batch"
# (captured, replayed): after the recompile every size, 32 again too, warms up, captures, then replays
assert all([(c, r) for _, c, r, _ in group] == [(0, 0), (1, 1), (0, 1)] for group in groups[1:]), per_call
del model, reduce_overhead
_harness.release()


# --8<-- [start:mark-step]
def forward_calls(mark_step_begin: bool, calls: int = 6) -> tuple[list[tuple[int, int]], float]:
    """Forward calls with autograd on and no backward (an evaluation under grad): (captured, replayed) per
    call, and the GiB its CUDA-graph pool grew by."""
    torch._dynamo.reset()
    pool_before = _memory.cuda_graph_pool_gib()
    model = _zoo.build("ResNet-50", device).train()
    compiled = torch.compile(model, mode="reduce-overhead")
    images = _zoo.input_maker("ResNet-50", model, device, train=True)()["pixel_values"]
    per_call = []
    with GraphCounter() as graphs:
        for _ in range(calls):
            if mark_step_begin:
                torch.compiler.cudagraph_mark_step_begin()
            before = Counter(graphs.counts)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                compiled(pixel_values=images)
            new = graphs.counts - before
            per_call.append((new["captured"], new["replayed"]))
    pool = _memory.cuda_graph_pool_gib() - pool_before
    del model, compiled
    _harness.release()
    return per_call, pool


marked = {}
for mark_step_begin in (False, True):
    marked[mark_step_begin] = per_call, pool = forward_calls(mark_step_begin)
    print(f"cudagraph_mark_step_begin() before each call: {mark_step_begin}")
    print(f"  (captured, replayed) per call: {per_call}; CUDA-graph pool {pool:.2f} GiB")
# --8<-- [end:mark-step]
(unmarked_calls, unmarked_pool), (marked_calls, marked_pool) = marked[False], marked[True]
assert sum(captured for captured, _ in unmarked_calls[2:]) >= 1, "without the mark, later calls capture new graphs"
assert all(call == (0, 1) for call in marked_calls[2:]), "with it, every call from the third on only replays"
assert abs(unmarked_pool - marked_pool) < 0.05, "the new graphs share the tree's one pool: it does not grow"
