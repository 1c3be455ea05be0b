"""What compiling costs, cold and warm, and how the caches and portable cache artifacts cut it.

Run it as it is: `python examples/benchmarking/compile_time.py`. Each compilation runs in a fresh
Python process (this same file, started with the argument `job`), because Dynamo's and
Inductor's in-memory caches live as long as the process; only the on-disk caches survive.
"""
# execdocs: devices=cuda

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

started = time.perf_counter()

# Stages to show, in pipeline order: (name on the page, key in torch._dynamo.utils.compile_times).
STAGES = [
    ("Dynamo, everything included", "_compile.compile_inner"),
    ("backend: AOTAutograd + Inductor", "OutputGraph.call_user_compiler"),
    ("Inductor: forward graph", "compile_fx.<locals>.fw_compiler_base"),
    ("Inductor: backward graph", "compile_fx.<locals>.bw_compiler"),
    ("Inductor: lowering (GraphLowering.run)", "GraphLowering.run"),
    ("Inductor: code generation", "GraphLowering.codegen"),
    ("Inductor: compile the kernels (Triton)", "async_compile.precompile"),
    ("Inductor: wait for kernel compiles", "async_compile.wait"),
]


# --8<-- [start:job]
def job(mode: str, artifacts: str) -> None:
    """One training step of a fresh model, compiled in this fresh process; prints one JSON line."""
    phases = {}  # what this process spent its seconds on, in order

    def phase(name, t0):
        phases[name] = time.perf_counter() - t0
        return time.perf_counter()

    t0 = time.perf_counter()
    import torch
    from torch import nn

    t0 = phase("import torch", t0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    width = 1024 if device.type == "cuda" else 64
    torch.manual_seed(0)
    model = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)).to(
        device
    )
    x = torch.randn(256, width, device=device)
    t0 = phase("build the model on the device", t0)

    if mode == "load":  # portable artifacts saved by another process, into an empty cache folder
        torch.compiler.load_cache_artifacts(Path(artifacts).read_bytes())
    t0 = phase("load the portable artifacts", t0)
    import torch._inductor.compile_fx  # noqa: F401 - the compiler's modules, which torch.compile imports on first use

    t0 = phase("import the compiler", t0)
    loss = torch.compile(model)(x).square().mean()  # forward: Dynamo, AOTAutograd, Inductor
    loss.backward()  # the backward graph is compiled on its first use
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = phase("first training step", t0)

    if mode == "cold":  # everything this process compiled, as one blob of bytes
        blob, _info = torch.compiler.save_cache_artifacts()
        Path(artifacts).write_bytes(blob)
    phase("save the portable artifacts", t0)

    counters = torch._dynamo.utils.counters
    headers, values = torch._dynamo.utils.compile_times(repr="csv", aggregate=True)
    print(
        json.dumps(
            {
                "device": device.type,
                "phases_s": phases,
                "first_step_s": phases["first training step"],
                "fxgraph_cache_hit": counters["inductor"]["fxgraph_cache_hit"],
                "fxgraph_cache_miss": counters["inductor"]["fxgraph_cache_miss"],
                "autograd_cache_hit": counters["aot_autograd"]["autograd_cache_hit"],
                "autograd_cache_miss": counters["aot_autograd"]["autograd_cache_miss"],
                "stages_s": {key: float(value) for key, value in zip(headers, values, strict=True)},
                "printed_at": time.time(),  # the parent times the exit from here
            }
        ),
        flush=True,
    )


# --8<-- [end:job]


if len(sys.argv) > 1 and sys.argv[1] == "job":
    job(sys.argv[2], sys.argv[3])
    sys.exit(0)


# --8<-- [start:run-jobs]
def run_job(mode: str, cache_dir: str, artifacts: str, **settings: str) -> dict:
    """Run job(mode) in a new Python process whose Inductor cache is `cache_dir`, with `settings` in its environment."""
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir, **settings)
    env.pop("TRITON_CACHE_DIR", None)  # Triton's kernel cache then lives inside cache_dir too
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, __file__, "job", mode, artifacts], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"the {mode} job failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_s"] = time.perf_counter() - t0
    result["phases_s"]["exit"] = time.time() - result["printed_at"]
    result["phases_s"]["start Python"] = result["process_s"] - sum(result["phases_s"].values())
    return result


