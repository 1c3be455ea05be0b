"""AOTInductor per call: the .pt2 package against torch.compile and eager, timed in interleaved rounds; and
one package exported with a dynamic batch dimension, called at two batch sizes and at one outside its range.

Run it as it is: `python examples/deploying/aoti_per_call.py` (on a GPU if torch sees one). Both packages
are compiled in this process; the call outside the range runs in a fresh process (`_serve.py`), and so do,
on a GPU, the first calls under CUDA's two ways of loading kernels (this same file, started with the
argument `first-calls`).
"""

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import torch

import compile_tools
from benchmarking import _profile_diff
from deploying import _model, _serve


# --8<-- [start:first-calls-job]
def first_calls_job(package: str, sizes: list[int]) -> None:
    """In this fresh process: the CUDA context's start, the package's first and second call at each batch size,
    and the kernels a call at each size launches; prints one JSON line."""
    start = time.perf_counter()
    torch.zeros(1, device="cuda")  # creates the CUDA context
    torch.cuda.synchronize()
    context_s = time.perf_counter() - start
    runner = torch._inductor.aoti_load_package(package)
    calls_ms = {}
    for rows in sizes:
        x = torch.randn(rows, 64, device="cuda")
        calls_ms[rows] = [_profile_diff.time_call(lambda x=x: runner(x), torch.cuda.synchronize)[1] for _ in range(2)]
    kernels = {}
    for rows in sizes:  # after the timed calls, which must not include the profiler's start
        x = torch.randn(rows, 64, device="cuda")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as profile:
            runner(x)
            torch.cuda.synchronize()
        cuda_events = [e for e in profile.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        kernels[rows] = sorted({event.name for event in cuda_events})
    print(json.dumps({"context_s": context_s, "calls_ms": calls_ms, "kernels": kernels}))


# --8<-- [end:first-calls-job]
if len(sys.argv) > 2 and sys.argv[1] == "first-calls":
    first_calls_job(sys.argv[2], [int(rows) for rows in sys.argv[3:]])
    sys.exit(0)

device = compile_tools.device()
cuda = device.type == "cuda"
if cuda:  # a CUDA package's kernels are Triton's, not vectorized C++: skip the ISA tests, a minute (aoti_load.md)
    os.environ.update(_serve.SKIP_ISA_PROBES)  # for this process's Inductor and every process it starts
    torch._inductor.config.cpp.vec_isa_ok = False  # the same, had Inductor's config read the environment already
else:
    # One thread, before anything compiles (the C++ kernels are generated for a thread count): on a CPU shared
    # with other work, a call that waits at OpenMP's barrier for a descheduled thread takes milliseconds.
    torch.set_num_threads(1)
workdir = Path(tempfile.mkdtemp(prefix="aoti-per-call-"))  # the packages: never inside the repository
CHECK_INPUTS = "AOTI_RUNTIME_CHECK_INPUTS"  # the package checks its inputs' sizes only when this is set
ROUNDS = 21


# --8<-- [start:per-call]
def gpu_busy_us(step, calls: int = 50) -> tuple[float, float]:
    """The GPU's busy time per call (the sum of its kernels and copies, from the profiler), and kernels per call."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            step()
        torch.cuda.synchronize()
    device_events = [event for event in prof.events() if event.device_type == torch.autograd.DeviceType.CUDA]
    return sum(event.time_range.elapsed_us() for event in device_events) / calls, len(device_events) / calls


def spread(values: list[float]) -> tuple[float, float, float]:
    """Median, 10th and 90th percentile."""
    deciles = statistics.quantiles(values, n=10)
    return statistics.median(values), deciles[0], deciles[-1]


model = _model.build(device)
x = torch.randn(8, 64, device=device)  # aoti.py's input
exported = torch.export.export(model, (x,))
package = torch._inductor.aoti_compile_and_package(exported, package_path=str(workdir / "model.pt2"))
variants = {
    "eager": model,
    "torch.compile": torch.compile(model),
    "AOTInductor package": torch._inductor.aoti_load_package(package),  # loaded into this process
}
with torch.no_grad():  # as a server calls a model: no autograd
    expected = model(x)
    outputs = {name: fn(x) for name, fn in variants.items()}  # torch.compile compiles here
    # host and wall ms of every call, in ROUNDS rounds of a block of each variant; the order reverses every round
    times = _profile_diff.paired_times({name: (lambda fn=fn: fn(x)) for name, fn in variants.items()},
                                       pairs=ROUNDS, block_ms=20.0)  # fmt: skip
    busy = {name: gpu_busy_us(lambda fn=fn: fn(x)) for name, fn in variants.items()} if cuda else {}
round_wall = {name: [statistics.median(w for _, w in block) * 1e3 for block in times[name]] for name in variants}
round_host = {name: [statistics.median(h for h, _ in block) * 1e3 for block in times[name]] for name in variants}
print(f"per call, µs: median of {ROUNDS} rounds (10th-90th percentile of the rounds), "
      f"{len(times['eager'][0])} calls per variant and round")  # fmt: skip
print(f"{'':22}{'wall clock':>22}" + (f"{'host (until it returns)':>27}{'GPU busy':>10}{'kernels':>9}" if cuda else ""))
for name in variants:
    median, low, high = spread(round_wall[name])
    line = f"{name:22}{median:9.1f} ({low:5.1f}-{high:5.1f})"
    if cuda:
        host, host_low, host_high = spread(round_host[name])
        line += f"{host:13.1f} ({host_low:5.1f}-{host_high:5.1f}){busy[name][0]:10.1f}{busy[name][1]:9.0f}"
    print(line)
ratios = {
    name: [e / v for e, v in zip(round_wall["eager"], round_wall[name], strict=True)] for name in list(variants)[1:]
}
print("eager's wall clock / the variant's, per round (above 1: faster than eager):")
for name, values in ratios.items():
    median, low, high = spread(values)
    print(f"  {name:22}{median:5.2f}x  (10th-90th percentile {low:.2f}-{high:.2f}x)")
package_vs_compile = [
    c / p for c, p in zip(round_wall["torch.compile"], round_wall["AOTInductor package"], strict=True)
]
median, low, high = spread(package_vs_compile)
print(f"torch.compile's wall clock / the package's, per round: {median:.2f}x ({low:.2f}-{high:.2f}x; "
      f"every round between {min(package_vs_compile):.2f} and {max(package_vs_compile):.2f}x)")  # fmt: skip
# --8<-- [end:per-call]
for name, output in outputs.items():
    torch.testing.assert_close(output, expected, msg=lambda m, name=name: f"{name}: {m}")
assert statistics.median(package_vs_compile) > 1, "in the median round, the package's call is the shorter"
with zipfile.ZipFile(package) as archive:
    files = archive.namelist()
    cpp_kernels = [name for name in files if name.endswith(".cpp") and b"cpp_fused" in archive.read(name)]
if cuda:  # what TORCHINDUCTOR_VEC_ISA_OK=0 could have changed: the C++ kernels (isa_setting.py); here there are none
    assert not cpp_kernels and any(name.endswith(".cubin") for name in files), cpp_kernels
else:
    assert cpp_kernels, "on the CPU the kernels are C++"

# --8<-- [start:dynamic-batch]
batch = torch.export.Dim("batch", min=2, max=64)  # dimension 0 of the input may take any size in 2..64
exported = torch.export.export(model, (x,), dynamic_shapes=({0: batch},))
print("exported: input", tuple(exported.graph_module.graph.find_nodes(op="placeholder")[-1].meta["val"].shape),
      "with", exported.range_constraints)  # fmt: skip
dynamic_package = torch._inductor.aoti_compile_and_package(exported, package_path=str(workdir / "dynamic.pt2"))
with zipfile.ZipFile(dynamic_package) as archive:
    names = archive.namelist()
    wrapper = next(archive.read(name).decode() for name in names if name.endswith(".wrapper.cpp"))
shared_objects = [name for name in names if name.endswith(".so")]
reads_batch = re.search(r"int64_t (\w+) = (\w+)_size\[0\];", wrapper)
print(f"shared objects in the package: {len(shared_objects)}; the wrapper reads the batch from the input:",
      reads_batch.group(0) if reads_batch else "not found")  # fmt: skip
runner = torch._inductor.aoti_load_package(dynamic_package)
synchronize = torch.cuda.synchronize if cuda else (lambda: None)
first_call_ms = {}
for rows in (8, 32):
    inputs = torch.randn(rows, 64, device=device)
    t0 = time.perf_counter()
    output = runner(inputs)  # the first call at this size
    synchronize()
    first_call_ms[rows] = (time.perf_counter() - t0) * 1e3
    with torch.no_grad():
        expected = model(inputs)
    torch.testing.assert_close(output, expected)
    print(f"batch {rows:3}: output {tuple(output.shape)}, first call {first_call_ms[rows]:.1f} ms, "
          f"largest difference from eager {(output - expected).abs().max().item():.1e}")  # fmt: skip
too_large = torch.randn(128, 64, device=device)  # outside 2..64
checked_env = _serve.serving_env(**{CHECK_INPUTS: "1"})
checked, checked_stderr, _ = _serve.load_and_run(dynamic_package, too_large, workdir, env=checked_env)
reason = next((line.strip() for line in checked_stderr.splitlines() if "dim value" in line), "(no message)")
print(f"batch 128, {CHECK_INPUTS}=1, in a fresh process: {checked.get('error', 'no error')}")
print(f"  its stderr: {reason}")
unchecked_env = {name: value for name, value in _serve.serving_env().items() if name != CHECK_INPUTS}
unchecked, _, unchecked_output = _serve.load_and_run(dynamic_package, too_large, workdir, env=unchecked_env)
if "error" in unchecked:
    print(f"batch 128, without it: {unchecked['error']}")
else:
    with torch.no_grad():
        unchecked_right = torch.allclose(unchecked_output, model(too_large), atol=1e-4)
    print(
        f"batch 128, without it: no error; output {tuple(unchecked_output.shape)}, equal to eager's: {unchecked_right}"
    )
# --8<-- [end:dynamic-batch]
assert max(first_call_ms.values()) < 1000, "a new size is a call, not a compile: milliseconds, not seconds"
assert len(shared_objects) == 1, "one shared object answered both batch sizes"
assert reads_batch, "the generated wrapper takes the batch size from the input at run time"
assert "error" in checked and "too large" in reason and "64" in reason and "128" in reason, (checked, reason)

# --8<-- [start:first-calls]
if cuda:
    first_calls = {}
    for loading in ("LAZY", "EAGER"):  # CUDA's default: a kernel is loaded at its first launch; and all at the start
        env = _serve.serving_env(CUDA_MODULE_LOADING=loading)
        done = subprocess.run([sys.executable, __file__, "first-calls", dynamic_package, "8", "32"], env=env,
                              capture_output=True, text=True, check=True, timeout=_serve.SERVE_TIMEOUT_S)  # fmt: skip
        first_calls[loading] = json.loads(done.stdout.strip().splitlines()[-1])
    print("the dynamic package in a fresh process, by CUDA_MODULE_LOADING; ms of the first call, then the second")
    print(f"{'':8}{'CUDA context':>14}{'8 rows':>16}{'32 rows':>16}")
    for loading, run in first_calls.items():
        calls = "".join(f"{first:8.1f}, {second:4.2f}" for first, second in run["calls_ms"].values())
        print(f"{loading:8}{run['context_s'] * 1e3:11.0f} ms{calls}")
    lazy_kernels = first_calls["LAZY"]["kernels"]
    new_at_32 = sorted(set(lazy_kernels["32"]) - set(lazy_kernels["8"]))
    print(f"kernels a call launches at 32 rows and not at 8 ({len(new_at_32)} of {len(lazy_kernels['32'])}):")
    print(*(f"  {_profile_diff.short(name, 100)}" for name in new_at_32), sep="\n")
else:
    print("on the CPU there are no CUDA kernels to load: this section is for a GPU")
# --8<-- [end:first-calls]
if cuda:
    lazy, eager_loading = (first_calls[loading]["calls_ms"]["32"] for loading in ("LAZY", "EAGER"))
    assert lazy[0] > 10 * lazy[1], "lazy loading: the first call at 32 rows is the slow one, not the second"
    assert eager_loading[0] < lazy[0] / 3, "with every kernel loaded before, the first call at 32 is short"
    start_ms = {loading: run["context_s"] * 1e3 + run["calls_ms"]["8"][0] for loading, run in first_calls.items()}
    assert start_ms["EAGER"] > 5 * start_ms["LAZY"], "and the start pays for it: the context and the first call"
    assert new_at_32, "at 32 rows, the package launches kernels that 8 rows did not"
