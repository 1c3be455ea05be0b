"""How fast this machine's host gets work onto the GPU: a yardstick to scale launch-bound timings by.

    python examples/host_yardstick.py

Two host times per call, each the median of 5 rounds of 2,000 calls. The GPU finishes each kernel
faster than the host can launch the next, so a round's time is the host's: Python, the dispatcher
and the launch.
- a small op: `x.add_(1)` on a one-element tensor, as eager PyTorch launches each of a model's kernels;
- a small compiled call: `(x * 2 + 1).relu()` under torch.compile, one fused Triton kernel, with
  Dynamo's guards and Inductor's wrapper around it.

A model whose call is launch-bound spends its time in work like this, so its host time moves with
these two numbers: on a host whose yardstick reads twice ours, expect about twice our host time.
Every GPU recording of this site prints ours, measured right after it ran.
"""

import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROUNDS, CALLS = 5, 2000


def host_cpu() -> str:
    """The CPU's model and the cores this process may use: "Intel(R) Xeon(R) Platinum 8480+, 16 cores"."""
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{names[0] if names else platform.processor() or platform.machine()}, {cores} cores"


def host_us_per_call(call) -> dict[str, float]:
    """Median, fastest and slowest round of `call`'s time per call in microseconds, after a warm-up."""
    import torch

    for _ in range(200):
        call()
    torch.cuda.synchronize()
    rounds = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(CALLS):
            call()
        torch.cuda.synchronize()
        rounds.append((time.perf_counter() - start) / CALLS * 1e6)
    return {"median": statistics.median(rounds), "min": min(rounds), "max": max(rounds)}


def small_op_us() -> dict[str, float]:
    import torch

    x = torch.ones(1, device="cuda")
    return host_us_per_call(lambda: x.add_(1))


def small_compiled_call_us() -> dict[str, float]:
    import torch

    x = torch.ones(1, device="cuda")
    small_compiled = torch.compile(lambda t: (t * 2 + 1).relu())
    return host_us_per_call(lambda: small_compiled(x))


def measure() -> dict:
    return {"host": host_cpu(), "small_op_us": small_op_us(), "small_compiled_call_us": small_compiled_call_us()}


def print_measurement(found: dict) -> None:
    print(f"host: {found['host']}")
    for label, key in (("a small op (eager)", "small_op_us"), ("a small compiled call", "small_compiled_call_us")):
        times = found[key]
        print(f"{label:24} {times['median']:6.1f} us per call  (rounds {times['min']:.1f}-{times['max']:.1f})")


if __name__ == "__main__":
    found = measure()
    if "--json" in sys.argv:
        print(json.dumps(found))
    else:
        print_measurement(found)
