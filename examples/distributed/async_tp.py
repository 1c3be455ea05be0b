"""Asynchronous tensor parallelism: Inductor's micro-pipelining splits an all-gather and the matrix product that
reads it into pieces, so that the product of one piece runs while the next piece arrives.

Run it as it is on a machine with two GPUs: `python examples/distributed/async_tp.py`. One process per GPU (this
same file, started with the argument `rank`), over NCCL; the fused operators move data through symmetric memory.
"""

# execdocs: devices=cuda, gpus=2

import re
import statistics
import sys
import time
from unittest import mock

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch._inductor.graph import GraphLowering
from torch.distributed._symmetric_memory import enable_symm_mem_for_group, is_symm_mem_enabled_for_group

from distributed import _ranks, _steps_on_ranks

started = time.perf_counter()
WORLD_SIZE, ROUNDS = 2, 8
TOKENS, LAYERS = 8192, 8  # tokens in all (each rank holds 1/n of them), and 8 calls a step, as 8 blocks would
WIDTHS = (4096, 1024)  # the products shrink with the width squared, the all-gather with the width
FUSED_OPS = ("fused_all_gather_matmul", "fused_matmul_reduce_scatter")


# --8<-- [start:sequence-parallel-mlp]
def mlp(x_shard, w_up, w_down):
    """A transformer MLP, tensor-parallel: each rank holds 1/n of the tokens (x_shard) and 1/n of the hidden
    units (the columns of w_up, the rows of w_down). Gather the tokens, multiply, reduce-scatter the sum."""
    x = funcol.all_gather_tensor(x_shard, gather_dim=0, group=dist.group.WORLD)
    hidden = torch.nn.functional.gelu(x @ w_up)
    return funcol.reduce_scatter_tensor(hidden @ w_down, "sum", scatter_dim=0, group=dist.group.WORLD)


def mlp_pipelined(x_shard, w_up, w_down):
    """The same function under a name of its own, so that it is compiled a second time, with other settings."""
    return mlp(x_shard, w_up, w_down)


# --8<-- [end:sequence-parallel-mlp]


def first_call_and_code(compiled, *args) -> str:
    """Call `compiled` once and return the output code Inductor wrote for it. Not `run_and_get_code`: that resets
    Dynamo first, which would throw away the other function's compiled code and compile it again, under the
    settings of the moment, at its next call."""
    codes = []
    with mock.patch.object(GraphLowering, "save_output_code", codes.append):  # the hook run_and_get_code uses
        compiled(*args)
    return codes[0]


def calls_of(code: str) -> dict[str, int]:
    """How often the output code calls each fused operator, and the plain collectives."""
    names = (*FUSED_OPS, "all_gather_into_tensor", "reduce_scatter_tensor")
    return {name: len(re.findall(rf"\b{name}\b(?:\.default)?\(", code)) for name in names}


def short(name: str) -> str:
    """A GPU activity's name without its template arguments, for a table."""
    return re.sub(r"<.*", "", name.split("(")[0])[:60]


