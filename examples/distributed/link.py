"""The link between GPUs, measured: NCCL's bus bandwidth for the collectives of data-parallel training, and what
a collective and a matrix product running side by side cost each other.

Run it as it is on a machine with two GPUs: `python examples/distributed/link.py`, or with `RANKS=4` on one with
four. One process per GPU (this same file, started with the argument `rank`), over NCCL.
"""

# execdocs: devices=cuda, gpus=2,4

import json
import os
import re
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import torch
import torch.distributed as dist

from distributed import _ranks

started = time.perf_counter()
WORLD_SIZE = int(os.environ.get("RANKS", "2"))  # one rank per GPU
SIZES_MIB = (1, 4, 16, 64, 256, 1024)
ROUNDS = 5  # each a block of back-to-back calls; the median round is kept, the spread shown
# What the Overlap page used before this machine was measured: NCCL's all_reduce_perf "busbw", GB/s
PUBLISHED_GBS = {
    # two H100 PCIe cards joined by an NVLink bridge, -g 2, 1 to 4 GiB (https://github.com/NVIDIA/nccl/issues/1161)
    "2x H100 PCIe + NVLink bridge": 116,
    # H100 SXM over NVSwitch, an NCCL maintainer (https://github.com/NVIDIA/nccl-tests/issues/212)
    "H100 SXM, NVSwitch": 370,
}

# --8<-- [start:bus-bandwidth]
# nccl-tests' definition (its doc/PERFORMANCE.md): a collective over a full size of B bytes on n ranks passes
# 2(n-1)/n * B through each rank for an all-reduce and (n-1)/n * B for an all-gather or a reduce-scatter;
# the bus bandwidth is that over the time, comparable with the link's own speed whatever n is.
BUS_FACTOR = {"all-reduce": lambda n: 2 * (n - 1) / n, "all-gather": lambda n: (n - 1) / n,
              "reduce-scatter": lambda n: (n - 1) / n}  # fmt: skip


