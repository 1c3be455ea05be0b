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
# - reporting a mean over a few runs, which one slow outlier can move: report the median.
#
# Background: [Did it get faster?](../index.md#did-it-get-faster) in the overview, and
# [Backends and the first call](../dynamo/first_call.md).

# %%
import math
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
# ## Task 1: a timing function
#
# Write `median_ms(fn, x, warmup=5, iters=30)`:
#
# 1. call `fn(x)` `warmup` times without timing (this is where compiling and autotuning happen);
# 2. time each of the next `iters` calls on its own with `time.perf_counter()`; on a GPU, call
#    `torch.cuda.synchronize()` before starting and before stopping the clock;
# 3. return the median in milliseconds.


# %%
def median_ms(fn, x, warmup=5, iters=30):
    # TODO: warm up, time `iters` calls one by one, return the median in milliseconds.
    return float("nan")


# %% tags=["solution"]
def median_ms(fn, x, warmup=5, iters=30):
    for _ in range(warmup):
        fn(x)
    times = []
    for _ in range(iters):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn(x)
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


# %% tags=["check"]
class SlowFirstCall:
    """Sleeps 200 ms on its first call, like a compile, then returns at once; counts its calls."""

    def __init__(self):
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        if self.calls == 1:
            time.sleep(0.2)
        return x


probe = SlowFirstCall()
measured = median_ms(probe, torch.ones(1), warmup=3, iters=11)
assert math.isfinite(measured) and measured >= 0, f"median_ms returned {measured}: return a time in milliseconds"
assert probe.calls == 3 + 11, f"fn was called {probe.calls} times, expected warmup + iters = 14"
assert measured < 50, f"median_ms returned {measured:.1f} ms: the slow first call is in the measurement"
print(f"the slow first call stayed out of the measurement: median {measured:.4f} ms")

# %% [markdown]
# The check uses a fake function whose first call sleeps: a median that excludes the warm-up is
# a fraction of a millisecond, while one that includes it, or a mean over the calls, would be
# pulled towards 200 ms.
#
# ## Task 2: eager against compiled, across batch sizes
#
# Write `run_suite(model, batch_sizes)`, returning one dict per batch size with the keys
# `batch`, `eager_ms`, `compiled_ms` and `speedup`, where
# $\text{speedup} = t_\text{eager} / t_\text{compiled}$ (above 1: the compiled model is faster).
#
# - Compile once, outside the loop, with `torch.compile(model, dynamic=False)`: one specialised
#   graph per batch size, compiled during `median_ms`'s warm-up.
# - Run under `torch.no_grad()`: this is inference, and autograd bookkeeping would add work to
#   both sides.
# - Build each input with `torch.randn(batch, 256, device=device)`.


# %%
def run_suite(model, batch_sizes):
    # TODO: return [{"batch": ..., "eager_ms": ..., "compiled_ms": ..., "speedup": ...}, ...]
    return []


# %% tags=["solution"]
def run_suite(model, batch_sizes):
    torch._dynamo.reset()
    compiled = torch.compile(model, dynamic=False)
    rows = []
    with torch.no_grad():
        for batch in batch_sizes:
            x = torch.randn(batch, 256, device=device)
            eager_ms = median_ms(model, x)
            compiled_ms = median_ms(compiled, x)
            rows.append(
                {"batch": batch, "eager_ms": eager_ms, "compiled_ms": compiled_ms, "speedup": eager_ms / compiled_ms}
            )
    return rows


# %% tags=["check"]
rows = run_suite(model, BATCH_SIZES)
assert [row.get("batch") for row in rows] == BATCH_SIZES, f"expected one row per batch size {BATCH_SIZES}, got {rows}"
for row in rows:
    assert row["eager_ms"] > 0 and row["compiled_ms"] > 0, f"times must be positive: {row}"
    assert math.isclose(row["speedup"], row["eager_ms"] / row["compiled_ms"]), f"speedup is eager / compiled: {row}"
print(f"{'batch':>6} | {'eager ms':>9} | {'compiled ms':>11} | {'speedup':>7}")
for row in rows:
    print(f"{row['batch']:>6} | {row['eager_ms']:9.3f} | {row['compiled_ms']:11.3f} | {row['speedup']:6.2f}x")
compile_tools.print_stamp()

# %% [markdown]
# Read the table with its context: the versions and the device are on the last line, and
# these are medians of 30 calls on a machine that may be doing other work. (The site's build runs
# this notebook on its CPU, as the last line says; run it on your GPU to get your numbers.)
#
# Questions to ask of your table:
#
# - Where is the speedup largest? At small batch sizes a call costs mostly fixed work: Python,
#   the guards that the compiled version checks, and launching kernels. At large batch sizes the
#   matrix multiplies dominate, and they are library calls on both sides, so only the fused
#   element-wise work around them (GELU, the bias adds, LayerNorm) can get faster.
# - Is a speedup below 1 real? Run the cell again: if the numbers move by more than the
#   difference, the machine is too busy for this measurement to mean anything.
#
# ## Try it
#
# - Add `mode="max-autotune"` and compare: on a GPU it also tries Triton matrix multiplies, and
#   compiling takes much longer.
# - Time with `torch.compile(model)` (without `dynamic=False`) and watch the second batch size
#   trigger a recompile with dynamic shapes: the warm-up hides it, the first call does not.
#
# ## What to remember
#
# - Warm up before timing, synchronize on a GPU, and report a median with its setting (device,
#   versions, sizes).
# - Compile once, outside the timed code; a `torch.compile` call inside the loop measures the
#   wrapper's construction and cache lookups.
# - Speedups depend on the size: always measure across the sizes you will run.
