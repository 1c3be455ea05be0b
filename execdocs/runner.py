"""Bring stored results up to date: run each missing or stale example once, in its own process.

A file lock per example and device lets parallel test workers share the work without running
anything twice.
"""

import json
import logging
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from filelock import FileLock

from execdocs import store
from execdocs.environment import can_run, child_env, host_yardstick, machine_device, machine_host, machine_stamp
from execdocs.examples import Example, content_key
from execdocs.layout import LOCKS, ROOT, relative, run_dir
from execdocs.store import Result

TIMEOUT_SECONDS = 900
# Under MkDocs' own namespace so that `mkdocs build` and `mkdocs serve` show which examples ran.
log = logging.getLogger("mkdocs.plugins.execdocs")


def usable(example: Example, device: str) -> Result | None:
    """A stored result that needs no new run: this test run's own, or outside a test run, a fresh one."""
    result = store.load(example, device)
    if result is None:
        return None
    folder = run_dir()
    ran_in_this_test_run = folder is not None and (folder / device / f"{example.name}.json").is_file()
    if ran_in_this_test_run:
        return result
    if folder is not None and device == machine_device():
        return None  # a test run checks every example that this machine can run
    return result if result.ok and result.is_fresh() else None


def run_now(example: Example, device: str, keep: bool = True, python: str = sys.executable, **env_extra: str) -> Result:
    """Run the example in a fresh process of `python` and, unless told not to, keep its result.
    `env_extra` adds to the child's environment (the drift runs give each torch its own caches)."""
    env = child_env(EXECDOCS_DEVICE=device, **env_extra)
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""  # the same code path a CPU-only machine takes
    with tempfile.TemporaryDirectory() as scratch:
        destination = Path(scratch) / "result.json"
        command = [python, "-m", "execdocs.run_example", example.name, device, str(destination)]
        try:
            process = subprocess.run(
                command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_SECONDS
            )
            crashed = None if destination.is_file() else f"the process exited with code {process.returncode}"
            stderr = process.stderr
        except subprocess.TimeoutExpired as timeout:
            crashed = f"it ran longer than {TIMEOUT_SECONDS} s"
            stderr = timeout.stderr.decode() if isinstance(timeout.stderr, bytes) else (timeout.stderr or "")
        if crashed:
            result = _crash_result(example, device, crashed, stderr)
        else:
            result = Result(**json.loads(destination.read_text()))
    result.stamp["host"] = machine_host()
    if device == "cuda" and result.ok:
        result = _with_host_yardstick(result, python)
    if keep:
        store.save(result)
    log.info(f"ran {example.described} on {device} in {result.seconds:.1f} s: {'ok' if result.ok else 'FAILED'}")
    return result


def _with_host_yardstick(result: Result, python: str) -> Result:
    """The GPU result with the host's speed at launching work added to its stamp; a failed result if the
    yardstick could not be measured, since a GPU recording's timings can't be read without it."""
    try:
        result.stamp.update(host_yardstick(python))
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, ValueError, KeyError) as error:
        stderr = getattr(error, "stderr", "") or ""
        result.error = {
            "summary": f"the example ran, but the host yardstick (examples/host_yardstick.py) failed: {error}",
            "location": "examples/host_yardstick.py",
            "traceback": stderr[-5000:] if isinstance(stderr, str) else "",
        }
    return result


def _crash_result(example: Example, device: str, what: str, stderr: str) -> Result:
    inputs = [relative(example.path)]
    return Result(
        example=example.name,
        device=device,
        key=content_key(inputs),
        inputs=inputs,
        stamp=machine_stamp(),
        error={
            "summary": f"{what} before writing a result",
            "location": example.display_path,
            "traceback": stderr[-5000:],
        },
    )


def ensure(example: Example, device: str) -> Result | None:
    """The example's up-to-date result, running it if needed and possible; None if it can't run here."""
    found = usable(example, device)
    if found is not None or not can_run(device, example.gpus):
        return found or store.load(example, device)
    LOCKS.mkdir(parents=True, exist_ok=True)
    with FileLock(LOCKS / f"{example.name.replace('/', '--')}.{device}.lock"):
        return usable(example, device) or run_now(example, device)


def ensure_all(pairs: list[tuple[Example, str]], jobs: int = 2) -> dict[tuple[str, str], Result | None]:
    """`ensure` for many examples, `jobs` processes at a time."""
    unique = list(dict.fromkeys(pairs))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(lambda pair: ensure(*pair), unique))
    return {(example.name, device): result for (example, device), result in zip(unique, results, strict=True)}


def _each_on(examples: list[Example], device: str, jobs: int, run, done):
    """`run` each example this device runs, `jobs` at a time, handing each one's runs to `done` as soon as it
    finishes: a recording cut short (a time limit on a GPU machine) keeps what finished, and says so."""
    targets = [example for example in examples if example.runs_on(device)]

    def run_and_hand_over(example: Example) -> list[Result]:
        runs = run(example)
        done(runs)
        return runs

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(run_and_hand_over, targets))


def record(examples: list[Example], device: str, done, jobs: int = 1) -> list[list[Result]]:
    """Re-run these examples on this machine's device whatever the store holds (`nox -s record`)."""
    return _each_on(examples, device, jobs, lambda example: [run_now(example, device)], done)


def run_twice(example: Example, device: str) -> list[Result]:
    """Run the example twice, each time in a fresh process; keep the second result if both succeed."""
    first = run_now(example, device, keep=False)
    if not first.ok:
        return [first]  # a second run can't make up for it: spare the GPU time
    second = run_now(example, device, keep=False)
    if second.ok:
        store.save(second)
    return [first, second]


def record_twice(examples: list[Example], device: str, done, jobs: int = 1) -> list[list[Result]]:
    """`record`, with each example run twice in a row (`nox -s record -- --twice`): the runs made of each."""
    return _each_on(examples, device, jobs, lambda example: run_twice(example, device), done)