def collective(kind: str, full: torch.Tensor, world_size: int):
    """One call of the collective over `full` (this rank's shard is 1/world_size of it)."""
    shard = torch.empty(full.numel() // world_size, dtype=full.dtype, device=full.device)
    if kind == "all-reduce":
        return lambda: dist.all_reduce(full)
    if kind == "all-gather":
        return lambda: dist.all_gather_into_tensor(full, shard)
    return lambda: dist.reduce_scatter_tensor(shard, full)


def per_call_ms(call, calls: int) -> list[float]:
    """ms per call of `calls` back-to-back calls, on the GPU's clock (CUDA events), for each of ROUNDS rounds,
    each started on every rank at once."""
    for _ in range(3):
        call()
    rounds = []
    for _ in range(ROUNDS):
        dist.barrier()  # every rank starts the round together: none waits for a late peer on its clock
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            call()
        end.record()
        end.synchronize()
        rounds.append(start.elapsed_time(end) / calls)
    return rounds


# --8<-- [end:bus-bandwidth]


# --8<-- [start:side-by-side]
def side_by_side(world_size: int) -> dict:
    """Matrix products the size of a backward pass's (bfloat16, 4096 tokens, width 4096 to 16384) on the
    default stream, and all-reduces of one 268 MB gradient bucket on another: each timed alone, then both at once."""
    a = torch.randn(4096, 4096, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(4096, 16384, dtype=torch.bfloat16, device="cuda")
    bucket = torch.randn(4096 * 16384, device="cuda")  # one weight matrix's float32 gradient: 268 MB
    matmuls, all_reduces = 32, 16  # a backward pass's worth of the 1.07B model: its products, its buckets
    comm = torch.cuda.Stream()

    def compute():
        for _ in range(matmuls):
            torch.mm(a, b)

    def communicate():
        with torch.cuda.stream(comm):
            for _ in range(all_reduces):
                dist.all_reduce(bucket)

    def timed(*work) -> dict:
        """The GPU time of each part, as events on its own stream, after an idle start on both GPUs."""
        dist.barrier()
        torch.cuda.synchronize()
        times = {}
        for name, part, stream in work:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(stream)
            part()
            end.record(stream)
            times[name] = (start, end)
        torch.cuda.synchronize()
        return {name: start.elapsed_time(end) for name, (start, end) in times.items()}

    default = torch.cuda.current_stream()
    runs = {"alone": [], "together": []}
    timed(("matmuls", compute, default), ("all-reduces", communicate, comm))  # warm-up
    for _ in range(ROUNDS):
        runs["alone"].append({**timed(("matmuls", compute, default)), **timed(("all-reduces", communicate, comm))})
        runs["together"].append(timed(("matmuls", compute, default), ("all-reduces", communicate, comm)))
    return {"matmuls": matmuls, "all_reduces": all_reduces, "bucket_mb": bucket.nbytes / 1e6, **runs}


# --8<-- [end:side-by-side]


def work(rank: int, world_size: int, part: str = "everything") -> dict:
    """On each rank: every collective at every size, then the side-by-side experiment; or only the 1 GiB
    all-reduce of the channels experiment."""
    if part == "all-reduce 1 GiB":
        full = torch.randn(2**30 // 4, device="cuda")
        return {"rounds": per_call_ms(collective("all-reduce", full, world_size), calls=5)}
    bandwidth = {}
    for kind in BUS_FACTOR:
        for mib in SIZES_MIB:
            full = torch.randn(mib * 2**20 // 4, device="cuda")
            rounds = per_call_ms(collective(kind, full, world_size), calls=max(5, 256 // mib))
            bandwidth[f"{kind} {mib}"] = rounds
            del full
    return {"bandwidth": bandwidth, "side_by_side": side_by_side(world_size)}


if _ranks.is_rank_process():
    _ranks.rank_main(work)
    sys.exit(0)

# --8<-- [start:link]
ranks = _ranks.run_ranks(__file__, WORLD_SIZE, backend="nccl")
print(f"{WORLD_SIZE} ranks over NCCL, one GPU each; bus bandwidth in GB/s (median of {ROUNDS} rounds, "
      "min-max), from rank 0's clock")  # fmt: skip
print(f"{'MiB':>6}" + "".join(f"{kind:>22}" for kind in BUS_FACTOR))
bus = {}  # (kind, MiB) -> median GB/s
for mib in SIZES_MIB:
    cells = []
    for kind, factor in BUS_FACTOR.items():
        rounds_ms = ranks[0]["bandwidth"][f"{kind} {mib}"]
        speeds = sorted(mib * 2**20 * factor(WORLD_SIZE) / (ms / 1e3) / 1e9 for ms in rounds_ms)
        bus[kind, mib] = statistics.median(speeds)
        cells.append(f"{bus[kind, mib]:7.1f} ({speeds[0]:.0f}-{speeds[-1]:.0f})")
    print(f"{mib:>6}" + "".join(f"{cell:>22}" for cell in cells))
for machine, gbs in PUBLISHED_GBS.items():
    print(f"published all-reduce bus bandwidth, {machine}: {gbs} GB/s")
# --8<-- [end:link]
largest = SIZES_MIB[-1]
for kind in BUS_FACTOR:
    assert bus[kind, largest] > 5 * bus[kind, SIZES_MIB[0]], f"{kind}: a small message is far from the peak"
    assert bus[kind, largest] > PUBLISHED_GBS["2x H100 PCIe + NVLink bridge"], f"{kind}: faster than the PCIe pair"
    assert bus[kind, 256] > 0.8 * bus[kind, largest], f"{kind}: 256 MiB is within 20% of the peak"

# --8<-- [start:side-by-side-result]
experiment = ranks[0]["side_by_side"]
print(f"{experiment['matmuls']} bfloat16 matrix products (4096x4096 @ 4096x16384) on the default stream, and "
      f"{experiment['all_reduces']} all-reduces of {experiment['bucket_mb']:.0f} MB on another; GPU ms on rank 0, "
      f"median of {ROUNDS} rounds (min-max)")  # fmt: skip
medians = {}
for part in ("matmuls", "all-reduces"):
    cells = []
    for when in ("alone", "together"):
        times = sorted(run[part] for run in experiment[when])
        medians[part, when] = statistics.median(times)
        cells.append(f"{when} {medians[part, when]:6.2f} ({times[0]:.2f}-{times[-1]:.2f})")
    slower = medians[part, "together"] / medians[part, "alone"] - 1
    print(f"  {part:<12} {cells[0]}   {cells[1]}   {slower:+.0%} side by side")
# --8<-- [end:side-by-side-result]
for part in ("matmuls", "all-reduces"):
    assert medians[part, "together"] > medians[part, "alone"], f"{part}: slower side by side"

# --8<-- [start:channels]
FORCED_CHANNELS = (8, 16, 32)
# NCCL's log names each channel it builds as "Channel 03/24": the fourth of 24
CHANNEL_LINE = re.compile(r"Channel \d+/(\d+)")


@contextmanager
def environment(**settings: str):
    """The variables set for the ranks started inside the block (they copy this process's environment)."""
    saved = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


def all_reduce_1gib(channels: int | None) -> tuple[float, int]:
    """A 1 GiB all-reduce on fresh ranks, with NCCL's choice of channels or a forced number: its bus bandwidth
    in GB/s (median of the rounds) and the channels NCCL built, read from its own log."""
    with tempfile.TemporaryDirectory(prefix="nccl-log-") as logs:
        settings = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT", "NCCL_DEBUG_FILE": f"{logs}/%p.log"}
        if channels:
            settings |= {"NCCL_MIN_NCHANNELS": str(channels), "NCCL_MAX_NCHANNELS": str(channels)}
        with environment(**settings):
            rounds = _ranks.run_ranks(__file__, WORLD_SIZE, "all-reduce 1 GiB", backend="nccl")[0]["rounds"]
        built = [int(n) for log in Path(logs).glob("*.log") for n in CHANNEL_LINE.findall(log.read_text())]
    gbs = statistics.median(2**30 * BUS_FACTOR["all-reduce"](WORLD_SIZE) / (ms / 1e3) / 1e9 for ms in rounds)
    return gbs, max(built, default=0)


print(f"all-reduce of 1 GiB on {WORLD_SIZE} ranks, fresh ranks for each line: bus bandwidth (median of {ROUNDS} "
      "rounds) against the channels NCCL built")  # fmt: skip
by_channels = {channels: all_reduce_1gib(channels) for channels in (None, *FORCED_CHANNELS)}
for channels, (gbs, built) in by_channels.items():
    asked = "NCCL's choice" if channels is None else f"forced to {channels}"
    print(f"  {asked:<14} {built:>3} channels  {gbs:6.1f} GB/s")
# --8<-- [end:channels]
for channels in FORCED_CHANNELS:
    assert by_channels[channels][1] == channels, "NCCL built as many channels as it was told to"
forced = [by_channels[channels][0] for channels in FORCED_CHANNELS]
assert forced == sorted(forced), "at 1 GiB, more channels move more"

# --8<-- [start:plot-data]
print(json.dumps({kind: {str(mib): bus[kind, mib] for mib in SIZES_MIB} for kind in BUS_FACTOR}))
# --8<-- [end:plot-data]

# --8<-- [start:took]
print(f"this example ran in {time.perf_counter() - started:.0f} s")
# --8<-- [end:took]
