"""FSDP2 at 2, 8 and 64 ranks on one GPU: per-rank memory, bytes moved and step time, eager against compiled.

Run it as it is on a machine with a GPU: `python examples/distributed/fsdp_at_scale.py`. One process plays
rank 0 of a group of each size, through a fake process group: its collectives return at once and move
no data, and everything else (the sharding, the copies into and out of the collectives' buffers, the
compute, the optimizer, the memory) is real.
"""

# execdocs: devices=cuda

import gc
import json
import re
import statistics
import time
from collections import defaultdict

import torch
from torch.utils._python_dispatch import TorchDispatchMode

import compile_tools
from benchmarking import _profile_diff
from distributed._fsdp_step import GIB, TrainingStep, peak_gib, sharded
from distributed._fake_group import fake_group
from distributed._feedforward import SIZES, TOKENS, FeedForwardStack, inputs, parameter_count

started = time.perf_counter()
compile_tools.print_stamp()
WORLD_SIZES = (2, 8, 64)
GEMM = _profile_diff.GEMM


class CollectiveBytes(TorchDispatchMode):
    """Bytes this rank moves per collective kind: what an all-gather brings in (its output less this rank's
    own input) and what a reduce-scatter sends out (its input less the part this rank keeps)."""

    def __init__(self):
        super().__init__()
        self.bytes = {"all-gather": 0, "reduce-scatter": 0}
        self.calls = {"all-gather": 0, "reduce-scatter": 0}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._schema.name
        kind = "all-gather" if "allgather" in name else "reduce-scatter" if "reduce_scatter" in name else None
        if kind:
            sizes = sorted(
                t.nbytes for t in torch.utils._pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)
            )
            self.bytes[kind] += sizes[-1] - sizes[0]
            self.calls[kind] += 1
        return func(*args, **(kwargs or {}))


def host_ms(phase, before=lambda: None, repeats: int = 5) -> float:
    """The median time the host takes to run phase() (to enqueue its GPU work), after before() and an idle GPU."""
    times = []
    for _ in range(repeats):
        before()
        torch.cuda.synchronize()
        start = time.perf_counter()
        phase()
        times.append((time.perf_counter() - start) * 1e3)
        torch.cuda.synchronize()
    return statistics.median(times)


def fsdp_hooks_ms(phase) -> tuple[float, dict[str, float]]:
    """Host ms of phase() under the profiler, and the ms of each of FSDP2's outermost "FSDP::" ranges
    (pre_forward, post_forward, pre_backward, post_backward_reduce, ...) summed over the blocks."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        start = time.perf_counter()
        phase()
        total_ms = (time.perf_counter() - start) * 1e3
    torch.cuda.synchronize()

    def in_fsdp(event) -> bool:
        return event is not None and (event.name.startswith("FSDP::") or in_fsdp(event.cpu_parent))

    ranges = defaultdict(float)
    for event in profile.events():
        if event.name.startswith("FSDP::") and not in_fsdp(event.cpu_parent):
            ranges[re.split(r" \(| for ", event.name)[0]] += event.cpu_time_total / 1e3  # without the module's name
    return total_ms, dict(ranges)


def unsharded_host_ms(width: int, depth: int) -> float:
    """One change: the same blocks, in bfloat16, with no FSDP2; the host's ms for forward and backward."""
    with torch.device("cuda"):
        model = FeedForwardStack(width, depth).to(torch.bfloat16)
    x = inputs(width, torch.device("cuda")).to(torch.bfloat16)
    return host_ms(lambda: model(x).float().square().mean().backward())


