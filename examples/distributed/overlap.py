"""Overlap, modelled: how much of DDP's gradient all-reduce the backward pass can hide, eager and compiled.

Run it as it is on a machine with a GPU: `python examples/distributed/overlap.py`. Measured, on one GPU:
when each of DDP's gradient buckets is ready to be all-reduced, on the GPU's own clock, eager and in two
compiled variants. Modelled: how long each all-reduce would take, from a bus bandwidth NCCL's own
benchmark measured on H100 machines (sources below), and so how much of it the backward pass hides.
The process group is a fake one (its collectives move no data); the code takes a real one unchanged.
"""

# execdocs: devices=cuda

import json
import statistics
import time

import torch
import torch.distributed as dist
from torch._dynamo.testing import CompileCounterWithBackend
from torch.nn.parallel import DistributedDataParallel as DDP

import compile_tools
from distributed._fake_group import fake_group
from distributed._feedforward import SIZES, FeedForwardStack, inputs

started = time.perf_counter()
compile_tools.print_stamp()
WORLD_SIZE, BUCKET_CAP_MB, REPEATS = 2, 25, 10
VARIANTS = ("eager", "compiled, DDPOptimizer", "compiled, one graph")
MODELS = ("1.07B parameters",)  # the larger of the chapter's two models
# --8<-- [start:bandwidths]
# NCCL's all_reduce_perf "busbw" for large messages, in GB/s. An all-reduce of B bytes over n ranks
# takes B * 2(n-1)/n / busbw: that is how nccl-tests defines busbw (its doc/PERFORMANCE.md).
BUS_BANDWIDTHS = {
    # two H100 PCIe cards joined by an NVLink bridge, all_reduce_perf -g 2, 1 to 4 GiB: 115.4 to 116.3 GB/s
    # (https://github.com/NVIDIA/nccl/issues/1161)
    "2x H100 PCIe + NVLink bridge": 116,
    # H100 SXM over NVSwitch: "NCCL can get an effective NVLink bandwidth of 370GB/s", an NCCL maintainer
    # (https://github.com/NVIDIA/nccl-tests/issues/212)
    "H100 SXM, NVSwitch": 370,
}
# --8<-- [end:bandwidths]


# --8<-- [start:bucket-clock]
class BucketClock:
    """When each bucket was ready (CUDA events on the GPU's timeline) and its bytes, for one step."""

    def __init__(self, group: dist.ProcessGroup):
        self.group, self.ready, self.bytes = group, [], []


