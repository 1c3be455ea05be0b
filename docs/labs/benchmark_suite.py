# %% [markdown]
# # Lab 5: A small benchmark suite
#
# "Is the compiled model faster?" has an answer only for a given input size, on a given machine,
# measured correctly. In this lab you write a timing function that avoids the usual mistakes,
# then a suite that compares eager and compiled runs across batch sizes and prints a table.
#
# The mistakes this lab guards against:
#
# - timing the first call, which includes compiling;
# - reading the clock while the GPU is still working (kernels are queued asynchronously);
# - timing eager, then compiled: the machine's speed moves from one second to the next, and a slow
#   moment that falls on one side only makes a speedup out of nothing. Time the two in pairs,
#   alternating, and take the ratio within each pair;
# - reporting a mean over a few runs, which one slow outlier can move: report the median, and the
#   spread.
#
# Background: [Did it get faster?](../index.md#did-it-get-faster) in the overview,
# [Backends and the first call](../dynamo/first_call.md), and the Benchmarking chapter's
# [method](../benchmarking/method.md).

# %%
import statistics
import time

import compile_tools
import torch

device = compile_tools.device()
torch.manual_seed(0)

model = torch.nn.Sequential(
    torch.nn.Linear(256, 1024),
    torch.nn.GELU(),
    torch.nn.Linear(1024, 256),
    torch.nn.LayerNorm(256),
).to(device)
BATCH_SIZES = [8, 128, 2048] if device.type == "cuda" else [8, 64, 256]
print(device, BATCH_SIZES)

# %% [markdown]
# ## Task 1: a paired timing function
#
# Write `paired_ms(fns, x, warmup=5, rounds=30)`, where `fns` maps a name to a function:
#
# 1. call each `fn(x)` `warmup` times without timing (this is where compiling and autotuning happen);
# 2. then, in each of `rounds` rounds, time one call of each function on its own with
#    `time.perf_counter()`, in the order of `fns` in even rounds and in the reverse order in odd
#    ones; on a GPU, call `torch.cuda.synchronize()` before starting and before stopping the clock;
# 3. return `{name: [milliseconds of each round]}`.


# %%
def paired_ms(fns, x, warmup=5, rounds=30):
    # TODO: warm each function up, then time one call of each per round, alternating the order.
    return {}


# %% tags=["solution"]
def paired_ms(fns, x, warmup=5, rounds=30):
    for fn in fns.values():
        for _ in range(warmup):
            fn(x)
    names = list(fns)
    times = {name: [] for name in names}
    for round_ in range(rounds):
        for name in names if round_ % 2 == 0 else names[::-1]:
            if device.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            fns[name](x)
            if device.type == "cuda":
                torch.cuda.synchronize()
            times[name].append((time.perf_counter() - start) * 1e3)
    return times


# %% tags=["check"]
class SlowFirstCall:
    """Sleeps 200 ms on its first call, like a compile, then returns at once; writes its name in `calls`."""

    def __init__(self, name, calls):
        self.name, self.calls = name, calls

    def __call__(self, x):
        if self.name not in self.calls:
            time.sleep(0.2)
        self.calls.append(self.name)
        return x


calls = []
probes = {"a": SlowFirstCall("a", calls), "b": SlowFirstCall("b", calls)}
measured = paired_ms(probes, torch.ones(1), warmup=3, rounds=4)
assert sorted(measured) == ["a", "b"], f"paired_ms returned {measured}: return {{name: [ms of each round]}}"
assert all(len(times) == 4 for times in measured.values()), f"expected one time per round: {measured}"
alternating = ["a", "b", "b", "a", "a", "b", "b", "a"]
assert calls[6:] == alternating, f"after the warm-up, the calls came in this order: {calls[6:]}"
assert max(max(times) for times in measured.values()) < 50, f"a slow first call is in the measurement: {measured}"
print(f"warm-up kept out, order alternating: {calls[6:]}")

# %% [markdown]
# The check uses fake functions whose first call sleeps: a time that excludes the warm-up is a
# fraction of a millisecond, while one that includes it is 200 ms. It also reads the order of the
# calls: a, b, then b, a, and so on.
#
# ## Task 2: eager against compiled, across batch sizes
#
# Write `run_suite(model, batch_sizes)`, returning one dict per batch size with the keys `batch`,
# `eager_ms`, `compiled_ms` (the medians of the rounds), `speedup`, `low` and `high`. The speedup is
# the median of the per-round ratios $t_\text{eager} / t_\text{compiled}$ (above 1: the compiled
# model is faster), and `low` and `high` are the 10th and 90th percentiles of those ratios
# (`statistics.quantiles(ratios, n=10)` gives the deciles).
#
# - Compile once, outside the loop, with `torch.compile(model, dynamic=False)`: one specialised
#   graph per batch size, compiled during `paired_ms`'s warm-up.
# - Run under `torch.no_grad()`: this is inference, and autograd bookkeeping would add work to
#   both sides.
# - Build each input with `torch.randn(batch, 256, device=device)`.


