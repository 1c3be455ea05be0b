"""Backends and the first call: why the first call of a compiled model is slow, and where the time goes.

Run it as it is: `python examples/dynamo/first_call.py` (on a GPU if torch sees one).
"""

# --8<-- [start:fresh-cache]
import os
import tempfile

# Inductor keeps what it compiled in a cache folder on disk (by default one per user, in the temp
# folder), and a later compile of the same graph, in this process or the next, loads it from there.
# To see what a real first compile costs, every run of this script starts with an empty folder.
cache_folder = tempfile.mkdtemp(prefix="first_call_cache_")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_folder
os.environ["TRITON_CACHE_DIR"] = os.path.join(cache_folder, "triton")
# --8<-- [end:fresh-cache]

import atexit
import shutil
import subprocess
import sys
import time

import torch
from torch._dynamo.utils import clear_compilation_metrics, compile_times, counters, get_compilation_metrics

import compile_tools

atexit.register(shutil.rmtree, cache_folder, ignore_errors=True)
torch.manual_seed(0)
device = compile_tools.device()


# --8<-- [start:model]
class MLPBlock(torch.nn.Module):
    """A transformer-style feed-forward block: LayerNorm, Linear, GELU, Linear, and a residual add."""

    def __init__(self, dim=256, hidden=1024):
        super().__init__()
        self.norm = torch.nn.LayerNorm(dim)
        self.up = torch.nn.Linear(dim, hidden)
        self.down = torch.nn.Linear(hidden, dim)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


# Inference only: no parameter needs a gradient, so no backward graph is compiled.
model = MLPBlock().to(device).eval().requires_grad_(False)
x = torch.randn(128, 256, device=device)
expected = model(x)
# --8<-- [end:model]


def synchronize():
    if device.type == "cuda":
        torch.cuda.synchronize()


# --8<-- [start:first-call]
def timed_call(fn, *args):
    """One call of fn(*args) and its wall-clock time in milliseconds (waiting for the GPU, if any)."""
    synchronize()
    start = time.perf_counter()
    out = fn(*args)
    synchronize()
    return out, (time.perf_counter() - start) * 1e3


# Whatever one-time set-up the process's first compile pays for, pay it now, with a compile that
# is then forgotten, so that it is not counted in the column of whichever backend comes first.
_, setup_ms = timed_call(torch.compile(model, backend="eager"), x)

runs = {}
for backend in ("eager", "aot_eager", "inductor"):
    torch._dynamo.reset()  # forget earlier compiles: each backend starts from nothing
    clear_compilation_metrics()
    counters.clear()
    compiled = torch.compile(model, backend=backend)
    out, first_ms = timed_call(compiled, x)  # compiles, then runs
    torch.testing.assert_close(out, expected)  # every backend computes what eager PyTorch computes
    runs[backend] = {
        "first_ms": first_ms,
        "metrics": get_compilation_metrics(),  # what torch recorded about this compile
        "timers": {
            name: [float(t) for t in values.split(", ")]
            for name, values in zip(*compile_times(repr="csv"), strict=True)
        },
        "steady_ms": compile_tools.timing_ms(compiled, x)["median"],  # once compiled, a call only runs
    }

eager_ms = compile_tools.timing_ms(model, x)["median"]
print(f"(set-up: the process's first compile, with backend='eager', took {setup_ms:.1f} ms)\n")
print(f"{'backend':<22}{'first call':>12}{'steady state':>15}{'first / steady':>17}")
print(f"{'(not compiled)':<22}{'':>12}{eager_ms:>12.3f} ms")
for backend, run in runs.items():
    ratio = run["first_ms"] / run["steady_ms"]
    print(f"{backend:<22}{run['first_ms']:>9.1f} ms{run['steady_ms']:>12.3f} ms{ratio:>16,.0f}x")
# --8<-- [end:first-call]
assert not [m for run in runs.values() for m in run["metrics"] if m.is_forward is False], "no backward compile"
for backend, run in runs.items():
    assert run["first_ms"] > 5 * run["steady_ms"], f"{backend}: the first call should be >5x the steady state"
assert runs["inductor"]["first_ms"] > 100 * runs["inductor"]["steady_ms"], "inductor: >100x the steady state"
assert runs["inductor"]["first_ms"] > 3 * runs["aot_eager"]["first_ms"], "Inductor's first call costs the most"


# --8<-- [start:breakdown]
DYNAMO = "Dynamo: trace bytecode, build guards"
AOT = "AOTAutograd + Inductor's graph passes"
LOWERING = "Inductor: post-grad passes, lowering"
CODEGEN = "Inductor: fusion, codegen, compile"
AUTOTUNE = "first run: Triton autotuning"
REST = "first run: the rest"