def measure_one(width: int, depth: int, how: str) -> dict:
    """Build, shard (and compile per block) the model; after two steps, its memory and its host time per phase."""
    gc.collect()  # a sharded model has reference cycles: free the last one before taking the baseline
    torch.manual_seed(0)
    before = torch.cuda.memory_allocated()
    with torch.device("cuda"):  # initialised on the GPU: a billion parameters take seconds on the CPU
        model = sharded(FeedForwardStack(width, depth))
    if how == "compiled":
        for layer in model.layers:
            layer.compile()
    step = TrainingStep(model, inputs(width, torch.device("cuda")))
    step()  # compiles, for the compiled model; creates the optimizer's state
    step()
    torch.cuda.synchronize()
    local = sum(p.to_local().numel() * p.to_local().element_size() for p in model.parameters())
    result = {
        "shard_gib": local / GIB,
        "held_gib": (torch.cuda.memory_allocated() - before) / GIB,  # between steps: no gradients
        "peak_forward_backward_gib": peak_gib(step.forward_backward, before),
        "peak_optimizer_gib": peak_gib(step.optimizer_step, before),
        "host_forward_backward_ms": host_ms(step.forward_backward),
        "host_optimizer_ms": host_ms(step.optimizer_step, before=step.forward_backward),
    }
    if how == "eager":
        counter = CollectiveBytes()
        with counter:
            step()
        torch.cuda.synchronize()
        result["collective_gib"] = {kind: b / GIB for kind, b in counter.bytes.items()}
        result["collective_calls"] = counter.calls
        result["profiled_forward_backward_ms"], result["fsdp_ranges_ms"] = fsdp_hooks_ms(step.forward_backward)
        result["fsdp_hooks_ms"] = sum(result["fsdp_ranges_ms"].values())
        # one change: AdamW's fused implementation, one kernel per step, instead of the default foreach
        fused = TrainingStep(model, step.x, fused=True)
        result["host_optimizer_fused_ms"] = host_ms(fused.optimizer_step, before=fused.forward_backward)
        del fused
    return {"result": result, "step": step, "model": model}


def measure(width: int, depth: int, world_size: int) -> dict:
    fake_group(world_size)
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    sides = {how: measure_one(width, depth, how) for how in ("eager", "compiled")}
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    comparison = _profile_diff.compare(sides["eager"]["step"], sides["compiled"]["step"])
    row = {"world_size": world_size, "graphs": graphs, "speedup": comparison["speedup"],
           "speedup_range": comparison["speedup_range"]}  # fmt: skip
    for how, side in sides.items():
        row[how] = {**side["result"], **{key: comparison[how][key] for key in ("ms", "host_ms", "busy_ms", "bound")}}
        gemm_ms = sum(ms for label, ms in comparison[how]["categories"].items() if label.startswith(GEMM))
        row[how]["gemm_share"] = gemm_ms / comparison[how]["busy_ms"]
    del sides, comparison
    gc.collect()
    torch.cuda.empty_cache()
    row["unsharded_host_forward_backward_ms"] = unsharded_host_ms(width, depth)
    return row


# --8<-- [start:runs]
results = {}
for size, (width, depth) in SIZES.items():
    with torch.device("meta"):  # shapes only, to count
        model = FeedForwardStack(width, depth)
    print(f"{size} ({depth} blocks of width {width}, {parameter_count(model) * 4 / GIB:.2f} GiB in float32); "
          f"{TOKENS[0] * TOKENS[1]} tokens per rank per step")  # fmt: skip
    del model
    results[size] = [measure(width, depth, world_size) for world_size in WORLD_SIZES]
# --8<-- [end:runs]

# --8<-- [start:memory]
for size, rows in results.items():
    print(f"{size}: GiB per rank; peak while forward+backward run, and while AdamW steps; eager | compiled")
    print(f"{'ranks':>5} {'shard':>7} {'gathered':>9} {'scattered':>10} {'held':>7}   {'fwd+bwd':>15}   {'AdamW':>13}")
    for row in rows:
        eager, compiled = row["eager"], row["compiled"]
        gathered, scattered = eager["collective_gib"]["all-gather"], eager["collective_gib"]["reduce-scatter"]
        print(f"{row['world_size']:>5} {eager['shard_gib']:>7.3f} {gathered:>9.2f} {scattered:>10.2f} "
              f"{eager['held_gib']:>7.2f}   {eager['peak_forward_backward_gib']:>6.2f} | "
              f"{compiled['peak_forward_backward_gib']:<6.2f}"
              f"   {eager['peak_optimizer_gib']:>5.2f} | {compiled['peak_optimizer_gib']:<5.2f}")  # fmt: skip