def measure(width: int, world_size: int) -> dict:
    """The MLP at one width, compiled plain and pipelined: its output code, its step timed in alternating rounds,
    and one profiled step of each, its GPU activities summed by name."""
    torch._dynamo.reset()
    torch.manual_seed(dist.get_rank())  # each rank its own tokens and its own columns
    x_shard = torch.randn(TOKENS // world_size, width, dtype=torch.bfloat16, device="cuda")
    w_up = torch.randn(width, 4 * width // world_size, dtype=torch.bfloat16, device="cuda") / width**0.5
    w_down = torch.randn(4 * width // world_size, width, dtype=torch.bfloat16, device="cuda") / width**0.5
    # --8<-- [start:plain]
    torch._inductor.config._micro_pipeline_tp = False  # the default
    plain = torch.compile(mlp)
    plain_code = first_call_and_code(plain, x_shard, w_up, w_down)
    # --8<-- [end:plain]

    def stack(compiled):
        return lambda: [compiled(x_shard, w_up, w_down) for _ in range(LAYERS)]

    before = None  # one change, at the first width: the plain code before symmetric memory is on, timed alone
    if not is_symm_mem_enabled_for_group(dist.group.WORLD.group_name):
        alone = _steps_on_ranks.paired({"plain": stack(plain)}, ROUNDS)["plain"]
        before = {"activities": activities(_steps_on_ranks.kernels(stack(plain))),
                  "gpu_ms": _steps_on_ranks.round_medians(alone, 1),
                  "host_ms": _steps_on_ranks.round_medians(alone, 0)}  # fmt: skip
    # --8<-- [start:turn-on]
    enable_symm_mem_for_group(dist.group.WORLD.group_name)  # the fused operators exchange through it
    torch._inductor.config._micro_pipeline_tp = True
    pipelined = torch.compile(mlp_pipelined)
    pipelined_code = first_call_and_code(pipelined, x_shard, w_up, w_down)
    # --8<-- [end:turn-on]
    reference = plain(x_shard, w_up, w_down)
    difference = ((pipelined(x_shard, w_up, w_down) - reference).abs().max() / reference.abs().max()).item()
    steps = {"plain": stack(plain), "pipelined": stack(pipelined)}
    times = _steps_on_ranks.paired(steps, ROUNDS)
    result = {"difference": difference, "code": {"plain": plain_code, "pipelined": pipelined_code}}
    if before is not None:
        result["plain, before symmetric memory"] = before
    for name, step in steps.items():
        result[name] = {
            "gpu_ms": _steps_on_ranks.round_medians(times[name], 1),
            "host_ms": _steps_on_ranks.round_medians(times[name], 0),
            "activities": activities(_steps_on_ranks.kernels(step)),
            "host_ops": host_ops(step),
            "calls": calls_of(result["code"][name]),
        }
    return result


def host_ops(step) -> list:
    """[name, calls, ms] of one profiled step's operators and CUDA runtime calls on the host, summed by name, by
    their own time (self time, without the calls they make), the longest first: where the host's time goes."""
    from torch.profiler import ProfilerActivity, profile

    dist.barrier()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
    torch.cuda.synchronize()
    summed = sorted(prof.key_averages(), key=lambda event: -event.self_cpu_time_total)
    return [[event.key, event.count, event.self_cpu_time_total / 1e3] for event in summed[:6]]


def activities(spans: list) -> list:
    """[lane, name, ms] of a profiled step's GPU activities, summed by name, the longest first."""
    summed = _steps_on_ranks.grouped_ms(spans, lambda lane, kernel: (lane, short(kernel)))
    return sorted(([*key, ms] for key, ms in summed.items()), key=lambda row: -row[2])


def work(rank: int, world_size: int) -> dict:
    return {str(width): measure(width, world_size) for width in WIDTHS}


if _ranks.is_rank_process():
    _ranks.rank_main(work)
    sys.exit(0)

ranks = _ranks.run_ranks(__file__, WORLD_SIZE, backend="nccl")
widths = ranks[0]

# --8<-- [start:output-code]
result = widths[str(WIDTHS[0])]
for name in ("plain", "pipelined"):
    print(f"{name}: the collectives in Inductor's output code, by the operator called: {result[name]['calls']}")
print("pipelined, the lines of call() that call a fused operator:")
for line in result["code"]["pipelined"].splitlines():
    if any(f"{op}." in line or f"{op}(" in line for op in FUSED_OPS) and "=" in line:
        print("    " + line.strip())
# --8<-- [end:output-code]
for result in widths.values():
    calls = {name: result[name]["calls"] for name in ("plain", "pipelined")}
    assert calls["plain"]["fused_all_gather_matmul"] == 0 and calls["plain"]["all_gather_into_tensor"] > 0
    assert calls["pipelined"]["fused_all_gather_matmul"] == 1, "the all-gather and the product reading it: one op"
    profiled = {name: [kernel for _, kernel, _ in result[name]["activities"]] for name in ("plain", "pipelined")}
    assert any(kernel.startswith("ncclDevKernel_AllGather") for kernel in profiled["plain"]), "plain: still NCCL's"
    assert not any("nccl" in kernel for kernel in profiled["pipelined"]), "pipelined: no NCCL kernel"
worst = max(result["difference"] for rank in ranks for result in rank.values())
assert worst < 0.02, "the same result, within bfloat16's rounding"


def plain_over_pipelined(result: dict) -> list[float]:
    """The plain step's GPU ms over the pipelined one's, round by round (the two ran back to back), sorted."""
    return sorted(p / q for p, q in zip(result["plain"]["gpu_ms"], result["pipelined"]["gpu_ms"], strict=True))


# --8<-- [start:time]
def cell(values: list[float]) -> str:
    return f"{statistics.median(values):6.2f} ({min(values):.2f}-{max(values):.2f})"


print(f"{LAYERS} calls of the MLP a step, {TOKENS} tokens, bfloat16; ms per step on rank 0, median of {ROUNDS} "
      "rounds (min-max)")  # fmt: skip
print(f"{'width':>6}{'plain':>21}{'pipelined':>21}{'plain / pipelined, per round':>32}"
      f"{'host, plain | pipelined':>25}")  # fmt: skip
for width, result in widths.items():
    ratios = plain_over_pipelined(result)
    host = [statistics.median(result[name]["host_ms"]) for name in ("plain", "pipelined")]
    print(f"{width:>6}{cell(result['plain']['gpu_ms']):>21}{cell(result['pipelined']['gpu_ms']):>21}"
          f"{statistics.median(ratios):>17.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f})"
          f"{host[0]:>12.2f} | {host[1]:<6.2f}")  # fmt: skip
before = widths[str(WIDTHS[0])]["plain, before symmetric memory"]
print(f"width {WIDTHS[0]}, plain, before symmetric memory is enabled (its rounds run first, alone): GPU "
      f"{cell(before['gpu_ms'])}, host {statistics.median(before['host_ms']):.2f}")  # fmt: skip
print(f"largest difference between the two outputs, relative to the largest value, any rank, any width: {worst:.1e}")
# --8<-- [end:time]
wide, narrow = (widths[str(width)] for width in WIDTHS)
assert statistics.median(plain_over_pipelined(wide)) > 1.05, "wide: the pipelined step is faster"
assert statistics.median(plain_over_pipelined(narrow)) < 1, "narrow: the pipelined step is slower"
host = {name: statistics.median(narrow[name]["host_ms"]) for name in ("plain", "pipelined")}
assert host["pipelined"] > 1.5 * host["plain"], "narrow: the fused operators cost the host more than the collectives"

# --8<-- [start:ranks]
print("ms per step, median of the rounds, on each rank: GPU | host (the host's time to enqueue the step)")
for width in widths:
    for name in ("plain", "pipelined"):
        medians = [(statistics.median(r[width][name]["gpu_ms"]), statistics.median(r[width][name]["host_ms"]))
                   for r in ranks]  # fmt: skip
        cells = [f"rank {rank}: {gpu:6.2f} | {host:6.2f}" for rank, (gpu, host) in enumerate(medians)]
        print(f"  width {width:>5}, {name:<10}" + "    ".join(cells))
# --8<-- [end:ranks]

# --8<-- [start:activities]
for width, result in widths.items():
    for name in [name for name in result if name.startswith(("plain", "pipelined"))]:
        print(f"width {width}, {name}: one profiled step's GPU activities on rank 0, ms summed by name (lane)")
        for lane, kernel, ms in result[name]["activities"][:6]:
            print(f"  {ms:7.2f}  {kernel} ({lane})")
# --8<-- [end:activities]

# --8<-- [start:host-ops]
for name in ("plain", "pipelined"):
    print(f"width {WIDTHS[1]}, {name}: one profiled step's host time on rank 0, ms of self time summed by name (calls)")
    for op, calls, ms in widths[str(WIDTHS[1])][name]["host_ops"]:
        print(f"  {ms:7.2f}  {op} ({calls})")
# --8<-- [end:host-ops]

# --8<-- [start:took]
print(f"this example ran in {time.perf_counter() - started:.0f} s")
# --8<-- [end:took]
