"""How to time a compiled model on a GPU, and four ways to get a wrong number.

Run it as it is: `python examples/benchmarking/method.py`. It needs a GPU for its claims; on a
CPU it runs the same code with smaller sizes and checks nothing about timings.
"""
# execdocs: devices=cuda

import contextlib
import statistics
import subprocess
import threading
import time

import torch
from torch import nn

import compile_tools

started = time.perf_counter()
torch.manual_seed(0)
device = compile_tools.device()
dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
# On the GPU, about a millisecond of work per call: large against the launch overhead.
batch, width = (8192, 2048) if device.type == "cuda" else (32, 64)


def sync():
    if device.type == "cuda":
        torch.cuda.synchronize()


# --8<-- [start:model]
class MLP(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.down(nn.functional.gelu(self.up(self.norm(x))))


model = MLP(width).to(device, dtype).eval()
x = torch.randn(batch, width, device=device, dtype=dtype)
compiled = torch.compile(model)
# --8<-- [end:model]


# --8<-- [start:timer]
def time_calls(fn, iters=100, warmup=10):
    """Milliseconds of each of `iters` calls of fn(), after `warmup` untimed calls.

    On a GPU, a pair of CUDA events brackets each call: the GPU itself writes a timestamp when
    it reaches each event in its stream, so the time is the GPU's, not the Python thread's.
    """
    for _ in range(warmup):
        fn()
    if device.type != "cuda":
        times = []
        for _ in range(iters):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return times
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()  # wait until the GPU has reached the last event
    return [start.elapsed_time(end) for start, end in events]


def summary(times):
    """The median and the 20th and 80th percentiles: robust to the odd slow call."""
    q = statistics.quantiles(times, n=5)
    return {"median": statistics.median(times), "p20": q[0], "p80": q[3]}


def line(name, s):
    return f"{name:<34} median {s['median']:8.3f} ms   p20-p80 {s['p20']:.3f}-{s['p80']:.3f} ms"


with torch.no_grad():
    compiled(x)  # the first call compiles; see the first pitfall below
    right = summary(time_calls(lambda: compiled(x)))
    reference = compile_tools.timing_ms(compiled, x)
print(line("compiled, CUDA events, 100 calls", right))
print(line("compiled, triton do_bench", reference))
# --8<-- [end:timer]
if device.type == "cuda":
    ratio = right["median"] / reference["median"]
    assert 0.7 < ratio < 1.5, f"two careful timers should roughly agree: {ratio:.2f}"

# --8<-- [start:first-call]
torch._dynamo.reset()  # forget the compiled code, as in a fresh process
fresh = torch.compile(model)
with torch.no_grad():
    sync()
    t0 = time.perf_counter()
    fresh(x)
    sync()
    first_call_ms = (time.perf_counter() - t0) * 1e3
print(f"first call (compiles):   {first_call_ms:10.1f} ms")
print(f"steady state (median):   {right['median']:10.3f} ms")
print(f"the first call took {first_call_ms / right['median']:.0f}x a steady-state call")
# --8<-- [end:first-call]
if device.type == "cuda":
    # Inductor's caches survive reset(), so this first call compiles warm: still many steady-state calls long.
    assert first_call_ms > 20 * right["median"], "the first call includes the compilation"

# --8<-- [start:wrapper-in-loop]
torch._dynamo.reset()
torch._dynamo.utils.counters.clear()
with torch.no_grad():
    wrapper_each_call = time_calls(lambda: torch.compile(model)(x), iters=20, warmup=0)
    # The host's side of the same loop: building the wrapper, then calling it (until it returns).
    build_ms, call_ms = [], []
    for _ in range(20):
        t0 = time.perf_counter()
        wrapper = torch.compile(model)
        t1 = time.perf_counter()
        wrapper(x)
        build_ms.append((t1 - t0) * 1e3)
        call_ms.append((time.perf_counter() - t1) * 1e3)
    sync()
    once_ms = []
    for _ in range(20):
        t0 = time.perf_counter()
        compiled(x)
        once_ms.append((time.perf_counter() - t0) * 1e3)
    sync()
compile_counts = torch._dynamo.utils.counters["stats"]["unique_graphs"]
print(f"torch.compile(model)(x), call 1:           {wrapper_each_call[0]:10.3f} ms")
print(line("torch.compile(model)(x), calls 2-20", summary(wrapper_each_call[1:])))
print(line("compiled once, called 100 times", right))
print("graphs compiled over the 20 calls:", compile_counts)
print("host ms per call (median), until Python returns:")
print(f"  torch.compile(model) alone {statistics.median(build_ms):8.3f}")
print(f"  then calling that wrapper  {statistics.median(call_ms):8.3f}")
print(f"  calling the compiled-once  {statistics.median(once_ms):8.3f}")
# --8<-- [end:wrapper-in-loop]
if device.type == "cuda":
    assert wrapper_each_call[0] > 20 * right["median"], "the first wrapped call compiles"
    assert summary(wrapper_each_call[1:])["median"] > 0.9 * right["median"]
    assert statistics.median(build_ms) > 2 * statistics.median(once_ms), "building the wrapper costs host time"
assert compile_counts == 1, "a new wrapper around the same module reuses Dynamo's cached graph"

# --8<-- [start:no-sync]
with torch.no_grad():
    compiled(x)  # compile again after the reset above, untimed
    launch_only = []
    for _ in range(50):
        sync()  # start from an idle GPU ...
        t0 = time.perf_counter()
        compiled(x)  # ... and stop the clock as soon as Python returns, without synchronizing
        launch_only.append((time.perf_counter() - t0) * 1e3)
    sync()
print(line("perf_counter, no synchronize", summary(launch_only)))
print(line("CUDA events (right)", right))
# --8<-- [end:no-sync]
if device.type == "cuda":
    assert summary(launch_only)["median"] < 0.5 * right["median"], "without a sync, only the launch is timed"


@contextlib.contextmanager
def sm_clock_samples():
    """(time, SM clock MHz, clock-limit reasons) every 50 ms while the block runs, read from nvidia-smi
    (which only reads the GPU's state); an empty list without a GPU."""
    samples = []
    if device.type != "cuda":
        yield samples
        return
    fields = "clocks.sm,clocks_throttle_reasons.active"
    smi = subprocess.Popen(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits", "-lms", "50"],
                           stdout=subprocess.PIPE, text=True)  # fmt: skip

    def read():
        for text in smi.stdout:
            mhz, reasons = text.split(", ")
            samples.append((time.time(), int(mhz), int(reasons, 16)))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(0.2)  # the first sample
    try:
        yield samples
    finally:
        smi.terminate()
        reader.join()


# --8<-- [start:few-iterations]
with torch.no_grad(), sm_clock_samples() as clocks:  # on a GPU, its SM clock every 50 ms
    few, many, windows = [], [], []
    for _ in range(20):  # interleaved, so that a slow drift of the GPU's clock affects both alike
        few.append(statistics.median(time_calls(lambda: compiled(x), iters=3, warmup=0)))
        start = time.time()
        many.append(statistics.median(time_calls(lambda: compiled(x), iters=100, warmup=0)))
        windows.append((start, time.time()))


def spread(medians):
    return (max(medians) - min(medians)) / statistics.median(medians)


print(f"20 medians of   3 calls: {min(few):.3f} to {max(few):.3f} ms, spread {spread(few):6.1%} of the median")
print(f"20 medians of 100 calls: {min(many):.3f} to {max(many):.3f} ms, spread {spread(many):6.1%} of the median")
if clocks:
    POWER_CAP = 0x4  # nvidia-smi's clock-limit reason "SW power cap": the board is at its power limit
    in_window = [[mhz for t, mhz, _ in clocks if start <= t <= end] for start, end in windows]
    mean_mhz = [statistics.mean(mhz) if mhz else float("nan") for mhz in in_window]
    fastest, slowest = min(range(20), key=many.__getitem__), max(range(20), key=many.__getitem__)
    capped = sum(1 for *_, reasons in clocks if reasons & POWER_CAP)
    all_mhz = [mhz for _, mhz, _ in clocks]
    print(f"SM clock while these ran: {min(all_mhz)} to {max(all_mhz)} MHz")
    print(f"samples taken while the power cap limited the clock: {capped} of {len(clocks)}")
    for name, i in (("fastest", fastest), ("slowest", slowest)):
        print(f"  {name} 100-call median {many[i]:.3f} ms, at {mean_mhz[i]:.0f} MHz on average")
# --8<-- [end:few-iterations]
if device.type == "cuda":
    # Fewer calls never scatter less; how much more depends on whether jitter or drift dominates.
    assert spread(few) > 0.8 * spread(many), "medians of few calls scatter at least as much"
    assert spread(few) > 0.05, "one three-call median is not a number to compare models with"
    assert clocks, "nvidia-smi gave no clock samples"
    assert capped > 0, "the GPU reached its power cap during the repeats"
    assert mean_mhz[fastest] > mean_mhz[slowest], "the fastest repeat ran at a higher clock than the slowest"

# --8<-- [start:took]
print(f"this example ran in {time.perf_counter() - started:.0f} s on {device.type}")
# --8<-- [end:took]
