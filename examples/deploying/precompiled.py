"""A compiled function saved ahead of time and loaded in a fresh process with torch.compiler.load_compiled_function.

Run it as it is: `python examples/deploying/precompiled.py` (on a GPU if torch sees one). Saving, loading
and torch.compile's starts each run in a fresh Python process (this same file, started with the argument
`job`); the AOTInductor package is served as on the AOTInductor page (deploying/_serve.py).
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

started = time.perf_counter()
BATCH = 8  # the AOTInductor page's model and input: deploying/_model.py, 8 rows of 64 features
ROUNDS = 3  # eager and compiled timed in turn, so that a slow moment of the machine falls on both
JOB_TIMEOUT_S = 300  # a start takes seconds; a hung one must not hang the build
TEMPERATURE = 1.0  # a global that the compiled function reads


# --8<-- [start:function]
def predict(model, x):
    """What is compiled and saved: the model's call, and a global it reads."""
    return model(x) / TEMPERATURE


# --8<-- [end:function]


# --8<-- [start:save]
def save(path: str) -> dict:
    """Compile `predict` ahead of time and write it to `path`; what the artifact holds."""
    import torch

    import compile_tools
    from deploying import _model

    torch._dynamo.config.enable_aot_compile = True  # on by default from torch 2.13; torch 2.11 needs it
    device = compile_tools.device()
    model = _model.build(device)
    x = torch.randn(BATCH, 64, device=device)
    torch._dynamo.mark_dynamic(x, 0)  # one graph for every batch size from 2 (0 and 1 stay specialized)
    t0 = time.perf_counter()
    with torch.no_grad():  # inference; grad mode is one of the guards the artifact keeps
        compiled = torch.compile(predict, fullgraph=True).aot_compile(((model, x), {}))
    aot_compile_s = time.perf_counter() - t0
    compiled.save_compiled_function(path)
    artifacts = compiled._artifacts  # what the file holds, before pickling
    return {
        "aot_compile_s": aot_compile_s,
        "fields": list(vars(artifacts)),
        "system_info": vars(artifacts.system_info),
        "backend": artifacts.backend_name,
        "guard_kinds": guard_kinds(artifacts.guard_manager),
    }


# --8<-- [end:save]


def guard_kinds(guard_manager) -> dict[str, int]:
    """How many guards of each kind a guard manager checks, from its printed tree."""
    import collections
    import re

    return dict(collections.Counter(re.findall(r"\+- ([A-Z_]+):", str(guard_manager))))


# --8<-- [start:load]
def load(path: str):
    """The saved function, loaded in a process that never compiled it."""
    import torch

    with open(path, "rb") as file:
        return torch.compiler.load_compiled_function(file)


# --8<-- [end:load]


def first_output(start: str, path: str) -> dict:
    """The first output in this fresh process, from torch.compile or from the saved file, timed phase by phase."""
    import torch

    import compile_tools
    from deploying import _model

    phases, device = {}, compile_tools.device()
    clock = [time.perf_counter()]

    def phase(name: str) -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()
        clock.append(time.perf_counter())
        phases[name] = clock[-1] - clock[-2]

    import torch._inductor.compile_fx  # both ways need Inductor (and, on a GPU, Triton): imported apart

    phase("import Inductor")
    if device.type == "cpu":  # the CPU's vector-instruction tests, which C++ kernels need
        from torch._inductor import cpu_vec_isa

        cpu_vec_isa.pick_vec_isa()
    phase("ISA tests")
    model = _model.build(device)
    x = torch.randn(BATCH, 64, device=device)
    phase("model on the device")
    with torch.no_grad():
        if start == "load":
            run = load(path)
        else:
            torch._dynamo.mark_dynamic(x, 0)  # as the saved function was compiled
            run = torch.compile(predict, fullgraph=True)  # compiles nothing until the first call
        phase("load")
        output = run(model, x)
        phase("first call")
        torch.testing.assert_close(output, predict(model, x))
        result = {"phases": phases, "per_call_us": per_call_us(run, model, x)}
    counters = torch._dynamo.utils.counters
    result["dynamo_graphs"] = counters["stats"]["unique_graphs"]
    result["fxgraph_cache_hit"] = counters["inductor"]["fxgraph_cache_hit"]
    if start == "load":
        result.update(what_it_checks(run, model, x))
        run.disable_guard_check()  # the loaded function's own check, in Python at every call: measured by removing it
        with torch.no_grad():
            result["unguarded_per_call_us"] = per_call_us(run, model, x)
    else:
        cache_entry = torch._dynamo.eval_frame._debug_get_cache_entry_list(predict.__code__)[0]
        result["guard_kinds"] = guard_kinds(cache_entry.guard_manager)
        result["guards_on_global"] = "TEMPERATURE" in str(cache_entry.guard_manager)
        result["compile_wrapper_us"] = own_python_us(run, model, x, function="compile_wrapper")
    return result


