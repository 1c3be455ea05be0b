"""Serving an AOTInductor package the way a deployment does: in a fresh Python process that imports
torch and nothing of the model's code.

Import it from an example of this chapter: `from deploying import _serve`.
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import torch

SERVE_TIMEOUT_S = 300  # far above a start (seconds), even with the ISA probes below; a hung process must not hang

# --8<-- [start:isa-probes]
# aoti_load_package compares this machine's CPU vector instruction set (ISA) with the package's, and Inductor
# finds it by compiling and loading test programs (cpu_vec_isa.py). This variable set to "0" says that no vector
# ISA works: no test program is built, and the loader warns of a mismatch; the package still runs as it was built.
ISA_SETTING = "TORCHINDUCTOR_VEC_ISA_OK"
SKIP_ISA_PROBES = {ISA_SETTING: "0"}
# --8<-- [end:isa-probes]

# --8<-- [start:child]
# What the serving process runs: torch, the package and an input; no model code.
LOAD_AND_RUN = """
import json, sys, time
import torch
package, input_path, output_path = sys.argv[1:]
t0 = time.perf_counter()
import torch._inductor  # the Python side of the loader
from torch._inductor import cpu_vec_isa
imported = time.perf_counter()
probe = {}  # calls and seconds of the functions that look for the CPU's ISA


def timed(owner, name):
    function = getattr(owner, name)

    def timing(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            calls, seconds = probe.get(name, (0, 0.0))
            probe[name] = (calls + 1, seconds + time.perf_counter() - start)

    setattr(owner, name, timing)


timed(cpu_vec_isa, "pick_vec_isa")  # called by codecache.get_device_information
timed(cpu_vec_isa.VecISA, "check_build")  # one call per test program
runner = torch._inductor.aoti_load_package(package)
loaded = time.perf_counter()
x = torch.load(input_path)
try:
    output = runner(x)
except RuntimeError as error:
    print(json.dumps({"error": str(error).splitlines()[0]}))
    sys.exit(0)
if x.is_cuda:
    torch.cuda.synchronize()
first_call = time.perf_counter()
torch.save(output, output_path)
model_code = sorted(name for name in sys.modules if name.startswith("deploying"))
timings = {"import_inductor_s": imported - t0, "load_s": loaded - imported, "first_call_s": first_call - loaded}
print(json.dumps({**timings, "probe": probe, "model_code": model_code}))
"""


def serving_env(**variables: str) -> dict:
    """The serving process's environment: this process's, with the ISA probes skipped, and `variables`."""
    return {**os.environ, **SKIP_ISA_PROBES, **variables}


def load_and_run(package: str, inputs: torch.Tensor, workdir: Path, env: dict | None = None):
    """Run the package on `inputs` in a fresh Python process (environment `env`, by default
    `serving_env()`): its JSON line, its stderr, its output.

    A process that fails before its JSON line (the package does not load, it crashes or it hangs)
    gives {"error": ...} with what happened, so that the caller can print and check it.
    """
    input_path, output_path = workdir / "input.pt", workdir / "output.pt"
    output_path.unlink(missing_ok=True)
    torch.save(inputs, input_path)
    command = [sys.executable, "-c", LOAD_AND_RUN, package, str(input_path), str(output_path)]
    try:
        done = subprocess.run(
            command, env=env or serving_env(), capture_output=True, text=True, timeout=SERVE_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as timeout:
        stderr = timeout.stderr.decode() if isinstance(timeout.stderr, bytes) else (timeout.stderr or "")
        return {"error": f"the process did not finish within {SERVE_TIMEOUT_S} s"}, stderr, None
    output = torch.load(output_path) if output_path.exists() else None
    if done.returncode == 0:
        return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr, output
    return {"error": failure(done.returncode, done.stderr)}, done.stderr, output


# --8<-- [end:child]


def probe_calls(served: dict, function: str) -> tuple[int, float]:
    """Calls and seconds of one of the ISA probe's functions in a served load; (0, 0.0) if it never ran."""
    return tuple(served["probe"].get(function, (0, 0.0)))


def failure(returncode: int, stderr: str) -> str:
    """Why a serving process failed, in one line: the signal that killed it, or the loader's first error."""
    if returncode < 0:
        return f"the process was killed by {signal.Signals(-returncode).name}"
    errors = [line.strip() for line in stderr.splitlines() if line.startswith("Error:")]
    last = (stderr.strip().splitlines() or ["(nothing on stderr)"])[-1]
    return f"exit status {returncode}: {errors[0] if errors else last}"
