"""Overlap, measured: how much of DDP's gradient all-reduce the backward pass hides on real GPUs, eager and
compiled, against a model of it.

Run it as it is on a machine with two GPUs: `python examples/distributed/overlap.py`, or with `RANKS=4` on one
with four. One process per GPU (this same file, started with the argument `rank`), over NCCL. Each variant's
step is timed with DDP's all-reduces and without them (DDP's `no_sync()`, on the same ranks), so the cost of
communication is a difference measured on the GPUs. The model predicts that difference from when each bucket is
ready and how long its all-reduce takes alone.
"""

# execdocs: devices=cuda, gpus=2,4

import gc
import json
import os
import re
import statistics
import sys
import time
from collections import Counter
from contextlib import nullcontext

import torch
import torch.distributed as dist
from torch._dynamo.testing import CompileCounterWithBackend
from torch.nn.parallel import DistributedDataParallel as DDP

import compile_tools
from distributed import _collectives_in_code, _ranks, _steps_on_ranks
from distributed._feedforward import SIZES, FeedForwardStack, inputs

started = time.perf_counter()
WORLD_SIZE, BUCKET_CAP_MB = int(os.environ.get("RANKS", "2")), 25
MODEL = "1.07B parameters"  # the larger of the chapter's two models
ROUNDS, STEPS = 8, 2  # timed rounds; in each, STEPS steps with the all-reduces and STEPS without, order alternating
VARIANTS = (
    "eager", "compiled, DDPOptimizer", "compiled, one graph", "compiled autograd", "compiled autograd, reordered"
)  # fmt: skip
SIDES = ("all_reduce", "no_sync")  # each step with DDP's all-reduces, and under no_sync(): without communication
HOOKED = VARIANTS[:3]  # the variants whose all-reduces DDP's reducer starts, through the hook below
# Matrix products as cuBLAS and CUTLASS name their kernels on Hopper; a scaling by a number (a bucket divided by
# the ranks runs as a multiplication by 1/n in ATen, and as a fused division in Inductor's kernels)
GEMM = re.compile(r"gemm|nvjet|xmma|cutlass", re.IGNORECASE)
SCALING = re.compile(r"DivFunctor|MulFunctor|fused_div")
KINDS = ("matrix products", "scalings", "other compute", "NCCL")
# The reordering passes of Inductor's scheduler that move each wait for a collective later, and each collective earlier
REORDER_PASSES = ["sink_waits", "raise_comms", "reorder_compute_for_overlap"]


# --8<-- [start:bucket-clock]
class BucketClock:
    """When each bucket was ready (CUDA events on the GPU's timeline) and its bytes, for one step; all-reduces
    it unless told not to (then the step has DDP's hooks and no communication: the model's input)."""

    def __init__(self):
        self.communicate, self.ready, self.bytes, self.backward_start = True, [], [], None

    def mark_backward_start(self):
        self.ready.clear(), self.bytes.clear()
        self.backward_start = torch.cuda.Event(enable_timing=True)
        self.backward_start.record()