def stages(first_ms, metrics):
    """A first call split with the nested timers of the CompilationMetrics record its compile left."""
    (m,) = [record for record in metrics if not record.is_runtime]  # one compile: no graph break
    dynamo_total = m.entire_frame_compile_time_s  # Dynamo's whole compile of the frame, backend included
    backend = m.backend_compile_time_s or 0.0  # the backend's call: AOTAutograd, and Inductor inside it
    inductor = m.inductor_compile_time_s or 0.0  # Inductor's compile_fx_inner, code generation included
    codegen = m.code_gen_time_s or 0.0  # fusion, code generation, compiling and loading the kernels
    # Triton kernels with several candidate configs are benchmarked at their first launch (GPU only).
    autotune = sum(r.runtime_triton_autotune_time_us or 0 for r in metrics if r.is_runtime) / 1e6
    seconds = {
        DYNAMO: dynamo_total - backend,
        AOT: backend - inductor,
        LOWERING: inductor - codegen,
        CODEGEN: codegen,
        AUTOTUNE: autotune,
        REST: first_ms / 1e3 - dynamo_total - autotune,
    }
    return {stage: value * 1e3 for stage, value in seconds.items()}


def print_table(columns):
    print(f"{'milliseconds':<38}" + "".join(f"{name:>13}" for name in columns))
    for stage in next(iter(columns.values())):
        print(f"{stage:<38}" + "".join(f"{column[stage]:>13.1f}" for column in columns.values()))
    print(f"{'first call (measured)':<38}" + "".join(f"{sum(column.values()):>13.1f}" for column in columns.values()))


breakdown = {backend: stages(run["first_ms"], run["metrics"]) for backend, run in runs.items()}
print_table(breakdown)
inductor = breakdown["inductor"]
backend_share = (inductor[AOT] + inductor[LOWERING] + inductor[CODEGEN]) / runs["inductor"]["first_ms"]
print(f"\ninductor: the backend's compile (AOTAutograd + Inductor) is {backend_share:.0%} of the first call")
# --8<-- [end:breakdown]
for backend, parts in breakdown.items():
    compile_parts = [value for stage, value in parts.items() if stage != REST]
    assert all(value >= 0 for value in compile_parts), (backend, parts)
    assert sum(compile_parts) <= runs[backend]["first_ms"], f"{backend}: the stages fit in the first call"
assert breakdown["eager"][AOT] < 0.25 * breakdown["eager"][DYNAMO], "backend='eager' adds next to nothing to Dynamo"
assert breakdown["aot_eager"][AOT] > 0, "aot_eager: AOTAutograd's trace"
assert breakdown["aot_eager"][LOWERING] == breakdown["aot_eager"][CODEGEN] == 0, "aot_eager never calls Inductor"
captured = {backend: [m.graph_op_count for m in run["metrics"] if not m.is_runtime] for backend, run in runs.items()}
assert len({str(ops) for ops in captured.values()}) == 1, f"Dynamo captured the same graph for each backend: {captured}"
assert backend_share > 0.75, "most of inductor's first call is the backend's compile, not Dynamo"
if device.type == "cpu":
    assert inductor[CODEGEN] > 0.5 * runs["inductor"]["first_ms"], "on the CPU, code generation is most of it"
if device.type == "cuda":
    assert inductor[AUTOTUNE] > 0, "on the GPU, the first run benchmarks Triton configs"

# --8<-- [start:inside-inductor]
# torch._dynamo.utils.compile_times(): every timer (dynamo_timed) that ran, in the order each first
# started, with one value per call. Timers nest, so they don't add up. Which ones exist depends on
# the torch version and the device: a selection, in pipeline order.
timers = runs["inductor"]["timers"]
wanted = [
    "_compile.compile_inner",
    "bytecode_tracing",
    "build_guards",
    "OutputGraph.call_user_compiler",
    "inductor_codecache_torch_key",
    "CacheBase.get_system.triton_key",
    "_recursive_pre_grad_passes",
    "create_aot_dispatcher_function",
    "_recursive_joint_graph_passes",
    "compile_fx_inner",
    "_recursive_post_grad_passes",
    "GraphLowering.run",
    "GraphLowering.codegen",
    "Scheduler.__init__",
    "Scheduler.codegen",
    "compile_file",
    "PyCodeCache.load_by_key_path",
    "async_compile.precompile",
    "async_compile.wait",
    "CachingAutotuner.benchmark_all_configs",
]
shown = [name for name in wanted if name in timers]
for name in shown:
    calls = timers[name]
    print(f"{name:<40}{sum(calls) * 1e3:>10.1f} ms" + (f"  ({len(calls)} calls)" if len(calls) > 1 else ""))