def per_call_us(run, model, x) -> dict[str, float]:
    """Microseconds per call of eager and of `run`, medians of rounds that alternate the two."""
    import statistics

    import compile_tools

    rounds = [[compile_tools.timing_ms(fn, model, x)["median"] * 1e3 for fn in (predict, run)] for _ in range(ROUNDS)]
    return {"eager": statistics.median(eager for eager, _ in rounds), "run": statistics.median(r for _, r in rounds)}


def own_python_us(run, model, x, function: str, calls: int = 1000) -> float:
    """Microseconds per call spent in `function`'s own Python lines (not in what it calls), under cProfile."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.runcall(lambda: [run(model, x) for _ in range(calls)])
    stats = pstats.Stats(profiler).stats  # {(file, line, name): (calls, primitive calls, own time, total, callers)}
    return sum(own for (_, _, name), (_, _, own, _, _) in stats.items() if name == function) / calls * 1e6


# --8<-- [start:checks]
def what_it_checks(run, model, x) -> dict:
    """The loaded function called where its assumptions break: each call's error, or whether it was right."""
    import copy

    import torch

    global TEMPERATURE
    model64, rows16 = copy.deepcopy(model).double(), torch.cat([x, x])

    def with_grad(model, x):
        with torch.enable_grad():
            return run(model, x)

    attempts = {  # change: the call of the loaded function, and what eager gives
        "16 rows instead of 8": lambda: (run(model, rows16), predict(model, rows16)),
        "float64 model, input": lambda: (run(model64, x.double()), predict(model64, x.double())),
        "autograd on": lambda: (with_grad(model, x), predict(model, x)),
        "TEMPERATURE = 2.0": lambda: (run(model, x), predict(model, x)),
    }
    calls = {}
    for change, call in attempts.items():
        TEMPERATURE = 2.0 if change == "TEMPERATURE = 2.0" else 1.0
        try:
            with torch.no_grad():
                output, expected = call()
        except RuntimeError as error:
            calls[change] = "RuntimeError: " + " ".join(str(error).split())
        else:
            calls[change] = f"ran; largest difference from eager: {(output - expected).abs().max().item():.1e}"
    TEMPERATURE = 1.0
    return {"calls": calls, "guard_kinds_loaded": guard_kinds(run._artifacts.guard_manager)}


# --8<-- [end:checks]


if len(sys.argv) > 1 and sys.argv[1] == "job":
    task, path = sys.argv[2], sys.argv[3]
    print(json.dumps(save(path) if task == "save" else first_output(task, path)))
    sys.exit(0)


def run_job(task: str, path: str, cache_dir: str) -> dict:
    """save, compile or load in a new Python process whose Inductor cache is `cache_dir`."""
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir)
    env.pop("TRITON_CACHE_DIR", None)  # Triton's kernel cache then lives in cache_dir too
    done = subprocess.run([sys.executable, __file__, "job", task, path], env=env,
                          capture_output=True, text=True, timeout=JOB_TIMEOUT_S)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"the {task} job failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


workdir = Path(tempfile.mkdtemp(prefix="precompiled-"))  # the artifacts: never inside the repository
artifact = str(workdir / "predict.bin")
caches = {name: tempfile.mkdtemp(dir=workdir) for name in ("saving", "compiling", "loading", "packaging")}
os.environ["TORCHINDUCTOR_CACHE_DIR"] = caches["packaging"]  # this process packages from an empty cache too
os.environ.pop("TRITON_CACHE_DIR", None)

import torch  # noqa: E402
from torch._inductor import cpu_vec_isa  # noqa: E402

import compile_tools  # noqa: E402
from deploying import _model, _serve  # noqa: E402

saved = run_job("save", artifact, caches["saving"])
# --8<-- [start:contents]
print(f"saved: {os.path.getsize(artifact) / 1024:.0f} KiB, in {saved['aot_compile_s']:.2f} s of aot_compile")
print("what it holds:", ", ".join(saved["fields"]))
print("the system it was saved on:", saved["system_info"])
print("its guards, by kind:", saved["guard_kinds"])
# --8<-- [end:contents]

starts = {  # each in a fresh process; a cache is empty the first time a process uses it
    "compile, cold cache": run_job("compile", artifact, caches["compiling"]),
    "compile, warm cache": run_job("compile", artifact, caches["compiling"]),
    "load, empty cache": run_job("load", artifact, caches["loading"]),
    "load, warm cache": run_job("load", artifact, caches["loading"]),
}
device = compile_tools.device()
model = _model.build(device)
x = torch.randn(BATCH, 64, device=device)
t0 = time.perf_counter()
cpu_vec_isa.pick_vec_isa()  # the CPU's vector-instruction tests, which the package's compile runs: timed apart
aoti_isa_s = time.perf_counter() - t0
t0 = time.perf_counter()
with torch._inductor.config.patch(force_disable_caches=True):  # timed from scratch, like the saved function
    package = torch._inductor.aoti_compile_and_package(torch.export.export(model, (x,)),
                                                       package_path=str(workdir / "model.pt2"))  # fmt: skip