def mark_ready_and_all_reduce(clock: BucketClock, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """A DDP communication hook: marks on the GPU's timeline when the bucket is ready, then all-reduces it
    (the average, as DDP's default hook does)."""
    event = torch.cuda.Event(enable_timing=True)
    event.record()  # after every kernel that produced this bucket's gradients
    clock.ready.append(event)
    clock.bytes.append(bucket.buffer().nbytes)
    buffer = bucket.buffer()
    if not clock.communicate:
        done = torch.futures.Future()
        done.set_result(buffer)
        return done
    buffer.div_(dist.get_world_size())
    return dist.all_reduce(buffer, async_op=True).get_future().then(lambda _: buffer)


# --8<-- [end:bucket-clock]


# --8<-- [start:variants]
def configure(variant: str) -> None:
    torch._dynamo.reset()
    compiled_autograd = variant.startswith("compiled autograd")
    # one graph per bucket; one graph for all; or DDP's Python reducer, whose all-reduces compiled autograd traces
    torch._dynamo.config.optimize_ddp = {"compiled, DDPOptimizer": True, "compiled, one graph": False}.get(
        variant, "python_reducer" if compiled_autograd else True
    )
    torch._dynamo.config.compiled_autograd = compiled_autograd
    torch._inductor.config.reorder_for_compute_comm_overlap = variant == "compiled autograd, reordered"
    torch._inductor.config.reorder_for_compute_comm_overlap_passes = REORDER_PASSES


def forward_backward(ddp, x, clock=None):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = ddp(x).float().square().mean()
    if clock is not None:
        clock.mark_backward_start()
    loss.backward()


def build(variant: str, model: torch.nn.Module, x: torch.Tensor, clock: BucketClock, backend):
    """DDP around the model as the variant wants it, and the step to call: (ddp, step())."""
    if variant.startswith("compiled autograd"):  # the whole step compiled; its backward pass too
        ddp = DDP(model, bucket_cap_mb=BUCKET_CAP_MB, gradient_as_bucket_view=True)
        compiled = torch.compile(forward_backward, backend=backend)
        return ddp, lambda: compiled(ddp, x)
    inner = model if variant == "eager" else torch.compile(model, backend=backend)
    ddp = DDP(inner, bucket_cap_mb=BUCKET_CAP_MB, gradient_as_bucket_view=True)
    ddp.register_comm_hook(clock, mark_ready_and_all_reduce)
    return ddp, lambda: forward_backward(ddp, x, clock)


# --8<-- [end:variants]


def stepper(ddp, step, all_reduce: bool):
    """One step with DDP's all-reduces, or under no_sync() (no communication); the gradients are dropped after."""

    def one_step():
        with nullcontext() if all_reduce else ddp.no_sync():
            step()  # DDP makes the stream wait for every bucket's all-reduce before the backward pass returns
        ddp.zero_grad(set_to_none=True)

    return one_step


def kind_of(lane: str, name: str) -> str:
    """What a GPU activity of the step is: NCCL's, a matrix product, a scaling (DDP's hook divides each bucket by
    the number of ranks before its all-reduce), or other compute (elementwise, norms, copies)."""
    if lane == "nccl":
        return "NCCL"
    if GEMM.search(name):
        return "matrix products"
    return "scalings" if SCALING.search(name) else "other compute"


def all_reduce_alone_ms(nbytes: int) -> float:
    """The GPU ms of one all-reduce of `nbytes` with nothing else running: the median of 10, after 3 to warm up."""
    buffer = torch.ones(nbytes // 4, device="cuda")
    times = []
    for repeat in range(13):
        dist.barrier()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dist.all_reduce(buffer)
        end.record()
        end.synchronize()
        if repeat >= 3:
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def measure(variant: str, alone: dict) -> dict:
    """One variant on this rank: its step timed in rounds with and without all-reduces, its buckets' ready
    times (hooked variants), and one profiled step of each kind."""
    configure(variant)
    backend = CompileCounterWithBackend("inductor")  # Inductor, counting the graphs handed to it
    torch.manual_seed(0)
    width, depth = SIZES[MODEL]
    with torch.device("cuda"):
        model = FeedForwardStack(width, depth)
    clock = BucketClock()
    ddp, step = build(variant, model, inputs(width, torch.device("cuda")), clock, backend)
    sides = {side: stepper(ddp, step, side == "all_reduce") for side in SIDES}
    with compile_tools.captured_logs(output_code=True) as code:
        for side in ("all_reduce", "all_reduce", "all_reduce", "no_sync", "no_sync"):  # compiles; DDP rebuilds buckets
            _steps_on_ranks.timed(sides[side])
    result = {"rounds": _steps_on_ranks.paired(sides, ROUNDS, STEPS), "graphs": len(backend.graphs)}
    backward_code = _collectives_in_code.with_all_reduces(code.getvalue())  # compiled autograd's backward graph
    if backward_code:
        result["collectives"] = _collectives_in_code.collectives(backward_code[0])
    if variant in HOOKED:
        result.update(hooked_timeline(ddp, step, clock))
        for size in clock.bytes:
            if size not in alone:
                alone[size] = all_reduce_alone_ms(size)
        result["alone_ms"] = [alone[size] for size in clock.bytes]
    profiles = {side: _steps_on_ranks.kernels(sides[side]) for side in SIDES}
    result["profile"] = {side: _steps_on_ranks.grouped_ms(spans, kind_of) for side, spans in profiles.items()}
    result["launches"] = {side: dict(Counter(kind_of(lane, name) for lane, name, *_ in spans))
                          for side, spans in profiles.items()}  # fmt: skip
    result["nccl_kernels"] = sum(lane == "nccl" for lane, *_ in profiles["all_reduce"])
    # the timeline's two lanes: NCCL's kernels, and everything else the step runs (its copies too)
    two_lanes = [("nccl" if lane == "nccl" else "compute", *rest) for lane, *rest in profiles["all_reduce"]]
    result["lanes"] = {lane: _steps_on_ranks.lane_bars(two_lanes, lane) for lane in ("compute", "nccl")}
    del ddp, step, sides, model, clock
    gc.collect()
    torch.cuda.empty_cache()
    return result


def hooked_timeline(ddp, step, clock: BucketClock, steps: int = 5) -> dict:
    """The model's input: the same step with DDP's hooks and no communication. When each bucket was ready and
    when the backward pass ended, in ms from its start (medians of `steps` steps), and each bucket's bytes."""
    clock.communicate = False
    ready, backward = [], []
    for _ in range(steps):
        dist.barrier()
        torch.cuda.synchronize()
        step()
        end = torch.cuda.Event(enable_timing=True)
        end.record()
        end.synchronize()
        ready.append([clock.backward_start.elapsed_time(event) for event in clock.ready])
        backward.append(clock.backward_start.elapsed_time(end))
        ddp.zero_grad(set_to_none=True)
    clock.communicate = True
    return {"ready_ms": [statistics.median(times) for times in zip(*ready, strict=True)], "bytes": list(clock.bytes),
            "backward_ms": statistics.median(backward)}  # fmt: skip


def work(rank: int, world_size: int) -> dict:
    alone = {}  # bytes -> ms of one all-reduce of that size alone, measured once
    return {variant: measure(variant, alone) for variant in VARIANTS}


if _ranks.is_rank_process():
    _ranks.rank_main(work)
    sys.exit(0)


# --8<-- [start:model-the-overlap]
def modelled(timeline: dict, waits_at_once: bool = False) -> dict:
    """The all-reduces one after another on one stream (as DDP launches them, in bucket order), each from when
    its bucket is ready and the previous one is done, each taking what it took alone on this link; exposed is
    what runs past the backward pass. Where the code waits for each all-reduce as soon as it has issued it,
    the backward pass stops for each one: all of it is exposed."""
    if waits_at_once:
        return {"comm_ms": sum(timeline["alone_ms"]), "exposed_ms": sum(timeline["alone_ms"])}
    free_at, spans = 0.0, []
    for ready, took in zip(timeline["ready_ms"], timeline["alone_ms"], strict=True):
        start = max(ready, free_at)
        spans.append((start, took))
        free_at = start + took
    exposed = max(0.0, free_at - timeline["backward_ms"])
    return {"spans": spans, "comm_ms": sum(timeline["alone_ms"]), "exposed_ms": exposed}


# --8<-- [end:model-the-overlap]


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):6.2f} ({min(values):.2f}-{max(values):.2f})"