# %%
def run_suite(model, batch_sizes):
    # TODO: return [{"batch": ..., "eager_ms": ..., "compiled_ms": ..., "speedup": ..., "low": ..., "high": ...}, ...]
    return []


# %% tags=["solution"]
def run_suite(model, batch_sizes):
    torch._dynamo.reset()
    compiled = torch.compile(model, dynamic=False)
    rows = []
    with torch.no_grad():
        for batch in batch_sizes:
            x = torch.randn(batch, 256, device=device)
            times = paired_ms({"eager": model, "compiled": compiled}, x)
            ratios = [e / c for e, c in zip(times["eager"], times["compiled"], strict=True)]
            deciles = statistics.quantiles(ratios, n=10)
            rows.append({
                "batch": batch,
                "eager_ms": statistics.median(times["eager"]),
                "compiled_ms": statistics.median(times["compiled"]),
                "speedup": statistics.median(ratios),
                "low": deciles[0],
                "high": deciles[-1],
            })  # fmt: skip
    return rows


# %% tags=["check", "timing"]
rows = run_suite(model, BATCH_SIZES)
assert [row.get("batch") for row in rows] == BATCH_SIZES, f"expected one row per batch size {BATCH_SIZES}, got {rows}"
for row in rows:
    assert row["eager_ms"] > 0 and row["compiled_ms"] > 0, f"times must be positive: {row}"
    assert row["low"] <= row["speedup"] <= row["high"], f"the median ratio lies between its deciles: {row}"
    # A compiled two-layer MLP is not ten times faster or slower than eager: such a figure is a compile, or a
    # busy moment of the machine, inside the timing.
    assert 0.1 < row["speedup"] < 10, f"an implausible speedup, a timing artefact: {row}; run the cell again"
for smaller, larger in zip(rows, rows[1:], strict=False):
    assert larger["eager_ms"] > 0.5 * smaller["eager_ms"], (
        f"eager got faster as the batch grew ({smaller['eager_ms']:.3f} ms at {smaller['batch']}, "
        f"{larger['eager_ms']:.3f} ms at {larger['batch']}): a timing artefact; run the cell again"
    )
print(f"{'batch':>6} | {'eager ms':>9} | {'compiled ms':>11} | {'speedup (10th-90th pct of pairs)':>33}")
for row in rows:
    print(f"{row['batch']:>6} | {row['eager_ms']:9.3f} | {row['compiled_ms']:11.3f} | "
          f"{row['speedup']:6.2f}x ({row['low']:.2f}-{row['high']:.2f})")  # fmt: skip

# %% [markdown]
# Read the table with its context: the device and the versions are under it. The spread
# says how much to trust a speedup: where the 10th and 90th percentiles of the pairs fall on both
# sides of 1, the table does not say which is faster. (The line under the table names the device
# the site's build ran this notebook on; run it on your own machine to get your numbers.)
#
# Questions to ask of your table:
#
# - How does the speedup change with the batch? At small batches a call is mostly fixed work
#   (Python, the guards the compiled version checks, launching kernels), which compiling can make
#   smaller or larger; at large batches the matrix multiplies dominate, and they are library calls
#   on both sides, so only the fused element-wise work around them (GELU, the bias adds, LayerNorm)
#   can get faster. The Benchmarking chapter's [batch sweep](../benchmarking/batch_sweep.md) shows
#   both on a GPU.
# - Is a speedup below 1 real? Only if its 90th percentile is below 1 too; run the cell again and
#   see whether it stays.
#
# ## Try it
#
# - Add `mode="max-autotune"` and compare: on a GPU it also tries Triton matrix multiplies, and
#   compiling takes much longer.
# - Time with `torch.compile(model)` (without `dynamic=False`): the second batch size then
#   recompiles the model with the batch dimension dynamic. That recompile happens during
#   `paired_ms`'s warm-up, so the table does not show it; time the first call of each batch size
#   on its own to see it, and compare the compiled times with the `dynamic=False` table.
#
# ## What to remember
#
# - Warm up before timing, synchronize on a GPU, time the two sides in alternating pairs, and
#   report the median of the pairs' ratios with its spread and its setting (device, versions, sizes).
# - Compile once, outside the timed code; a `torch.compile` call inside the loop measures the
#   wrapper's construction and cache lookups.
# - Speedups depend on the size: always measure across the sizes you will run.