aoti_compile_s = time.perf_counter() - t0
served, _, served_output = _serve.load_and_run(package, x, workdir)
assert "error" not in served, f"the package did not run in a fresh process: {served['error']}"
torch.testing.assert_close(served_output, model(x))

# --8<-- [start:starts]
print(f"ahead of time, once: aot_compile {saved['aot_compile_s']:.2f} s")
print(f"                     aoti_compile_and_package {aoti_compile_s:.2f} s,")
print(f"  the latter after the CPU's vector-instruction tests, run first and timed apart: {aoti_isa_s:.2f} s")
starts["AOTInductor package"] = {  # its serving process's phases, in the same columns
    "phases": {"import Inductor": served["import_inductor_s"], "load": served["load_s"],
               "first call": served["first_call_s"]},
}  # fmt: skip
columns = ["import Inductor", "ISA tests", "model on the device", "load", "first call"]
print("a fresh process, seconds from `import torch` done to the first output, by phase:")
print(f"{'':24}{'total':>7}" + "".join(f"{column:>{len(column) + 2}}" for column in columns))
for name, start in starts.items():
    row = f"{name:24}{sum(start['phases'].values()):7.2f}"
    for column in columns:
        value = start["phases"].get(column)
        row += f"{'-' if value is None else f'{value:.2f}':>{len(column) + 2}}"
    print(row)
print(f"(the package is served with {_serve.ISA_SETTING}=0, as the AOTInductor page advises: no ISA test)")
print(f"{'':24}{'Dynamo graphs':>15}{'FX graph cache hits':>21}")
for name, start in list(starts.items())[:4]:
    print(f"{name:24}{start['dynamo_graphs']:15d}{start['fxgraph_cache_hit']:21d}")
# --8<-- [end:starts]
cold, warm, loaded_empty, loaded_warm = (starts[name] for name in list(starts)[:4])
assert cold["fxgraph_cache_hit"] == 0 and warm["fxgraph_cache_hit"] >= 1, "the cache warms torch.compile"
assert cold["dynamo_graphs"] == warm["dynamo_graphs"] == 1, "torch.compile traces in every process"
assert loaded_empty["dynamo_graphs"] == loaded_warm["dynamo_graphs"] == 0, "the loaded function traces nothing"
compile_and_call = {name: start["phases"]["load"] + start["phases"]["first call"] for name, start in starts.items()}
assert compile_and_call["load, warm cache"] < compile_and_call["compile, warm cache"], "loading beats a warm compile"

# --8<-- [start:per-call]
print(f"per call, µs (medians of {ROUNDS} rounds, each timing eager and the compiled function in turn):")
print(f"{'':38}{'eager':>9}{'compiled':>10}{'eager/compiled':>16}")
per_call = {name: starts[name]["per_call_us"] for name in list(starts)[:4]}
per_call["load, warm, no guard check"] = loaded_warm["unguarded_per_call_us"]
for name, times in per_call.items():
    print(f"{name:38}{times['eager']:9.1f}{times['run']:10.1f}{times['eager'] / times['run']:15.2f}x")
print(f"Dynamo's compile_wrapper, its own Python per call under cProfile: {warm['compile_wrapper_us']:.1f} µs")
# --8<-- [end:per-call]

# --8<-- [start:checks-out]
print("guards torch.compile checks, by kind:", warm["guard_kinds"], "; on TEMPERATURE:", warm["guards_on_global"])
print("guards the loaded function checks:  ", loaded_warm["guard_kinds_loaded"])
for change, outcome in loaded_warm["calls"].items():
    print(f"{change:22} -> {outcome}")
# --8<-- [end:checks-out]
calls = loaded_warm["calls"]
difference = {change: float(outcome.split()[-1]) for change, outcome in calls.items() if outcome.startswith("ran")}
assert difference["16 rows instead of 8"] < 1e-4, "the batch was saved dynamic: another size runs, right"
assert "dtype mismatch" in calls["float64 model, input"] and "grad_mode" in calls["autograd on"], "a guard refuses it"
assert difference["TEMPERATURE = 2.0"] > 0.1, "the global's guard was dropped: a wrong answer, no error"
assert warm["guards_on_global"], "torch.compile guards the global it read"

# --8<-- [start:took]
print(f"this example ran in {time.perf_counter() - started:.0f} s")
# --8<-- [end:took]
