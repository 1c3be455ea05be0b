"""Static, automatic and dynamic shapes, measured: compiles, compile time and steady-state latency.

Run it as it is: `python examples/benchmarking/dynamic_shapes.py`. It needs a GPU for its timing
claims; on a CPU it runs the same code with small sizes, and checks the compile counts.
"""
# execdocs: devices=cuda

import time
from unittest import mock

import torch
import torch.nn.functional as F
from torch._dynamo.testing import CompileCounterWithBackend
from torch._inductor import utils as inductor_utils
from torch._inductor.graph import GraphLowering

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

# --8<-- [start:compiles]
settings = {"static (dynamic=False)": False, "automatic (dynamic=None)": None, "dynamic (dynamic=True)": True}
compiles, compile_seconds, wrappers, steady = {}, {}, {}, {}
for name, dynamic in settings.items():
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor")  # counts the graphs handed to Inductor
    fn = torch.compile(norm_gelu, backend=counter, dynamic=dynamic)
    first_call_s, codes = [], []
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
    compiles[name], compile_seconds[name] = counter.frame_count, sum(first_call_s)
    wrappers[name] = codes[-1]  # the code of the last compile
    # Steady state, before the next reset() throws these compiled graphs away: sizes seen above.
    steady[name] = {x.shape[0]: compile_tools.timing_ms(fn, x, weight, bias)["median"] for x in inputs[1::2]}
    print(f"{name:26} {counter.frame_count} compiles, {sum(first_call_s):5.1f} s in calls that compiled")
# --8<-- [end:compiles]
assert list(compiles.values()) == [len(rows_per_call), 2, 1], compiles
if on_gpu:
    static_s, dynamic_s = compile_seconds["static (dynamic=False)"], compile_seconds["dynamic (dynamic=True)"]
    assert static_s > 2 * dynamic_s, "six compiles cost more than one"

# --8<-- [start:steady-state]
print(f"{'rows':>6}" + "".join(f"{name.split()[0]:>12}" for name in settings) + "   (ms per call, do_bench)")
for rows in steady["static (dynamic=False)"]:
    print(f"{rows:6}" + "".join(f"{steady[name][rows]:12.4f}" for name in settings))
# --8<-- [end:steady-state]
if on_gpu:
    for rows, static_ms in steady["static (dynamic=False)"].items():
        for name in settings:
            ms = steady[name][rows]
            assert ms < 2.0 * static_ms, f"a generic kernel costs little here: {name} {ms:.4f} vs {static_ms:.4f} ms"

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