def mark_ready_and_all_reduce(clock: BucketClock, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """A DDP communication hook: marks on the GPU's timeline when the bucket is ready, then all-reduces it
    (the average, as DDP's default does) through the process group it was given, fake or real."""
    event = torch.cuda.Event(enable_timing=True)
    event.record()  # after every kernel that produced this bucket's gradients
    clock.ready.append(event)
    clock.bytes.append(bucket.buffer().nbytes)
    buffer = bucket.buffer().div_(clock.group.size())
    return dist.all_reduce(buffer, group=clock.group, async_op=True).get_future().then(lambda _: buffer)


def backward_timeline(width: int, depth: int, variant: str, group: dist.ProcessGroup) -> dict:
    """When each bucket is ready, in ms after the backward pass starts (the median of REPEATS steps),
    its bytes, and when the backward pass ends."""
    torch._dynamo.reset()
    torch._dynamo.config.optimize_ddp = variant == "compiled, DDPOptimizer"
    backend = CompileCounterWithBackend("inductor")  # Inductor, counting the graphs handed to it
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = FeedForwardStack(width, depth)
    ddp = DDP(model if variant == "eager" else torch.compile(model, backend=backend), process_group=group,
              bucket_cap_mb=BUCKET_CAP_MB, gradient_as_bucket_view=True)  # fmt: skip
    clock = BucketClock(group)
    ddp.register_comm_hook(clock, mark_ready_and_all_reduce)
    x = inputs(width, torch.device("cuda"))
    steps = []
    for repeat in range(3 + REPEATS):  # 3 to warm up: compiling, and DDP rebuilding its buckets after step 1
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = ddp(x).float().square().mean()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        clock.ready.clear(), clock.bytes.clear()
        start.record()
        loss.backward()
        end.record()
        torch.cuda.synchronize()
        ddp.zero_grad(set_to_none=True)
        if repeat >= 3:
            steps.append(([start.elapsed_time(event) for event in clock.ready], start.elapsed_time(end)))
    return {
        "ready_ms": [statistics.median(step[0][bucket] for step in steps) for bucket in range(len(clock.bytes))],
        "bytes": list(clock.bytes),
        "backward_ms": statistics.median(step[1] for step in steps),
        "graphs": len(backend.graphs),
    }


# --8<-- [end:bucket-clock]


# --8<-- [start:model-the-overlap]
def modelled(timeline: dict, bus_bandwidth_gbs: float, world_size: int) -> dict:
    """The all-reduces one after another on one stream (as DDP launches them, in bucket order), each from
    when its bucket is ready and the previous one is done; exposed is what runs past the backward pass."""
    free_at, spans = 0.0, []
    for ready, size in zip(timeline["ready_ms"], timeline["bytes"], strict=True):
        start = max(ready, free_at)
        took = size * 2 * (world_size - 1) / world_size / (bus_bandwidth_gbs * 1e9) * 1e3
        spans.append((start, took))
        free_at = start + took
    exposed = max(0.0, free_at - timeline["backward_ms"])
    return {"spans": spans, "comm_ms": sum(took for _, took in spans), "exposed_ms": exposed,
            "step_ms": timeline["backward_ms"] + exposed}  # fmt: skip


# --8<-- [end:model-the-overlap]

group = fake_group(WORLD_SIZE)
timelines = {
    size: {variant: backward_timeline(*SIZES[size], variant, group) for variant in VARIANTS} for size in MODELS
}

# --8<-- [start:buckets]
for size, variants in timelines.items():
    eager = variants["eager"]
    print(f"{size}, eager: {len(eager['bytes'])} buckets; backward {eager['backward_ms']:.2f} ms on the GPU")
    previous = 0.0
    for bucket, (ready, size_bytes) in enumerate(zip(eager["ready_ms"], eager["bytes"], strict=True)):
        print(f"  bucket {bucket}: {size_bytes / 1e6:6.1f} MB, ready at {ready:6.2f} ms "
              f"({ready - previous:5.2f} ms of backward since the bucket before)")  # fmt: skip
        previous = ready
# --8<-- [end:buckets]

# --8<-- [start:exposed]
print(f"modelled for {WORLD_SIZE} ranks; backward and ready times measured on this GPU")
results = {}
for size, variants in timelines.items():
    print(size)
    for variant, timeline in variants.items():
        first_ready = timeline["ready_ms"][0] / timeline["backward_ms"]
        print(f"  {variant:<23} {timeline['graphs']:>2} graphs, backward {timeline['backward_ms']:6.2f} ms, "
              f"first bucket ready at {first_ready:4.0%} of it")  # fmt: skip
        for machine, bandwidth in BUS_BANDWIDTHS.items():
            model = results[size, variant, machine] = modelled(timeline, bandwidth, WORLD_SIZE)
            print(f"    {machine:<28} all-reduce {model['comm_ms']:6.2f} ms, exposed {model['exposed_ms']:6.2f} ms, "
                  f"backward + exposed {model['step_ms']:6.2f} ms")  # fmt: skip
# --8<-- [end:exposed]
for size, variants in timelines.items():
    assert variants["compiled, one graph"]["graphs"] == 1
    assert variants["compiled, DDPOptimizer"]["graphs"] > 1, "split at the bucket boundaries"
    one_graph, eager = variants["compiled, one graph"], variants["eager"]
    assert one_graph["ready_ms"][0] > 0.75 * one_graph["backward_ms"], "one graph: no bucket ready before it has run"
    assert one_graph["ready_ms"][0] > 10 * eager["ready_ms"][0]
    for variant in ("eager", "compiled, DDPOptimizer"):
        assert variants[variant]["ready_ms"][0] < 0.5 * variants[variant]["backward_ms"]
    sizes = eager["bytes"]
    assert len(sizes) == 17 and sum(size > BUCKET_CAP_MB * 1e6 for size in sizes) == 16, "a weight matrix a bucket"
    assert variants["compiled, DDPOptimizer"]["graphs"] == len(sizes), "one graph per bucket"
    for machine in BUS_BANDWIDTHS:
        split, whole = results[size, "compiled, DDPOptimizer", machine], results[size, "compiled, one graph", machine]
        assert split["exposed_ms"] < whole["exposed_ms"], "the split hides communication"
        assert abs(split["step_ms"] / results[size, "eager", machine]["step_ms"] - 1) < 0.1, "as eager does"
    slow = next(iter(BUS_BANDWIDTHS))
    assert (
        results[size, "compiled, one graph", slow]["step_ms"]
        > 1.5 * results[size, "compiled, DDPOptimizer", slow]["step_ms"]
    )


# --8<-- [start:fsdp-traffic]
def fsdp_traffic_ms(parameters: int, world_size: int, bus_bandwidth_gbs: float) -> dict:
    """FSDP2's collectives per step, modelled: each block's bfloat16 weights all-gathered twice (forward,
    backward) and its float32 gradients reduce-scattered once. For both, nccl-tests defines busbw so that
    a collective over a full size of B bytes takes B * (n-1)/n / busbw."""
    share = (world_size - 1) / world_size
    through_each_rank = {"all-gather": 2 * parameters * 2 * share, "reduce-scatter": parameters * 4 * share}
    return {kind: size / (bus_bandwidth_gbs * 1e9) * 1e3 for kind, size in through_each_rank.items()}


width, depth = SIZES[MODELS[0]]
for world_size, machine in ((2, "2x H100 PCIe + NVLink bridge"), (8, "H100 SXM, NVSwitch")):
    traffic = fsdp_traffic_ms(depth * (8 * width**2 + 7 * width), world_size, BUS_BANDWIDTHS[machine])
    print(f"FSDP2, {MODELS[0]}, {world_size} ranks, {machine}: all-gathers {traffic['all-gather']:.1f} ms, "
          f"reduce-scatters {traffic['reduce-scatter']:.1f} ms per step")  # fmt: skip
# --8<-- [end:fsdp-traffic]

# --8<-- [start:plot-data]
slow = next(iter(BUS_BANDWIDTHS))
print(json.dumps({"machine": slow, "bus_bandwidth_gbs": BUS_BANDWIDTHS[slow], "sizes": {
    size: {variant: {"backward_ms": timeline["backward_ms"], "ready_ms": timeline["ready_ms"],
                     "spans": results[size, variant, slow]["spans"]} for variant, timeline in variants.items()}
    for size, variants in timelines.items()}}))  # fmt: skip
# --8<-- [end:plot-data]

# --8<-- [start:took]
print(f"this example ran in {time.perf_counter() - started:.0f} s")
# --8<-- [end:took]
