"""What this machine is: its device kind and version stamp, asked of torch once and cached.

The build process itself never imports torch (that alone would cost seconds on every rebuild):
a child process asks, and the answer is cached per Python interpreter and torch version.
"""

import functools
import hashlib
import importlib.metadata
import json
import os
import subprocess
import sys

from execdocs.layout import CACHE, EXAMPLES, INDUCTOR_CACHE

DEVICE_ENV = "EXECDOCS_DEVICE"  # force a device kind, e.g. to build the CPU site on a GPU machine
# Set by the build hook under `mkdocs serve`: a missing or stale recording of another device is
# then a warning and a visible note on the page, so an author without a GPU can still preview.
PREVIEW_ENV = "EXECDOCS_PREVIEW"

_ASK_TORCH = """
import json, torch, compile_tools, host_yardstick
print(json.dumps({"device": "cuda" if torch.cuda.is_available() else "cpu", "gpus": torch.cuda.device_count(),
                  "stamp": compile_tools.environment_stamp(), "host": host_yardstick.host_cpu()}))
"""


def child_env(**extra: str) -> dict[str, str]:
    """The environment of every child process: the helper module importable, caches inside the project."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(EXAMPLES.parent), str(EXAMPLES), env.get("PYTHONPATH")]))
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(INDUCTOR_CACHE))
    # Examples run two at a time; OpenMP threads that outnumber the cores spin against each other
    # and made CPU timings tens of times slower. Half the cores each keeps them apart.
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 2) // 2)))
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


@functools.cache
def _machine() -> dict:
    torch_version = importlib.metadata.version("torch")
    asked = f"{sys.executable}|{torch_version}|{os.environ.get('CUDA_VISIBLE_DEVICES')}|{_ASK_TORCH}"
    tag = hashlib.sha256(asked.encode())
    cached = CACHE / "environment" / f"{tag.hexdigest()[:16]}.json"
    if cached.is_file():
        return json.loads(cached.read_text())
    answer = subprocess.run(
        [sys.executable, "-c", _ASK_TORCH], env=child_env(), capture_output=True, text=True, check=True
    )
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(answer.stdout)
    return json.loads(answer.stdout)


def machine_device() -> str:
    """ "cuda" where torch sees a GPU, else "cpu"; EXECDOCS_DEVICE overrides it."""
    return os.environ.get(DEVICE_ENV) or _machine()["device"]


def machine_stamp() -> dict[str, str]:
    """The versions of this machine (the date is the day the cache was filled, so the footer restamps it)."""
    return _machine()["stamp"]


def machine_host() -> str:
    """This machine's CPU model and the cores a process may use (examples/host_yardstick.py)."""
    return _machine()["host"]


def host_yardstick(python: str = sys.executable) -> dict[str, str]:
    """What a GPU recording's stamp adds about the host: how long a small op and a small compiled call take
    it to launch, in microseconds (examples/host_yardstick.py, in a fresh process, right after the example)."""
    answer = subprocess.run(
        [python, str(EXAMPLES / "host_yardstick.py"), "--json"],
        env=child_env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    measured = json.loads(answer.stdout.strip().splitlines()[-1])
    return {
        "host_small_op_us": f"{measured['small_op_us']['median']:.1f}",
        "host_small_compiled_call_us": f"{measured['small_compiled_call_us']['median']:.1f}",
    }


def machine_gpus() -> int:
    """How many GPUs torch sees here (0 on a CPU machine, or where EXECDOCS_DEVICE=cpu)."""
    return _machine()["gpus"] if machine_device() == "cuda" else 0


def can_run(device: str, gpus: int = 1) -> bool:
    """Any machine runs CPU examples (with the GPU hidden); CUDA examples need a GPU, or as many as they declare."""
    return device == "cpu" or (machine_device() == "cuda" and machine_gpus() >= gpus)


def preview() -> bool:
    return os.environ.get(PREVIEW_ENV) == "1"