# --8<-- [end:memory]

# --8<-- [start:time]
for size, rows in results.items():
    print(f"{size}: ms per step, eager | compiled; the GEMMs' share of eager's GPU busy time")
    print(f"{'ranks':>5} {'wall clock':>15} {'host':>15} {'GPU busy':>15} {'speedup':>17} {'GEMM':>6}")
    for row in rows:
        eager, compiled = row["eager"], row["compiled"]
        low, high = row["speedup_range"]
        print(f"{row['world_size']:>5} {eager['ms']:>6.1f} | {compiled['ms']:<6.1f} "
              f"{eager['host_ms']:>6.1f} | {compiled['host_ms']:<6.1f} {eager['busy_ms']:>6.1f} | "
              f"{compiled['busy_ms']:<6.1f} {row['speedup']:.2f}x ({low:.2f}-{high:.2f}) "
              f"{eager['gemm_share']:>6.0%}")  # fmt: skip
# --8<-- [end:time]

# --8<-- [start:host]
for size, rows in results.items():
    print(f"{size}: the host's ms to enqueue each phase of an eager step, from an idle GPU")
    print(f"{'ranks':>5} {'fwd+bwd':>8} {'in FSDP2 hooks':>15} {'unsharded':>10}   {'AdamW':>6} {'fused':>6}")
    for row in rows:
        eager = row["eager"]
        share = eager["fsdp_hooks_ms"] / eager["profiled_forward_backward_ms"]
        print(f"{row['world_size']:>5} {eager['host_forward_backward_ms']:>8.1f} {share:>15.0%} "
              f"{row['unsharded_host_forward_backward_ms']:>10.1f}   {eager['host_optimizer_ms']:>6.1f} "
              f"{eager['host_optimizer_fused_ms']:>6.1f}")  # fmt: skip
small = results[next(iter(SIZES))]
print(f"{next(iter(SIZES))}, eager: host ms in each of FSDP2's hooks, summed over the blocks, profiled")
ranges = sorted(small[-1]["eager"]["fsdp_ranges_ms"], key=lambda name: -small[-1]["eager"]["fsdp_ranges_ms"][name])
print(f"{'hook, at ranks:':<34}" + "".join(f"{row['world_size']:>8}" for row in small))
for name in ranges:
    print(f"{name:<34}" + "".join(f"{row['eager']['fsdp_ranges_ms'].get(name, 0):>8.1f}" for row in small))