with tempfile.TemporaryDirectory() as cache_a, tempfile.TemporaryDirectory() as cache_b:
    artifacts = os.path.join(cache_a, "portable-artifacts.bin")
    runs = {
        "cold": run_job("cold", cache_a, artifacts),  # empty cache folder A
        "warm": run_job("warm", cache_a, artifacts),  # the same folder A, now filled
        "loaded": run_job("load", cache_b, artifacts),  # empty folder B + the saved artifacts
        # One change against warm: compile in this process, with no pool of compile worker processes.
        "warm, no pool": run_job("warm", cache_a, artifacts, TORCHINDUCTOR_COMPILE_THREADS="1"),
    }
    artifact_kib = os.path.getsize(artifacts) / 1024

phases = ["start Python", "import torch", "build the model on the device", "load the portable artifacts",
          "import the compiler", "first training step", "save the portable artifacts", "exit"]  # fmt: skip
print(f"{'seconds':34}" + "".join(f"{name:>15}" for name in runs))
for label in phases:
    print(f"{label:34}" + "".join(f"{run['phases_s'][label]:15.2f}" for run in runs.values()))
for label, key in [
    ("whole process", "process_s"),
    ("FX graph cache hits", "fxgraph_cache_hit"),
    ("FX graph cache misses", "fxgraph_cache_miss"),
    ("AOTAutograd cache hits", "autograd_cache_hit"),
    ("AOTAutograd cache misses", "autograd_cache_miss"),
]:
    cells = [run[key] for run in runs.values()]
    print(f"{label:34}" + "".join(f"{c:15.2f}" if isinstance(c, float) else f"{c:15d}" for c in cells))
print(f"portable cache artifacts: {artifact_kib:.0f} KiB")
# --8<-- [end:run-jobs]
cold, warm, loaded, no_pool = runs.values()
assert cold["fxgraph_cache_hit"] == 0 and cold["fxgraph_cache_miss"] >= 2, "cold: forward and backward compiled"
assert cold["autograd_cache_hit"] == 0
for run in (warm, loaded, no_pool):
    assert run["fxgraph_cache_miss"] == 0 and run["autograd_cache_hit"] >= 1, run
assert warm["first_step_s"] < cold["first_step_s"] and loaded["first_step_s"] < cold["first_step_s"]
if cold["device"] == "cuda":
    # Loading the artifacts imports the compiler, so the loaded process pays that import before its first step.
    assert loaded["phases_s"]["load the portable artifacts"] > 0.5 * warm["phases_s"]["import the compiler"]
    assert warm["phases_s"]["exit"] > 3 * no_pool["phases_s"]["exit"], "the worker pool makes the exit slow"
    assert no_pool["process_s"] < warm["process_s"]

# --8<-- [start:stages]
print(f"{'seconds in':40}" + "".join(f"{name:>15}" for name in runs))
for label, key in STAGES:
    cells = [run["stages_s"].get(key) for run in runs.values()]
    print(f"{label:40}" + "".join(f"{c:15.2f}" if c is not None else f"{'-':>15}" for c in cells))
# --8<-- [end:stages]
backend = [run["stages_s"].get("OutputGraph.call_user_compiler") for run in (cold, warm)]
dynamo_total = cold["stages_s"].get("_compile.compile_inner")
if None not in backend:
    assert backend[1] < backend[0], "a cache hit skips the backend's work"
    if dynamo_total:
        assert backend[0] > 0.5 * dynamo_total, "cold: most of the compile is in the backend"
for run in (warm, loaded, no_pool):
    assert "GraphLowering.run" not in run["stages_s"], "a cache hit lowers nothing"

# --8<-- [start:took]
print(f"this example ran in {time.perf_counter() - started:.0f} s")
# --8<-- [end:took]