print(f"... {len(timers) - len(shown)} more timers cut")
# --8<-- [end:inside-inductor]
nesting = [
    "_compile.compile_inner",
    "OutputGraph.call_user_compiler",
    "create_aot_dispatcher_function",
    "compile_fx_inner",
    "GraphLowering.codegen",
    "Scheduler.codegen",
]
assert all(name in timers for name in nesting), [name for name in nesting if name not in timers]
assert sum(timers["create_aot_dispatcher_function"]) >= sum(timers["compile_fx_inner"]) + sum(
    timers.get("_recursive_joint_graph_passes", [0.0])
), "the joint-graph passes and compile_fx_inner both run inside AOTAutograd"
assert all(sum(timers[outer]) >= sum(timers[inner]) for outer, inner in zip(nesting, nesting[1:], strict=False)), (
    "each of these timers runs inside the one before it"
)
assert all(
    sum(timers[name]) <= sum(timers["PyCodeCache.load_by_key_path"])
    for name in ("async_compile.precompile", "async_compile.wait")
    if name in timers
), "kernels compile while the generated module is imported"

# --8<-- [start:cpu-probe]
if device.type == "cpu":
    # Time Inductor's CPU-feature probe on its own: a fresh process and an empty cache folder.
    probe = (
        "import time; from torch._inductor import cpu_vec_isa; start = time.perf_counter(); "
        "isa = cpu_vec_isa.pick_vec_isa(); print(f'{time.perf_counter() - start}|{isa}')"
    )
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(cache_folder, "probe"))
    answer = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    probe_seconds, isa = answer.stdout.strip().split("|")
    probe_ms = float(probe_seconds) * 1e3
    print(f"{'pick_vec_isa() alone, in a fresh process':<50}{probe_ms:>8.0f} ms   (picked {isa!r})")
    print(f"{'the first call: ' + CODEGEN:<50}{inductor[CODEGEN]:>8.0f} ms")
    # --8<-- [end:cpu-probe]
    assert probe_ms > 0.2 * inductor[CODEGEN], "the probe is a large part of the CPU's code generation stage"

# --8<-- [start:system-key]
# AOTAutograd's cache key includes CacheBase.get_system(), computed once per process: the GPU's name and CUDA's
# version, and triton_key(), a hash of Triton's own files (its compiler's sources and libtriton). Each timed
# alone in a fresh process, after torch, Inductor's cache module and the device are up, as they were here.
key_probe = (
    "import time, torch; from torch._inductor.codecache import CacheBase; "
    "from torch._inductor.runtime.triton_compat import HAS_TRITON, triton_key; "
    f"torch.empty(1, device='{device.type}'); start = time.perf_counter(); HAS_TRITON and triton_key(); "
    "middle = time.perf_counter(); CacheBase.get_system(); end = time.perf_counter(); "
    "print(f'{middle - start}|{end - middle}|{HAS_TRITON}')"
)
answer = subprocess.run([sys.executable, "-c", key_probe], capture_output=True, text=True, check=True)
triton_key_s, rest_s, has_triton = answer.stdout.strip().split("|")
triton_key_ms, rest_ms = float(triton_key_s) * 1e3, float(rest_s) * 1e3
print(f"{'triton_key() alone, in a fresh process':<50}{triton_key_ms:>8.0f} ms   (Triton found: {has_triton})")
print(f"{'the rest of CacheBase.get_system()':<50}{rest_ms:>8.0f} ms")
print(f"{'the first call: ' + AOT:<50}{inductor[AOT]:>8.0f} ms")
# --8<-- [end:system-key]
if device.type == "cuda":
    assert has_triton == "True" and triton_key_ms > 100, "hashing Triton's files takes a tenth of a second or more"

# --8<-- [start:warm-cache]
torch._dynamo.reset()  # Dynamo forgets the model; the cache folder on disk stays
clear_compilation_metrics()
counters.clear()
compiled = torch.compile(model)
out, warm_first_ms = timed_call(compiled, x)
torch.testing.assert_close(out, expected)
warm = stages(warm_first_ms, get_compilation_metrics())
print_table({"empty cache": inductor, "warm cache": warm})
hits = {
    f"{group}.{name}": count
    for group, names in counters.items()
    for name, count in names.items()
    if name.startswith(("autograd_cache", "fxgraph_cache"))
}
print("\ncache counters:", hits)
# --8<-- [end:warm-cache]
assert hits.get("aot_autograd.autograd_cache_hit", 0) >= 1, "AOTAutograd's cache had the first compile's result"
assert warm_first_ms < 0.5 * runs["inductor"]["first_ms"], "a warm cache makes the first call much cheaper"
assert warm[CODEGEN] < 0.1 * inductor[CODEGEN], "on a cache hit, Inductor generates and compiles (next to) nothing"
warm_ops = [m.graph_op_count for m in get_compilation_metrics() if not m.is_runtime]
assert warm[DYNAMO] > 0 and warm_ops == captured["inductor"], "Dynamo traced again and captured the same graph"