# --8<-- [end:host]
for size, rows in results.items():
    width, depth = SIZES[size]
    parameters = 8 * width**2 + 7 * width
    batch_gib = TOKENS[0] * TOKENS[1] * width * 4 / GIB
    for row in rows:
        n, eager = row["world_size"], row["eager"]
        shard = eager["shard_gib"]
        assert row["graphs"] == 2, "one graph per block, and one recompile for the first block's input"
        assert row["compiled"]["shard_gib"] == shard, "compiling changes nothing that is stored"
        assert abs(shard * GIB - depth * parameters * 4 / n) < depth * 4 * n * 4, "1/n of the float32 weights"
        # the all-gathers run twice per block (forward, and backward after the forward freed them), in bfloat16
        assert abs(eager["collective_gib"]["all-gather"] * GIB / (2 * depth * parameters * 2 * (n - 1) / n) - 1) < 0.01
        assert abs(eager["collective_gib"]["reduce-scatter"] * GIB / (depth * parameters * 4 * (n - 1) / n) - 1) < 0.01
        assert row["speedup"] < 1.15, "compiling the blocks does not speed the step up"
        assert row["compiled"]["peak_forward_backward_gib"] < eager["peak_forward_backward_gib"]
        assert abs(eager["peak_optimizer_gib"] / (eager["held_gib"] + 2 * shard) - 1) < 0.01, (
            "gradients, and as much again"
        )
        if (size, n) != (next(iter(SIZES)), WORLD_SIZES[0]):  # the process's first: see the page
            assert abs(eager["held_gib"] / (3 * shard + batch_gib) - 1) < 0.01, "the shard, AdamW's moments, the batch"
    above_held = [row["eager"]["peak_forward_backward_gib"] - row["eager"]["held_gib"] for row in rows]
    assert max(above_held) < 1.1 * min(above_held), "forward and backward add about the same at any n"
    assert rows[0]["eager"]["held_gib"] > 4 * rows[-1]["eager"]["held_gib"], "what a rank keeps shrinks with n"
    busy = {how: sum(row[how]["busy_ms"] for row in rows) for how in ("eager", "compiled")}
    assert busy["compiled"] < busy["eager"], "though it does take some work off the GPU"
small, large = (results[size] for size in SIZES)
small_host_ms = {how: sum(row[how]["host_ms"] for row in small) for how in ("eager", "compiled")}
assert small_host_ms["compiled"] > small_host_ms["eager"], "compiled blocks add host time"
for row in small:  # the small model's step: the host, in FSDP2's hooks
    eager = row["eager"]
    assert eager["ms"] > 3 * eager["busy_ms"], "the GPU idles most of the step"
    assert eager["fsdp_hooks_ms"] > 0.4 * eager["profiled_forward_backward_ms"]
    assert row["unsharded_host_forward_backward_ms"] < 0.5 * eager["host_forward_backward_ms"]
first, last = small[0]["eager"], small[-1]["eager"]  # the small model's host time grows with the ranks
assert last["host_forward_backward_ms"] > 1.2 * first["host_forward_backward_ms"]
grown = last["profiled_forward_backward_ms"] - first["profiled_forward_backward_ms"]
assert last["fsdp_hooks_ms"] - first["fsdp_hooks_ms"] > 0.5 * grown, "most of the growth is in the hooks"
pre_hooks = ("FSDP::pre_forward", "FSDP::pre_backward")
pre_grown = sum(last["fsdp_ranges_ms"][name] - first["fsdp_ranges_ms"][name] for name in pre_hooks)
assert pre_grown > 0.5 * (last["fsdp_hooks_ms"] - first["fsdp_hooks_ms"]), "where each block's all-gather is issued"
fused, foreach = (
    [row["eager"][key] for rows in (small, large) for row in rows]
    for key in ("host_optimizer_fused_ms", "host_optimizer_ms")
)
assert sum(fused) < 0.8 * sum(foreach), "AdamW fused: less host time than the default foreach"
assert large[0]["eager"]["busy_ms"] > 0.9 * large[0]["eager"]["ms"], "2 ranks, large model: the GPU is busy"
two, many = large[0]["eager"], large[-1]["eager"]
assert two["peak_optimizer_gib"] > two["peak_forward_backward_gib"], "2 ranks: the peak is in AdamW's step"
assert many["peak_forward_backward_gib"] > 4 * many["peak_optimizer_gib"], "64 ranks: in forward and backward"

# --8<-- [start:plot-data]
print(json.dumps({size: [{"world_size": row["world_size"], "held_gib": row["eager"]["held_gib"],
                          **{f"{how}_{phase}_gib": row[how][f"peak_{phase}_gib"]
                             for how in ("eager", "compiled") for phase in ("forward_backward", "optimizer")}}
                         for row in rows] for size, rows in results.items()}))  # fmt: skip
# --8<-- [end:plot-data]

# --8<-- [start:took]
print(f"this example ran in {time.perf_counter() - started:.0f} s")
# --8<-- [end:took]
