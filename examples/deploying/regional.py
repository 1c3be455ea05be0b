"""Compile faster: compile the repeated block instead of the whole model, and carry the caches along.

Run it as it is: `python examples/deploying/regional.py` (on a GPU if torch sees one). Every compile
runs in a fresh Python process with an empty Inductor cache (this same file, started with the
argument `job`), so each one is cold unless it is given cache artifacts.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

started = time.perf_counter()
DEPTH, WIDTH, BATCH = 8, 64, 32
ROUNDS = 5  # eager and compiled timed in turn, so that a slow moment of the machine falls on both


# --8<-- [start:job]
def job(mode: str, artifacts: str) -> None:
    """Compile the model in this fresh process, `full` or `regional`; prints one JSON line."""
    import copy
    import statistics

    import torch
    from torch._inductor import cpu_vec_isa

    import compile_tools
    from deploying import _model

    # Inductor tests which vector instructions the CPU's C++ can use by building programs
    # (see the page "Loading an AOTInductor package", "Where the load time goes"); time those builds, once per process
    probe_s = []
    build = cpu_vec_isa.VecISA.check_build

    def timed_build(isa, code):
        start = time.perf_counter()
        try:
            return build(isa, code)
        finally:
            probe_s.append(time.perf_counter() - start)

    cpu_vec_isa.VecISA.check_build = timed_build

    device = compile_tools.device()
    model = _model.build(device, width=WIDTH, depth=DEPTH)
    x = torch.randn(BATCH, WIDTH, device=device)
    expected = model(x)
    eager = copy.deepcopy(model)  # stays uncompiled: regional compilation changes `model` in place

    if mode == "regional-loaded":  # Mega-Cache: what another process compiled, into this empty cache
        torch.compiler.load_cache_artifacts(Path(artifacts).read_bytes())
    t0 = time.perf_counter()
    if mode == "full":
        run = torch.compile(model)  # one graph: the whole model
    else:
        for layer in model.layers:  # one graph: a block, reused by every layer
            layer.compile()
        run = model
    output = run(x)
    if device.type == "cuda":
        torch.cuda.synchronize()
    compile_s = time.perf_counter() - t0
    torch.testing.assert_close(output, expected)

    if mode == "regional":
        blob, _info = torch.compiler.save_cache_artifacts()
        Path(artifacts).write_bytes(blob)
    counters = torch._dynamo.utils.counters
    result = {
        "device": device.type,
        "compile_s": compile_s,
        "isa_probe_s": sum(probe_s),
        "dynamo_graphs": counters["stats"]["unique_graphs"],
        "inductor_compiles": counters["inductor"]["fxgraph_cache_miss"],
        "inductor_cache_hits": counters["inductor"]["fxgraph_cache_hit"],
    }
    with torch.profiler.profile() as profile:  # Dynamo and autograd name their calls in the profile
        run(x)
    names = [event.name for event in profile.events()]
    result["regions_per_call"] = sum(name.startswith("Torch-Compiled Region") for name in names)
    result["autograd_functions_per_call"] = names.count("CompiledFunction")  # AOTAutograd's autograd.Function
    result["kernels_per_call"] = compile_tools.gpu_kernel_launches(run, x) if device.type == "cuda" else None
    for grad in (True, False):  # as called above, then without autograd, as inference should run
        with torch.set_grad_enabled(grad):
            run(x)  # without grad, Dynamo compiles once more: grad mode is one of its guards
            rounds = [(compile_tools.timing_ms(eager, x)["median"], compile_tools.timing_ms(run, x)["median"])
                      for _ in range(ROUNDS)]  # fmt: skip
        speedups = [eager / compiled for eager, compiled in rounds]  # above 1: compiled is faster
        result["grad" if grad else "no_grad"] = {
            "step_ms": statistics.median(compiled for _, compiled in rounds),
            "eager_ms": statistics.median(eager for eager, _ in rounds),
            "speedup": statistics.median(speedups),
            "speedup_range": f"{min(speedups):.2f}-{max(speedups):.2f}",
            # Another process slows whole rounds and can't speed one up: each side's fastest round is the
            # one nothing got in the way of
            "fastest_speedup": min(eager for eager, _ in rounds) / min(compiled for _, compiled in rounds),
        }
    print(json.dumps(result))


# --8<-- [end:job]

if len(sys.argv) > 1 and sys.argv[1] == "job":
    job(sys.argv[2], sys.argv[3])
    sys.exit(0)


# --8<-- [start:run-jobs]
def run_job(mode: str, artifacts: str) -> dict:
    """job(mode) in a new Python process with its own, empty Inductor cache."""
    with tempfile.TemporaryDirectory() as cache_dir:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir)
        env.pop("TRITON_CACHE_DIR", None)  # Triton's kernel cache then lives in cache_dir too
        done = subprocess.run([sys.executable, __file__, "job", mode, artifacts], env=env,
                              capture_output=True, text=True, check=True)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


with tempfile.TemporaryDirectory() as scratch:
    artifacts = os.path.join(scratch, "regional-artifacts.bin")
    runs = {mode: run_job(mode, artifacts) for mode in ("full", "regional", "regional-loaded")}
    artifact_kib = os.path.getsize(artifacts) / 1024

print(f"{DEPTH} identical blocks, batch {BATCH} x width {WIDTH}")
print(f"{'':38}{'full':>10}{'regional':>12}{'+ Mega-Cache':>14}")
rows = [
    ("Dynamo graphs", "dynamo_graphs", "d"),
    ("Inductor compiles", "inductor_compiles", "d"),
    ("Inductor cache hits", "inductor_cache_hits", "d"),
    ("compile + first call (s)", "compile_s", ".2f"),
    ("  of it, the CPU's ISA tests (s)", "isa_probe_s", ".2f"),
    ("compiled regions per call", "regions_per_call", "d"),
    ("  autograd functions of them", "autograd_functions_per_call", "d"),
    ("GPU kernels per call", "kernels_per_call", "d"),
]
for grad, heading in (("grad", "with autograd"), ("no_grad", "without (no_grad)")):
    rows += [
        (f"{heading}, ms per call", (grad, "step_ms"), ".3f"),
        ("  eager, same rounds", (grad, "eager_ms"), ".3f"),
        (f"  speedup, eager / compiled, {ROUNDS} rounds", (grad, "speedup"), ".2f"),
        ("  range of the rounds", (grad, "speedup_range"), ""),
        ("  fastest eager / fastest compiled", (grad, "fastest_speedup"), ".2f"),
    ]
for label, key, fmt in rows:
    cells = [runs[mode][key] if isinstance(key, str) else runs[mode][key[0]][key[1]] for mode in runs]
    cells = ["-" if cell is None else f"{cell:{fmt}}" for cell in cells]  # no GPU kernels on the CPU
    print(f"{label:38}" + "".join(f"{cell:>{width}}" for cell, width in zip(cells, (10, 12, 14), strict=True)))
print(f"cache artifacts: {artifact_kib:.0f} KiB")
# --8<-- [end:run-jobs]
full, regional, loaded = runs["full"], runs["regional"], runs["regional-loaded"]
assert full["dynamo_graphs"] == 1 and full["inductor_compiles"] == 1, "full: one graph of the whole model"
assert regional["dynamo_graphs"] == 1 and regional["inductor_compiles"] == 1, "regional: one block, reused"
assert loaded["inductor_compiles"] == 0 and loaded["inductor_cache_hits"] >= 1, "Mega-Cache: nothing compiled"
assert full["regions_per_call"] == 1, "full: the whole forward is one compiled region"
assert regional["regions_per_call"] == loaded["regions_per_call"] == DEPTH, "regional: one region per layer"
for run in runs.values():
    assert run["autograd_functions_per_call"] == run["regions_per_call"], "with grad, each region is one"
    gain = "fastest_speedup" if run["device"] == "cpu" else "speedup"  # a shared CPU: see fastest_speedup
    assert run["no_grad"][gain] > run["grad"][gain], "without autograd, compiled gains on eager"
if full["device"] == "cuda":  # a CPU start also runs the ISA tests, which no cache holds: see the table
    assert loaded["compile_s"] < regional["compile_s"], "the loaded artifacts make the start faster"
    assert regional["kernels_per_call"] >= full["kernels_per_call"], "no fusion across two blocks' boundary"

# --8<-- [start:took]
print(f"this example ran in {time.perf_counter() - started:.0f} s")
# --8<-- [end:took]
