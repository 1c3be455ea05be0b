"""Overlap, measured: how much of DDP's gradient all-reduce the backward pass hides on two GPUs, eager and
compiled, against a model of it.

Run it as it is on a machine with two GPUs: `python examples/distributed/overlap.py`. One process per GPU (this
same file, started with the argument `rank`), over NCCL. Each variant's step is timed with DDP's all-reduces and
without them (DDP's `no_sync()`, on the same ranks), so the cost of communication is a difference measured on
the GPUs. The model predicts that difference from when each bucket is ready and how long its all-reduce takes alone.
"""

# execdocs: devices=cuda, gpus=2

import gc
import json
import statistics
import sys
import time
from contextlib import nullcontext

import torch
import torch.distributed as dist
from torch._dynamo.testing import CompileCounterWithBackend
from torch.nn.parallel import DistributedDataParallel as DDP

from distributed import _ranks, _steps_on_ranks
from distributed._feedforward import SIZES, FeedForwardStack, inputs

started = time.perf_counter()
WORLD_SIZE, BUCKET_CAP_MB = 2, 25
MODEL = "1.07B parameters"  # the larger of the chapter's two models
ROUNDS, STEPS = 8, 2  # timed rounds; in each, STEPS steps with the all-reduces and STEPS without, order alternating
VARIANTS = (
    "eager", "compiled, DDPOptimizer", "compiled, one graph", "compiled autograd", "compiled autograd, reordered"
)  # fmt: skip
SIDES = ("all_reduce", "no_sync")  # each step with DDP's all-reduces, and under no_sync(): without communication
HOOKED = VARIANTS[:3]  # the variants whose all-reduces DDP's reducer starts, through the hook below
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
    for side in ("all_reduce", "all_reduce", "all_reduce", "no_sync", "no_sync"):  # compiles; DDP rebuilds buckets
        _steps_on_ranks.timed(sides[side])
    result = {"rounds": _steps_on_ranks.paired(sides, ROUNDS, STEPS), "graphs": len(backend.graphs)}
    if variant in HOOKED:
        result.update(hooked_timeline(ddp, step, clock))
        for size in clock.bytes:
            if size not in alone:
                alone[size] = all_reduce_alone_ms(size)
        result["alone_ms"] = [alone[size] for size in clock.bytes]
    with_all_reduce, without = (_steps_on_ranks.kernels(sides[side]) for side in SIDES)
    result["profile"] = {
        "compute_ms": _steps_on_ranks.lane_ms(with_all_reduce, "compute"),
        "nccl_ms": _steps_on_ranks.lane_ms(with_all_reduce, "nccl"),
        "nccl_kernels": sum(kind == "nccl" for kind, _, _ in with_all_reduce),
        "no_sync_compute_ms": _steps_on_ranks.lane_ms(without, "compute"),
        "lanes": {lane: _steps_on_ranks.lane_bars(with_all_reduce, lane) for lane in ("compute", "nccl")},
    }
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
def modelled(timeline: dict) -> dict:
    """The all-reduces one after another on one stream (as DDP launches them, in bucket order), each from when
    its bucket is ready and the previous one is done, each taking what it took alone on this link; exposed is
    what runs past the backward pass."""
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

# --8<-- [start:model-against-measurement]
print("exposed communication, ms: the model's prediction against the measurement on rank 0")
print(f"{'':29}{'first bucket ready':>19} {'all-reduces alone':>18} {'model':>7} {'measured':>9} {'error':>7}")
model = {}
for variant in HOOKED:
    timeline = results[variant]
    model[variant] = modelled(timeline)
    first_ready = timeline["ready_ms"][0] / timeline["backward_ms"]
    measured = statistics.median(exposed[variant])
    print(f"{variant:<29}{first_ready:>19.0%} {model[variant]['comm_ms']:>18.2f} {model[variant]['exposed_ms']:>7.2f} "
          f"{measured:>9.2f} {model[variant]['exposed_ms'] - measured:>+7.2f}")  # fmt: skip
for variant in VARIANTS[3:]:
    print(f"{variant:<29}{'no DDP hook: not modelled':>35} {'':>7} {statistics.median(exposed[variant]):>9.2f}")
# --8<-- [end:model-against-measurement]

# --8<-- [start:kernels-beside]
print("one profiled step of each kind on rank 0: GPU ms of the compute kernels and of NCCL's")
print(f"{'':29}{'compute, no_sync()':>19} {'compute, all-reduce':>20} {'NCCL kernels':>13} {'NCCL ms':>8} "
      f"{'all-reduces alone':>18}")  # fmt: skip
for variant, result in results.items():
    profile = result["profile"]
    alone = f"{sum(result['alone_ms']):.2f}" if "alone_ms" in result else "-"
    print(f"{variant:<29}{profile['no_sync_compute_ms']:>19.2f} {profile['compute_ms']:>20.2f} "
          f"{profile['nccl_kernels']:>13} {profile['nccl_ms']:>8.2f} {alone:>18}")  # fmt: skip
# --8<-- [end:kernels-beside]

# --8<-- [start:plot-data]
print(json.dumps({variant: [rank[variant]["profile"]["lanes"] for rank in ranks] for variant in VARIANTS}))
# --8<-- [end:plot-data]

# --8<-- [start:took]
print(f"this example ran in {time.perf_counter() - started:.0f} s")
# --8<-- [end:took]