ranks = _ranks.run_ranks(__file__, WORLD_SIZE, backend="nccl", timeout_s=600)
results = ranks[0]

# --8<-- [start:buckets]
eager = results["eager"]
print(f"{MODEL}, eager, on rank 0: {len(eager['bytes'])} buckets; backward {eager['backward_ms']:.2f} ms on the GPU "
      "with no communication")  # fmt: skip
previous = 0.0
for bucket, (ready, size, alone) in enumerate(zip(eager["ready_ms"], eager["bytes"], eager["alone_ms"], strict=True)):
    print(f"  bucket {bucket:>2}: {size / 1e6:6.1f} MB, ready at {ready:6.2f} ms ({ready - previous:5.2f} ms after the "
          f"bucket before); its all-reduce alone {alone:.2f} ms")  # fmt: skip
    previous = ready
# --8<-- [end:buckets]

# --8<-- [start:measured]
print(f"{WORLD_SIZE} ranks over NCCL, bucket_cap_mb={BUCKET_CAP_MB}, bfloat16 autocast; GPU ms per forward+backward "
      f"step on rank 0, median of {ROUNDS} rounds (min-max)")  # fmt: skip
print(f"{'':29}{'graphs':>6} {'all-reduce':>21} {'no_sync()':>21} {'exposed communication':>23}")
exposed, host = {}, {}
for variant, result in results.items():
    with_all_reduce, without = (_steps_on_ranks.round_medians(result["rounds"][side], 1) for side in SIDES)
    host[variant] = statistics.median(_steps_on_ranks.round_medians(result["rounds"]["all_reduce"], 0))
    exposed[variant] = [a - b for a, b in zip(with_all_reduce, without, strict=True)]
    print(f"{variant:<29}{result['graphs']:>6} {spread(with_all_reduce):>21} {spread(without):>21} "
          f"{spread(exposed[variant]):>23}")  # fmt: skip
print("host ms to enqueue a step with all-reduces: " + ", ".join(f"{v} {ms:.1f}" for v, ms in host.items()))
# --8<-- [end:measured]

# --8<-- [start:waits]
for variant in VARIANTS[3:]:
    found = results[variant]["collectives"]
    print(f"{variant}: {found['all_reduces']} all-reduces in Inductor's code of the backward graph; kernels it runs "
          f"between each and its wait: {found['kernels_before_wait']}")  # fmt: skip
# --8<-- [end:waits]
plain, reordered = (results[variant]["collectives"]["kernels_before_wait"] for variant in VARIANTS[3:])
assert sum(plain) < sum(reordered), "the reordering passes move the waits later"

