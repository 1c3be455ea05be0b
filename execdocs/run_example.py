"""Run one example in this process and write its result as JSON.

    python -m execdocs.run_example <chapter>/<topic> <device> <result.json>

The runner starts this in a fresh process for every example, because Dynamo's caches,
Inductor's config, logging and environment variables are process-global.
"""

import os
import re
import sys
import tempfile
import time
import traceback
import types
from dataclasses import asdict
from pathlib import Path

from execdocs.examples import RANKS_VARIABLE, SECTION_MARKER, Example, content_key
from execdocs.layout import ROOT, relative
from execdocs.store import Result

SECTION_SWITCH = "__execdocs_section__"
# Files an example writes into the folder this variable names (a report, say) are kept with its
# result and published with the site, next to the result's JSON.
ARTIFACTS_ENV = "EXECDOCS_ARTIFACTS"
ARTIFACTS_LIMIT_BYTES = 2_000_000  # they are committed with the outputs: keep them small


class SectionOutput:
    """Stands in for sys.stdout and files each write under the section that is running."""

    def __init__(self, echo):
        self.echo = echo
        self.current: str | None = None
        self.sections: dict[str, list[str]] = {}

    def switch(self, name: str | None) -> None:
        self.current = name
        if name is not None:
            self.sections.setdefault(name, [])

    def write(self, text: str) -> int:
        if self.current is not None:
            self.sections[self.current].append(text)
        return self.echo.write(text)

    def flush(self) -> None:
        self.echo.flush()

    def texts(self) -> dict[str, str]:
        """Each section's output; folders of this machine become short names, so no page shows them."""
        return {name: without_machine_paths("".join(parts)).rstrip("\n") for name, parts in self.sections.items()}


def without_machine_paths(text: str) -> str:
    """Replace this machine's folders, which torch prints in full, with short names for the page.

    Inductor's cache sits inside the repository, so it goes first; then the repository's own prefix,
    leaving paths relative to it; then any path into installed packages, absolute or relative.
    """
    inductor_cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if inductor_cache:
        text = text.replace(inductor_cache.rstrip("/") + "/", "<inductor-cache>/")
    text = SITE_PACKAGES.sub("<site-packages>/", text.replace(f"{ROOT}/", ""))
    return RUNNER_FRAME.sub("", text)


# A path into an environment's packages, however torch printed it, and a traceback's frame in this
# runner (with its source line): the page shows the example's code, not the harness that ran it.
SITE_PACKAGES = re.compile(r"[^\s\"'(]*/site-packages/")
RUNNER_FRAME = re.compile(r'^ *File "execdocs/[^"]+", line \d+, in \S+\n(?: {4,}\S.*\n)?', re.MULTILINE)


def with_section_switches(source: str) -> str:
    """Turn each section marker comment into a call, line for line, so tracebacks keep their numbers."""
    lines = []
    for line in source.splitlines():
        match = SECTION_MARKER.match(line)
        if match:
            name = repr(match["name"]) if match["kind"] == "start" else "None"
            line = f"{match['indent']}{SECTION_SWITCH}({name})"
        lines.append(line)
    return "\n".join(lines) + "\n"


def describe_failure(error: BaseException, example: Example) -> dict[str, str]:
    frames = traceback.extract_tb(error.__traceback__)
    in_example = [frame for frame in frames if frame.filename == example.display_path]
    line = in_example[-1].lineno if in_example else getattr(error, "lineno", None)
    summary = "".join(traceback.format_exception_only(error)).strip()
    if isinstance(error, AssertionError) and in_example and not str(error):
        summary = f"assertion failed: {in_example[-1].line}"
    return {
        "summary": summary,
        "location": f"{example.display_path}:{line}" if line else example.display_path,
        "traceback": "".join(traceback.format_exception(error)),
    }


def local_inputs(example: Example) -> list[str]:
    """The example and every module of this repository it imported: what its output depends on."""
    files = {relative(example.path)}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path and Path(path).resolve().is_relative_to(ROOT / "examples"):
            files.add(relative(Path(path)))
    return sorted(files)


