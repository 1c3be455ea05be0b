# %% [markdown]
# # Lab 1: Three backends, one model
#
# `torch.compile(model, backend=...)` always starts the same way: Dynamo captures an FX graph.
# The backend decides what happens to that graph. In this lab you compile one small model with
# three backends, each doing one more step of the real pipeline, and check two things: that they
# all compute the same numbers, and where the time of the *first* call goes.
#
# | backend | what it does with the graph |
# |---|---|
# | `eager` | runs Dynamo's FX graph as it is, op by op |
# | `aot_eager` | also traces it through AOTAutograd to ATen operators, then runs those op by op |
# | `inductor` | also lowers the ATen graph to generated kernels (the default backend) |
#
# Background: [Backends and the first call](../dynamo/first_call.md).
#
# Each **TODO** cell runs as it is, with a placeholder. The cell tagged `check` after it fails
# until your code is right. The worked solution is hidden under *Show solution*.

# %%
import statistics
import time
import warnings

import compile_tools
import torch

device = compile_tools.device()
torch.manual_seed(0)

model = torch.nn.Sequential(
    torch.nn.Linear(64, 256),
    torch.nn.GELU(),
    torch.nn.Linear(256, 64),
    torch.nn.LayerNorm(64),
).to(device)
x = torch.randn(32, 64, device=device)
BACKENDS = ["eager", "aot_eager", "inductor"]
print(device, [backend for backend in BACKENDS])

# %% [markdown]
# ## Task 1: the same numbers from every backend
#
# Write `run_backend(backend, model, x)`: compile `model` with the given backend and return the
# compiled model's output for `x`. Call `torch._dynamo.reset()` first, so that each backend
# starts from an empty cache instead of reusing what the previous one compiled.


# %%
def run_backend(backend, model, x):
    # TODO: reset Dynamo, compile `model` with `backend`, and return its output for `x`.
    return None


# %% tags=["solution"]
def run_backend(backend, model, x):
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=backend)
    return compiled(x)


# %% tags=["check"]
with torch.no_grad():
    expected = model(x)
    for backend in BACKENDS:
        out = run_backend(backend, model, x)
        assert out is not None, f"run_backend({backend!r}, ...) returned None: return the compiled model's output."
        # Inductor reorders and fuses floating-point work, so compare with a tolerance, never with ==.
        torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)
        print(f"{backend:>9}: matches eager PyTorch, max abs difference {(out - expected).abs().max().item():.1e}")

# %% [markdown]
# The differences are not zero for `inductor`: generated kernels add and multiply in a different
# order than PyTorch's own kernels, and floating-point arithmetic is not associative. That is why
# the check uses `torch.testing.assert_close` with a tolerance.
#
# ## Task 2: the first call and the calls after it
#
# Write `first_and_later_ms(backend, model, x)`. It returns two numbers in milliseconds:
#
# - the time of the **first** call of a freshly compiled model (reset Dynamo first), which
#   includes capturing and compiling;
# - the **median** time of the next 20 calls, which only run what was compiled.
#
# On a GPU, kernels run asynchronously: call `torch.cuda.synchronize()` before reading the clock,
# or you measure how long it took to *queue* the work. `time.perf_counter()` is a good clock.


# %%
def first_and_later_ms(backend, model, x):
    # TODO: time the first call of torch.compile(model, backend=backend), then the next 20 calls.
    return 0.0, 0.0


# %% tags=["solution"]
def first_and_later_ms(backend, model, x):
    def timed_call(fn):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn(x)
        if device.type == "cuda":
            torch.cuda.synchronize()
        return (time.perf_counter() - start) * 1e3

    torch._dynamo.reset()
    compiled = torch.compile(model, backend=backend)
    first = timed_call(compiled)
    later = statistics.median(timed_call(compiled) for _ in range(20))
    return first, later


# %% tags=["check", "timing"]
timings = {}
# Inductor's on-disk caches off: a cache warmed by an earlier run would let inductor skip compiling,
# and its first call would then no longer show what compiling costs.
warnings.filterwarnings("ignore", message="dynamo_pgo force disabled")  # a side effect of that switch
with torch.no_grad(), torch._inductor.config.patch(force_disable_caches=True):
    first_and_later_ms("eager", model, x)  # untimed: Dynamo's one-time imports would land on the first backend
    for backend in BACKENDS:
        timings[backend] = first_and_later_ms(backend, model, x)
    plain = []  # the model itself, not compiled, timed the same way: the baseline for the later calls
    for _ in range(20):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        model(x)
        if device.type == "cuda":
            torch.cuda.synchronize()
        plain.append((time.perf_counter() - start) * 1e3)
print(f"{'backend':>14} | {'first call ms':>13} | {'later calls ms':>14}")
for backend, (first, later) in timings.items():
    print(f"{backend:>14} | {first:13.1f} | {later:14.3f}")
print(f"{'(not compiled)':>14} | {'':>13} | {statistics.median(plain):14.3f}")
for backend, (first, later) in timings.items():
    assert later > 0, f"{backend}: the later calls took {later} ms; did you time them?"
    assert first > later, (
        f"{backend}: the first call ({first:.2f} ms) should take longer than later ones ({later:.3f} ms)"
    )
assert timings["inductor"][0] > timings["eager"][0], (
    "inductor's first call should take longer than the eager backend's: it also generates and compiles kernels"
)

# %% [markdown]
# What the table shows:
#
# - Every backend pays for Dynamo's capture on the first call, and the `eager` backend pays for
#   nothing else. Its first call is the cost of tracing the Python code.
# - `aot_eager` adds AOTAutograd's trace to ATen operators, and `inductor` adds lowering,
#   code generation and compiling the generated code (C++ on a CPU, Triton on a GPU).
#   Inductor keeps what it compiled in an on-disk cache, which the check turned off so that the
#   table shows compiling; with a warm cache the first call skips most of that work (the
#   [compile-time page](../benchmarking/compile_time.md) measures both).
# - After the first call, the work is the model's own: the compiled versions only check their
#   guards and run what was captured. The last row is the model not compiled at all, timed the
#   same way: compare the later calls with it to see what compiling bought on this machine.
# - The milliseconds are this machine's, for this small model: the line under the table names the
#   device. On another machine, or for the chapter's model, the figures differ; what the check
#   asserts holds everywhere: each first call is longer than the later ones, and `inductor`'s
#   first call longer than `eager`'s.
#
# When a backend gives wrong numbers, this order is also the way to find the stage at fault:
# if `eager` is right and `aot_eager` is wrong, AOTAutograd is at fault; if both are right and
# `inductor` is wrong, look at the generated code. The
# [accuracy page](../debugging/accuracy.md) does exactly that.
#
# ## What to remember
#
# - The backend is the one argument that decides how much of the pipeline runs: `eager`,
#   `aot_eager` and `inductor` each add one stage.
# - Compare compiled outputs with a tolerance: generated kernels round differently.
# - Never time the first call when you want to know how fast the compiled code runs; report it
#   separately, as the compile cost.
