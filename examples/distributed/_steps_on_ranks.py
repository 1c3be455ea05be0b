"""Timing a step on every rank of a real process group, one GPU each: host and GPU apart, and its kernels by lane.

Import it from an example of this chapter: `from distributed import _steps_on_ranks`. Every rank must make the
same calls in the same order: each call starts with a barrier, so that both GPUs start idle, together.
"""

import statistics
import time

import torch
import torch.distributed as dist


def timed(step) -> tuple[float, float]:
    """(host ms, GPU ms) of one call of step(), from an idle start on every rank: the host's time until step()
    returns (Python and the launches), and the GPU's until its last kernel, on CUDA events."""
    dist.barrier()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    began = time.perf_counter()
    step()
    host_ms = (time.perf_counter() - began) * 1e3
    end.record()
    end.synchronize()
    return host_ms, start.elapsed_time(end)


def paired(steps: dict, rounds: int, calls: int = 2) -> dict:
    """`calls` timed calls of each step per round, the order of the steps reversing every round, so that each
    pair sees the same state of the machine. name -> one list per round of (host ms, GPU ms)."""
    names = list(steps)
    times = {name: [] for name in names}
    for round_ in range(rounds):
        for name in names if round_ % 2 == 0 else names[::-1]:
            times[name].append([timed(steps[name]) for _ in range(calls)])
    return times


def round_medians(rounds: list, index: int) -> list[float]:
    """The median of each round's calls: index 0 for the host's ms, 1 for the GPU's."""
    return [statistics.median(call[index] for call in round_) for round_ in rounds]


def lane(name: str) -> str:
    """Where a GPU activity goes on a timeline: "nccl" for NCCL's kernels, "copy" for copies and fills (those of a
    collective that moves data with the copy engines among them), "compute" for every other kernel."""
    if "nccl" in name.lower():
        return "nccl"
    return "copy" if name.startswith(("Memcpy", "Memset")) else "compute"


def kernels(step) -> list[tuple[str, str, float, float]]:
    """(lane, name, start ms, end ms) of every GPU activity of one call of step(), from the profiler; times from
    the call's first activity."""
    from torch.profiler import ProfilerActivity, profile

    dist.barrier()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    gpu = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA and e.time_range.elapsed_us()]
    first = min(e.time_range.start for e in gpu)
    return sorted(
        (lane(e.name), e.name, (e.time_range.start - first) / 1e3, (e.time_range.end - first) / 1e3) for e in gpu
    )


def lane_ms(spans: list, which: str) -> float:
    """The GPU ms of one lane's activities, summed (NCCL's include any time a kernel waits for its peer)."""
    return sum(end - start for kind, _, start, end in spans if kind == which)


def grouped_ms(spans: list, kind_of) -> dict[str, float]:
    """The GPU ms of the activities, summed by kind_of(lane, name)."""
    totals = {}
    for which, name, start, end in spans:
        kind = kind_of(which, name)
        totals[kind] = totals.get(kind, 0.0) + end - start
    return totals


def lane_bars(spans: list, which: str, gap_ms: float = 0.05) -> list[list[float]]:
    """One lane's activities as [start, duration] bars, joined where less than gap_ms apart: for a timeline."""
    bars = []
    for start, end in sorted((start, end) for kind, _, start, end in spans if kind == which):
        if bars and start - bars[-1][1] < gap_ms:
            bars[-1][1] = max(bars[-1][1], end)
        else:
            bars.append([start, end])
    return [[round(start, 3), round(end - start, 3)] for start, end in bars]