# --8<-- [start:kernels-beside]
print("one profiled step of each kind on rank 0: GPU ms by kind of kernel, under no_sync() | with the all-reduces")
print(f"{'':29}" + "".join(f"{kind:>19}" for kind in KINDS) + f"{'NCCL kernels':>14}")
slowdown = {}  # variant -> how many more ms the step's own kernels took with the all-reduces beside them
for variant, result in results.items():
    without, beside = result["profile"]["no_sync"], result["profile"]["all_reduce"]
    slowdown[variant] = sum(beside.get(kind, 0) - without.get(kind, 0) for kind in KINDS[:3])
    cells = [f"{without.get(kind, 0):6.2f} | {beside.get(kind, 0):<6.2f}" for kind in KINDS]
    print(f"{variant:<29}" + "".join(f"{cell:>19}" for cell in cells) + f"{result['nccl_kernels']:>14}")
print("the same step's kernels launched, by kind, under no_sync() | with the all-reduces")
for variant, result in results.items():
    without, beside = result["launches"]["no_sync"], result["launches"]["all_reduce"]
    cells = [f"{without.get(kind, 0):6d} | {beside.get(kind, 0):<6d}" for kind in KINDS]
    print(f"{variant:<29}" + "".join(f"{cell:>19}" for cell in cells))
# --8<-- [end:kernels-beside]

# --8<-- [start:model-against-measurement]
print("exposed communication, ms on rank 0: the model's prediction, and the model plus the step's own kernels'")
print("extra ms with the all-reduces beside them (the profiles above), against the measurement")
print(f"{'':29}{'first ready':>12}{'all-reduces alone':>18}{'model':>7}{'+ slowdown':>11}{'measured':>9}{'error':>7}")
model = {}
for variant in HOOKED:
    timeline = results[variant]
    model[variant] = modelled(timeline)
    first_ready = timeline["ready_ms"][0] / timeline["backward_ms"]
    predicted, measured = model[variant]["exposed_ms"], statistics.median(exposed[variant])
    print(f"{variant:<29}{first_ready:>12.0%}{model[variant]['comm_ms']:>18.2f}{predicted:>7.2f}"
          f"{predicted + slowdown[variant]:>11.2f}{measured:>9.2f}{predicted - measured:>+7.2f}")  # fmt: skip
for variant in VARIANTS[3:]:  # no DDP hook: the same gradients, in the same order, as eager's buckets
    waits_at_once = not any(results[variant]["collectives"]["kernels_before_wait"])
    model[variant] = modelled(eager, waits_at_once)
    predicted, measured = model[variant]["exposed_ms"], statistics.median(exposed[variant])
    print(f"{variant:<29}{'as eager':>12}{model[variant]['comm_ms']:>18.2f}{predicted:>7.2f}"
          f"{predicted + slowdown[variant]:>11.2f}{measured:>9.2f}{predicted - measured:>+7.2f}")  # fmt: skip
# --8<-- [end:model-against-measurement]
buckets = eager["bytes"]
assert len(buckets) == 17 and sum(size > BUCKET_CAP_MB * 1e6 for size in buckets) == 16, "a weight matrix a bucket"
assert results["compiled, DDPOptimizer"]["graphs"] == len(buckets), "one graph per bucket"
assert results["compiled, one graph"]["graphs"] == 1
for variant in ("eager", "compiled, DDPOptimizer"):
    assert results[variant]["ready_ms"][0] < 0.1 * results[variant]["backward_ms"], "the first bucket: early"
    assert statistics.median(exposed[variant]) > model[variant]["exposed_ms"] + 4, "the model misses most of it"
    assert slowdown[variant] > 0.1 * sum(results[variant]["profile"]["no_sync"].get(kind, 0) for kind in KINDS[:3])
    launches = results[variant]["launches"]
    assert launches["no_sync"]["matrix products"] == launches["all_reduce"]["matrix products"], "the same products"
whole = results["compiled, one graph"]
assert whole["ready_ms"][0] > 0.75 * whole["backward_ms"], "one graph: no bucket ready before it has run"
median = {variant: statistics.median(times) for variant, times in exposed.items()}
assert median["compiled, one graph"] > 1.3 * median["compiled, DDPOptimizer"], "the split hides communication"
assert median["compiled autograd, reordered"] < 0.75 * median["compiled autograd"], "reordering hides some"
for variant in VARIANTS[3:]:
    assert results[variant]["collectives"]["all_reduces"] == len(buckets), "as many all-reduces as DDP's buckets"
assert abs(model["compiled autograd"]["exposed_ms"] / median["compiled autograd"] - 1) < 0.2, "waiting at once: all"

# --8<-- [start:plot-data]
print(json.dumps({variant: [rank[variant]["lanes"] for rank in ranks] for variant in VARIANTS}))
# --8<-- [end:plot-data]

# --8<-- [start:took]
print(f"this example ran in {time.perf_counter() - started:.0f} s")
# --8<-- [end:took]
