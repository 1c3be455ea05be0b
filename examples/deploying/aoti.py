"""AOTInductor: the exported model compiled ahead of time into a .pt2 package, run without its Python code.

Run it as it is: `python examples/deploying/aoti.py`. The package is
loaded in fresh Python processes that import torch and nothing else; `torch.compile`'s cold and
warm starts run in fresh processes too (this same file, started with the argument `compile-job`).
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

started = time.perf_counter()


def compile_job(cache_dir: str) -> None:
    """torch.compile's start in this fresh process: import, build, compile, first call; prints one JSON line.

    The first output's seconds are split: importing the compiler's modules (which torch.compile would
    otherwise import on its first call), Dynamo's tracing and guards, and its backend (AOTAutograd and
    Inductor, cache lookups included), from torch._dynamo.utils.compile_times as the compile-time page reads it.
    """
    t0 = time.perf_counter()
    import torch

    import compile_tools
    from deploying import _model

    imported = time.perf_counter()
    import torch._inductor.compile_fx  # noqa: F401

    compiler_imported = time.perf_counter()
    device = compile_tools.device()
    model = _model.build(device)
    x = torch.randn(8, 64, device=device)
    output = torch.compile(model)(x)
    if device.type == "cuda":
        torch.cuda.synchronize()
    done = time.perf_counter()
    torch.testing.assert_close(output, model(x))
    counters = torch._dynamo.utils.counters["inductor"]
    headers, values = torch._dynamo.utils.compile_times(repr="csv", aggregate=True)
    stage_s = {key: float(value) for key, value in zip(headers, values, strict=True)}
    backend_s = stage_s["OutputGraph.call_user_compiler"]
    print(json.dumps({"import_s": imported - t0, "first_output_s": done - imported,
                      "import_compiler_s": compiler_imported - imported,
                      "dynamo_s": stage_s["_compile.compile_inner"] - backend_s, "backend_s": backend_s,
                      "fxgraph_cache_hit": counters["fxgraph_cache_hit"]}))  # fmt: skip


if len(sys.argv) > 2 and sys.argv[1] == "compile-job":
    compile_job(sys.argv[2])
    sys.exit(0)

import torch

import compile_tools
from deploying import _libstdcxx, _model, _serve

device = compile_tools.device()
workdir = Path(tempfile.mkdtemp(prefix="aoti-"))  # the package and its inputs: never inside the repository
# The checks on the inputs' sizes are generated into the package; they run only when this variable is set.
CHECK_INPUTS = "AOTI_RUNTIME_CHECK_INPUTS"

# --8<-- [start:package]
model = _model.build(device)
x = torch.randn(8, 64, device=device)
exported = torch.export.export(model, (x,))

t0 = time.perf_counter()
with torch._inductor.config.patch(force_disable_caches=True):  # timed from scratch, whatever the cache holds
    package = torch._inductor.aoti_compile_and_package(exported, package_path=str(workdir / "model.pt2"))
aoti_compile_s = time.perf_counter() - t0
print("package:", Path(package).name)
# --8<-- [end:package]

# --8<-- [start:contents]
with zipfile.ZipFile(package) as archive:
    entries = archive.infolist()
    for entry in entries:
        print(f"{entry.file_size / 1024:9.1f} KiB  {entry.filename}")
    shared_object = next(archive.read(entry) for entry in entries if entry.filename.endswith(".so"))
weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
print(f"package: {os.path.getsize(package) / 1024:.0f} KiB on disk; the model's weights: {weight_bytes / 1024:.0f} KiB")
head_weight_inside = model.head.weight.detach().cpu().numpy().tobytes() in shared_object
print("head.weight's bytes found inside the .so:", head_weight_inside)
# --8<-- [end:contents]
suffixes = [Path(entry.filename).suffix for entry in entries if "/aotinductor/" in entry.filename]
assert suffixes.count(".so") == 1, "one shared object: the compiled wrapper, with the weights"
assert head_weight_inside, "the weights are baked into the shared object"
wrapper = workdir / "wrapper.so"
wrapper.write_bytes(shared_object)
assert _libstdcxx.needs_shared_libstdcxx(wrapper), (
    "the package's .so carries its own copy of libstdc++, because the compiler in CXX links it statically: "
    "it will not load into a Python process (docs/deploying/aoti_load.md, 'A package that does not load'); "
    "build it with CXX=g++"
)
if device.type == "cuda":
    assert ".cubin" in suffixes, "the Triton kernels, compiled to GPU binaries"
else:
    assert sum(name.endswith(".kernel.cpp") for name in archive.namelist()) == 1, "the C++ kernels' source"

# --8<-- [start:child]
served, _, served_output = _serve.load_and_run(package, x, workdir)
assert "error" not in served, f"the package did not run in a fresh process: {served['error']}"
print("model code imported by the serving process:", served["model_code"] or "none")
torch.testing.assert_close(served_output, model(x))
print("its output matches eager: max difference", f"{(served_output - model(x)).abs().max().item():.1e}")
# --8<-- [end:child]
assert served["model_code"] == [], "the serving process never imported the model's module"

# --8<-- [start:bad-input]
wrong_batch = torch.randn(16, 64, device=device)  # the package was compiled for 8 rows
checked_env = _serve.serving_env(**{CHECK_INPUTS: "1"})
checked, checked_stderr, _ = _serve.load_and_run(package, wrong_batch, workdir, env=checked_env)
reason = next(line for line in checked_stderr.splitlines() if "unmatched" in line)
print(f"with {CHECK_INPUTS}=1, the process's stderr says: {reason.strip()}")
print(f"  and the call raises RuntimeError: {checked['error']}")
unchecked_env = {name: value for name, value in _serve.serving_env().items() if name != CHECK_INPUTS}
unchecked, _, unchecked_output = _serve.load_and_run(package, wrong_batch, workdir, env=unchecked_env)
if "error" in unchecked:
    print("without it:", unchecked["error"])
else:
    shape_matches = unchecked_output.shape == model(wrong_batch).shape
    right = shape_matches and torch.allclose(unchecked_output, model(wrong_batch), atol=1e-4)
    print(f"without it: no error; output of shape {tuple(unchecked_output.shape)}, equal to eager's: {right}")
# --8<-- [end:bad-input]
assert "error" in checked and "expected: 8" in reason and "got: 16" in reason, "the check names both sizes"
if device.type == "cpu":
    assert "error" not in unchecked and not right, "unchecked, the package returns a wrong result silently"

# --8<-- [start:load-time]
without_setting = {name: value for name, value in os.environ.items() if name != _serve.ISA_SETTING}
isa_settings = {"as torch loads it": {}, **{f"{_serve.ISA_SETTING}={v}": {_serve.ISA_SETTING: v} for v in "10"}}
loads = {}
for label, setting in isa_settings.items():
    with tempfile.TemporaryDirectory() as empty_cache:  # as on a machine that never ran Inductor
        env = {**without_setting, **setting, "TORCHINDUCTOR_CACHE_DIR": empty_cache}
        run, stderr, output = _serve.load_and_run(package, x, workdir, env=env)
        test_libraries = len(list(Path(empty_cache).rglob("*.so")))  # what the probes compiled
    assert "error" not in run, f"the package did not load: {run['error']}"
    builds, build_s = _serve.probe_calls(run, "check_build")
    mismatch = next((line.split("] ")[-1] for line in stderr.splitlines() if "mismatch" in line), None)
    loads[label] = {**run, "builds": builds, "libraries": test_libraries, "mismatch": mismatch, "output": output}
    print(f"{label}, empty Inductor cache: aoti_load_package {run['load_s']:.3f} s")
    _, pick_s = _serve.probe_calls(run, "pick_vec_isa")
    print(f"  in pick_vec_isa {pick_s:5.2f} s; in check_build {build_s:5.2f} s, "
          f"{builds} test programs; libraries left in the cache: {test_libraries}")  # fmt: skip
    print(f"  the loader's warning: {mismatch or 'none'}")
# --8<-- [end:load-time]
default_load, only_base_skipped, no_probe = loads.values()
_, probe_s = _serve.probe_calls(default_load, "pick_vec_isa")
assert default_load["builds"] > 0 and default_load["libraries"] > 0, "the default load compiles test programs"
assert probe_s > default_load["load_s"] / 2, "most of a default load is the ISA probe"
assert only_base_skipped["builds"] < default_load["builds"], "=1 skips the base test, not the extensions' tests"
assert no_probe["builds"] == no_probe["libraries"] == 0, "=0 builds no test program"
assert default_load["load_s"] - no_probe["load_s"] > probe_s / 2, "without the probe, the load saves its time"
assert "AOTI_CPU_ISA" in no_probe["mismatch"] and not default_load["mismatch"], "the warning is =0's doing"
torch.testing.assert_close(no_probe["output"], model(x))  # the mismatch is only reported: the package runs as built

# --8<-- [start:timing]
with tempfile.TemporaryDirectory() as cache_dir:
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir)  # a fresh, empty Inductor cache
    env.pop("TRITON_CACHE_DIR", None)  # Triton's cache then lives in cache_dir too
    starts = {}
    for start in ("cold", "warm"):  # the warm process finds the cache the cold one filled
        done = subprocess.run([sys.executable, __file__, "compile-job", cache_dir], env=env,
                              capture_output=True, text=True, check=True, timeout=300)  # fmt: skip
        starts[start] = json.loads(done.stdout.strip().splitlines()[-1])
aoti_starts = [served] + [_serve.load_and_run(package, x, workdir)[0] for _ in range(2)]
aoti = {key: sorted(run[key] for run in aoti_starts)[1] for key in ("import_inductor_s", "load_s", "first_call_s")}

print(f"compiling ahead of time (aoti_compile_and_package): {aoti_compile_s:6.2f} s, once, before deploying")
print("seconds from `import torch` done to the first output, in a fresh process:")
print(f"  torch.compile, cold cache:  {starts['cold']['first_output_s']:6.2f}  (build, compile, first call)")
print(f"  torch.compile, warm cache:  {starts['warm']['first_output_s']:6.2f}  "
      f"(FX graph cache hits: {starts['warm']['fxgraph_cache_hit']})")  # fmt: skip
stages = {"import the compiler's modules": "import_compiler_s", "Dynamo: tracing, guards": "dynamo_s",
          "AOTAutograd + Inductor": "backend_s"}  # fmt: skip
for run in starts.values():
    run["rest_s"] = run["first_output_s"] - sum(run[key] for key in stages.values())
print(f"    {'of which, in seconds:':34}{'cold':>8}{'warm':>8}")
for label, key in {**stages, "the rest (model, first call)": "rest_s"}.items():
    print(f"      {label:32}{starts['cold'][key]:8.2f}{starts['warm'][key]:8.2f}")
print(f"  AOTInductor package:        {sum(aoti.values()):6.2f}  ({_serve.ISA_SETTING}=0; medians of 3 processes:)")
print(f"    import torch._inductor     {aoti['import_inductor_s']:6.3f}")
print(f"    aoti_load_package          {aoti['load_s']:6.3f}")
print(f"    first call                 {aoti['first_call_s']:6.3f}")
default_start = sum(default_load[key] for key in aoti)
print(f"  AOTInductor package:        {default_start:6.2f}  (as torch loads it, empty cache: above)")
print(f"importing torch itself took {starts['cold']['import_s']:.2f} s in the cold process")
# --8<-- [end:timing]
aoti_first_output = sum(aoti.values())
assert starts["cold"]["fxgraph_cache_hit"] == 0 and starts["warm"]["fxgraph_cache_hit"] >= 1, starts
assert starts["warm"]["first_output_s"] < starts["cold"]["first_output_s"], "the cache helps torch.compile"
assert starts["warm"]["backend_s"] < starts["cold"]["backend_s"], "the cache saves the backend's work"
if device.type == "cuda":
    warm = starts["warm"]
    assert warm["import_compiler_s"] > warm["first_output_s"] / 2, "a warm start is mostly the compiler's import"
assert aoti_first_output < starts["warm"]["first_output_s"], "the package starts faster than even a warm compile"

# --8<-- [start:took]
print(f"this example ran in {time.perf_counter() - started:.0f} s")
# --8<-- [end:took]