def collected_artifacts(folder: Path) -> dict[str, str]:
    """The text files an example left in its artifacts folder, by path relative to it."""
    files = sorted(path for path in folder.rglob("*") if path.is_file())
    total = sum(path.stat().st_size for path in files)
    if total > ARTIFACTS_LIMIT_BYTES:
        raise ValueError(
            f"the example wrote {total:,} bytes into ${ARTIFACTS_ENV}, over the {ARTIFACTS_LIMIT_BYTES:,} bytes "
            "that are committed with an output: write less there"
        )
    try:
        return {path.relative_to(folder).as_posix(): without_machine_paths(path.read_text()) for path in files}
    except UnicodeDecodeError as error:
        raise ValueError(f"${ARTIFACTS_ENV} takes text files only: {error}") from None


# nvidia-smi's matrix of how the GPUs are linked; a cell says how two are joined, e.g. "NV18" (18 NVLinks).
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def several_gpus_stamp(gpus: int) -> dict[str, str]:
    """What a run with a process per GPU adds to the stamp: how many GPUs, NCCL's version, the link between them."""
    import subprocess

    import torch

    try:
        matrix = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        matrix = ""
    return {"gpus": str(gpus), "nccl": ".".join(map(str, torch.cuda.nccl.version())), "link": gpu_links(matrix, gpus)}


def gpu_links(matrix: str, gpus: int) -> str:
    """How the first `gpus` GPUs are joined, from `nvidia-smi topo -m`: each kind of link once ("NV18")."""
    lines = [ANSI_ESCAPE.sub("", line) for line in matrix.splitlines()]
    # A GPU's row starts with its name; the header row, which names them too, starts with a tab
    cells = [line.split()[1 : gpus + 1] for line in lines if re.match(r"GPU\d+\s", line)][:gpus]
    return "/".join(sorted({cell for row in cells for cell in row if cell != "X"})) or "unknown"


def run(example: Example, device: str, artifacts_folder: Path) -> Result:
    module = types.ModuleType("__main__")
    # Relative to the repository (the runner's working directory), so that no machine's paths
    # reach a page through tracebacks or the source comments in FX graphs.
    module.__file__ = example.display_path
    sys.modules["__main__"] = module
    sys.argv = [example.display_path]
    sys.path.insert(0, str(example.path.parent))
    output = SectionOutput(sys.stdout)
    module.__dict__[SECTION_SWITCH] = output.switch
    os.environ[ARTIFACTS_ENV] = str(artifacts_folder)
    if example.gpus > 1:
        os.environ[RANKS_VARIABLE] = str(example.gpus)
    error = None
    started = time.perf_counter()
    sys.stdout = output
    try:
        exec(compile(with_section_switches(example.source), example.display_path, "exec"), module.__dict__)
    except SystemExit as exit_:
        if exit_.code not in (None, 0):
            error = describe_failure(exit_, example)
    except BaseException as exc:  # noqa: BLE001 - every failure becomes a readable result
        error = describe_failure(exc, example)
    finally:
        sys.stdout = output.echo
    import compile_tools  # after the run, so a broken helper shows up as the example's failure first

    inputs = local_inputs(example)
    try:
        artifacts = collected_artifacts(artifacts_folder)
    except ValueError as exc:
        artifacts, error = {}, error or {"summary": str(exc), "location": example.display_path, "traceback": ""}
    return Result(
        example=example.name,
        device=device,
        key=content_key(inputs),
        inputs=inputs,
        stamp={**compile_tools.environment_stamp(), **(several_gpus_stamp(example.gpus) if example.gpus > 1 else {})},
        sections=output.texts(),
        error=error,
        seconds=round(time.perf_counter() - started, 1),
        artifacts=artifacts,
    )


def main() -> int:
    import json

    name, device, destination = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix="execdocs-artifacts-") as artifacts_folder:
        result = run(Example(name), device, Path(artifacts_folder))
    Path(destination).write_text(json.dumps(asdict(result)))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
