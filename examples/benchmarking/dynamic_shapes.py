"""Static, automatic and dynamic shapes, measured: compiles, compile time and steady-state latency.

Run it as it is: `python examples/benchmarking/dynamic_shapes.py`. It needs a GPU for its timing
claims; on a CPU it runs the same code with small sizes, and checks the compile counts.
"""
# execdocs: devices=cuda

import functools
import time
from unittest import mock

import torch
import torch.nn.functional as F
from torch._dynamo.testing import CompileCounterWithBackend
from torch._inductor import utils as inductor_utils
from torch._inductor.graph import GraphLowering

import _profile_diff
import compile_tools

started = time.perf_counter()
torch.manual_seed(0)
device = compile_tools.device()
on_gpu = device.type == "cuda"
width = 2048 if on_gpu else 256
rows_per_call = [1000, 1500, 2000, 3000, 4096, 6000] if on_gpu else [100, 150, 200, 300, 409, 600]
# The function was called fresh_inductor_cache before torch 2.8.
fresh_cache = getattr(inductor_utils, "fresh_cache", None) or inductor_utils.fresh_inductor_cache


def sync():
    if on_gpu:
        torch.cuda.synchronize()


# --8<-- [start:function]
def norm_gelu(x, weight, bias):
    return F.gelu(F.layer_norm(x, (x.shape[-1],), weight, bias))


weight = torch.randn(width, device=device)
bias = torch.randn(width, device=device)
inputs = [torch.randn(rows, width, device=device) for rows in rows_per_call]
# --8<-- [end:function]

# --8<-- [start:warm-up]
# The first compile of a process also starts Inductor's pool of compile workers and imports its modules.
# Pay that once, on a throwaway function, so that every setting below is timed on the same footing.
sync()
t0 = time.perf_counter()
torch.compile(torch.sin)(inputs[0])
sync()
print(f"a throwaway compile first, to start the compiler: {time.perf_counter() - t0:.1f} s")
# --8<-- [end:warm-up]


def chosen_config(kernel: str) -> str:
    """The launch configuration (block sizes, warps) a Triton kernel of the newest output code runs with."""
    from torch._inductor.codecache import PyCodeCache

    for module in reversed(PyCodeCache.modules):
        launchers = getattr(getattr(module, kernel, None), "launchers", None)
        if launchers:
            return str(launchers[0].config)
    raise LookupError(f"no compiled Triton kernel named {kernel} is loaded")


# --8<-- [start:compiles]
settings = {"static (dynamic=False)": False, "automatic (dynamic=None)": None, "dynamic (dynamic=True)": True}
compiles, compile_seconds, wrappers, steady, configs = {}, {}, {}, {}, {}
for name, dynamic in settings.items():
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor")  # counts the graphs handed to Inductor
    fn = torch.compile(norm_gelu, backend=counter, dynamic=dynamic)
    first_call_s, codes = [], []
    tuned_before = torch._dynamo.utils.counters["inductor"]["benchmarking.InductorBenchmarker.benchmark_gpu"]
    # fresh_cache(): an empty cache folder and in-memory caches, so every compile here is cold.
    # save_output_code: Inductor hands each wrapper it writes to this hook (run_and_get_code uses it).
    with fresh_cache(), mock.patch.object(GraphLowering, "save_output_code", codes.append):
        for x in inputs:  # one pass over the sequence of sizes
            before = counter.frame_count
            sync()
            t0 = time.perf_counter()
            fn(x, weight, bias)
            sync()
            if counter.frame_count > before:  # this call compiled
                first_call_s.append(time.perf_counter() - t0)
        if on_gpu:  # the kernel of the last compile, as the first call that ran it left it
            configs[name] = chosen_config(compile_tools.kernel_names(codes[-1])[0])
    tuned = torch._dynamo.utils.counters["inductor"]["benchmarking.InductorBenchmarker.benchmark_gpu"] - tuned_before
    compiles[name], compile_seconds[name] = counter.frame_count, sum(first_call_s)
    wrappers[name] = codes[-1]  # the code of the last compile
    # Steady state, before the next reset() throws these compiled graphs away: sizes seen above. The GPU's time
    # per call is the kernel's, from the profiler; do_bench's is the whole call's, launch included.
    steady[name] = {
        x.shape[0]: (
            _profile_diff.profile_step(functools.partial(fn, x, weight, bias), calls=20).per_call_ms(),
            compile_tools.timing_ms(fn, x, weight, bias)["median"],
        )
        for x in inputs[1::2]
    }
    each = ", ".join(f"{s:.2f}" for s in first_call_s)
    print(f"{name:26} {counter.frame_count} compiles ({each} s), configs benchmarked at run time: {tuned}")
# --8<-- [end:compiles]
assert list(compiles.values()) == [len(rows_per_call), 2, 1], compiles
if on_gpu:
    static_s, dynamic_s = compile_seconds["static (dynamic=False)"], compile_seconds["dynamic (dynamic=True)"]
    assert static_s > dynamic_s, "six compiles cost more than one"  # only the order: the ratio moves with the host

# --8<-- [start:steady-state]
names = [name.split()[0] for name in settings]
print(f"{'rows':>6}" + "".join(f"{n:>12}" for n in names) + "   GPU kernel ms per call (profiler)")
for rows in steady["static (dynamic=False)"]:
    print(f"{rows:6}" + "".join(f"{steady[name][rows][0]:12.4f}" for name in settings))
print(f"{'rows':>6}" + "".join(f"{n:>12}" for n in names) + "   whole call, ms (do_bench)")
for rows in steady["static (dynamic=False)"]:
    print(f"{rows:6}" + "".join(f"{steady[name][rows][1]:12.4f}" for name in settings))
for name, config in configs.items():
    print(f"{name}: {config}")
# --8<-- [end:steady-state]
if on_gpu:
    static, automatic, dynamic = (steady[name] for name in settings)
    for rows, (static_ms, _) in static.items():
        assert automatic[rows][0] < 1.25 * static_ms, f"only the rows symbolic costs little: {automatic[rows][0]:.4f}"
        assert dynamic[rows][0] > 1.2 * static_ms, f"a generic row length costs GPU time: {dynamic[rows][0]:.4f}"

# --8<-- [start:kernels]
for name, wrapper in wrappers.items():
    call = compile_tools.lines_between(wrapper, "def call(", "return (")
    print(f"{name}, its last compile:")
    for line in call.splitlines():
        if "= args" in line or ".run(" in line or "cpp_fused" in line:
            print("    " + line.strip())
# --8<-- [end:kernels]

# --8<-- [start:took]
print(f"this example ran in {time.perf_counter() - started:.0f} s on {device.type}")
# --8<-- [end:took]
