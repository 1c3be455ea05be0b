"""FSDP2 on real GPUs: step time (host and GPU apart) and memory per phase, eager against compiled per block and
compiled whole; and the same configuration on one of those GPUs through a fake process group of as many ranks, as
the FSDP2-at-scale page measures it.

Run it as it is on a machine with two GPUs: `python examples/distributed/fsdp_real_and_fake.py`, or with
`RANKS=4` on one with four. One process per GPU (this same file, started with the argument `rank`) trains over
NCCL; then this process alone plays rank 0 of the same number of ranks on the first GPU, with collectives that
move nothing.
"""

# execdocs: devices=cuda, gpus=2,4

import gc
import os
import statistics
import sys
import time

import torch

from distributed import _fsdp_step, _ranks, _steps_on_ranks
from distributed._fake_group import fake_group
from distributed._feedforward import SIZES, FeedForwardStack, inputs

started = time.perf_counter()
WORLD_SIZE, ROUNDS = int(os.environ.get("RANKS", "2")), 8
HOWS = ("eager", "compiled per block", "compiled whole")
GIB = _fsdp_step.GIB


# --8<-- [start:compile-each-way]
def build(width: int, depth: int, how: str) -> _fsdp_step.TrainingStep:
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = _fsdp_step.sharded(FeedForwardStack(width, depth))
    if how == "compiled per block":
        for layer in model.layers:
            layer.compile()
    elif how == "compiled whole":
        model.compile()
    return _fsdp_step.TrainingStep(model, inputs(width, torch.device("cuda")))


# --8<-- [end:compile-each-way]


def measure(width: int, depth: int) -> dict:
    """Each way: memory per phase after two steps; then the three timed in alternating rounds; then one
    profiled step each. The same calls on every rank, real group or fake."""
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    steps, result = {}, {}
    for how in HOWS:
        gc.collect()
        before = torch.cuda.memory_allocated()
        steps[how] = step = build(width, depth, how)
        step()  # compiles, where it compiles; creates AdamW's state
        step()
        torch.cuda.synchronize()
        result[how] = {
            "held_gib": (torch.cuda.memory_allocated() - before) / GIB,
            "peak_forward_backward_gib": _fsdp_step.peak_gib(step.forward_backward, before),
            "peak_optimizer_gib": _fsdp_step.peak_gib(step.optimizer_step, before),
        }
    times = _steps_on_ranks.paired(steps, ROUNDS)
    for how, step in steps.items():
        spans = _steps_on_ranks.kernels(step)
        result[how].update({
            "gpu_ms": _steps_on_ranks.round_medians(times[how], 1),
            "host_ms": _steps_on_ranks.round_medians(times[how], 0),
            **{f"{lane}_ms": _steps_on_ranks.lane_ms(spans, lane) for lane in ("compute", "copy", "nccl")},
        })  # fmt: skip
    result["graphs"] = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    del steps
    gc.collect()
    torch.cuda.empty_cache()
    return result


def work(rank: int, world_size: int) -> dict:
    return {size: measure(*SIZES[size]) for size in SIZES}


if _ranks.is_rank_process():
    _ranks.rank_main(work)
    sys.exit(0)

# --8<-- [start:runs]
real = _ranks.run_ranks(__file__, WORLD_SIZE, backend="nccl", timeout_s=600)[0]
fake_group(WORLD_SIZE)  # then rank 0 of as many in this one process, on the first GPU: no communication
fake = {size: measure(*SIZES[size]) for size in SIZES}
print(f"{WORLD_SIZE} ranks: over NCCL, one GPU each (real), and rank 0 of a fake group of {WORLD_SIZE} on the "
      f"first (fake); rank 0's figures; {ROUNDS} rounds of the three ways, alternating")  # fmt: skip
# --8<-- [end:runs]


def cell(values: list[float]) -> str:
    return f"{statistics.median(values):6.1f} ({min(values):.1f}-{max(values):.1f})"


# --8<-- [start:memory]
for size in SIZES:
    print(f"{size}: GiB per rank, held between steps, and the peak while forward+backward and AdamW's step run")
    print(f"{'':20}{'held':>7}{'fwd+bwd':>9}{'AdamW':>7}   real | fake")
    for how in HOWS:
        r, f = real[size][how], fake[size][how]
        columns = ("held_gib", "peak_forward_backward_gib", "peak_optimizer_gib")
        print(f"{how:<20}" + "".join(f"{r[key]:>{w}.2f}" for key, w in zip(columns, (7, 9, 7), strict=True)) + "   |"
              + "".join(f"{f[key]:>{w}.2f}" for key, w in zip(columns, (7, 9, 7), strict=True)))  # fmt: skip
# --8<-- [end:memory]

# --8<-- [start:time]
for size in SIZES:
    print(f"{size}: ms per step on rank 0; the step's time from an idle start on the GPUs (median of rounds, "
          "min-max), real and fake, and its difference; the host's time to enqueue it; one profiled real step's "
          "kernels, copies and NCCL kernels, summed")  # fmt: skip
    print(f"{'':20}{'real':>19}{'fake':>19}{'real-fake':>10}{'host real':>10}{'host fake':>10}"
          f"{'kernels':>8}{'copies':>7}{'NCCL':>6}")  # fmt: skip
    for how in HOWS:
        r, f = real[size][how], fake[size][how]
        extra = statistics.median(r["gpu_ms"]) - statistics.median(f["gpu_ms"])
        print(f"{how:<20}{cell(r['gpu_ms']):>19}{cell(f['gpu_ms']):>19}{extra:>10.1f}"
              f"{statistics.median(r['host_ms']):>10.1f}{statistics.median(f['host_ms']):>10.1f}"
              f"{r['compute_ms']:>8.1f}{r['copy_ms']:>7.1f}{r['nccl_ms']:>6.1f}")  # fmt: skip
    ratios = sorted(e / c for e, c in zip(real[size]["eager"]["gpu_ms"], real[size]["compiled per block"]["gpu_ms"],
                                          strict=True))  # fmt: skip
    print(f"  real: eager / compiled per block, per round: median {statistics.median(ratios):.2f}x "
          f"({ratios[0]:.2f}-{ratios[-1]:.2f}); graphs compiled, both ways: {real[size]['graphs']}")  # fmt: skip
# --8<-- [end:time]
for size in SIZES:
    for how in HOWS:
        r, f = real[size][how], fake[size][how]
        assert abs(r["held_gib"] / f["held_gib"] - 1) < 0.02, f"{size}, {how}: the same state held, real or fake"
        assert r["nccl_ms"] > 0 and f["nccl_ms"] == 0, "the fake group launches no NCCL kernel"

# --8<-- [start:took]
print(f"this example ran in {time.perf_counter() - started:.0f} s")
# --8<-- [end:took]
