"""Stored results of example runs, one JSON file per example and device kind.

Committed results live in snippets/outputs/<device>/; a test run keeps its own fresh results
in the folder named by EXECDOCS_RUN_DIR, which is read first.
"""

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from execdocs.examples import Example, content_key
from execdocs.layout import OUTPUTS, run_dir


@dataclass
class Result:
    example: str
    device: str
    key: str  # content_key(inputs) when the example ran
    inputs: list[str]  # the example and every local module it imported
    # python, torch, triton, cuda, gpu, date; the host CPU; on a GPU, the host yardstick (host_small_*_us)
    stamp: dict[str, str]
    sections: dict[str, str] = field(default_factory=dict)  # section name -> what it printed
    error: dict[str, str] | None = None  # summary, location ("examples/x.py:12") and traceback
    seconds: float = 0.0
    artifacts: dict[str, str] = field(default_factory=dict)  # relative path -> text the example wrote

    @property
    def ok(self) -> bool:
        return self.error is None

    def is_fresh(self) -> bool:
        return content_key(self.inputs) == self.key


def _path(folder: Path, example: Example, device: str) -> Path:
    return folder / device / f"{example.name}.json"


def committed_path(example: Example, device: str) -> Path:
    return _path(OUTPUTS, example, device)


def _read(path: Path) -> Result | None:
    if not path.is_file():
        return None
    return Result(**json.loads(path.read_text()))


def load(example: Example, device: str) -> Result | None:
    """This test run's result if there is one, else the committed one."""
    folder = run_dir()
    if folder is not None:
        result = _read(_path(folder, example, device))
        if result is not None:
            return result
    return _read(committed_path(example, device))


def load_committed(example: Example, device: str) -> Result | None:
    return _read(committed_path(example, device))


def as_json(result: Result) -> str:
    fields = asdict(result)
    if not fields["artifacts"]:
        del fields["artifacts"]  # most examples write none; their files stay as they were
    return json.dumps(fields, indent=1, sort_keys=True) + "\n"


def save(result: Result) -> None:
    """Keep a result: in the test run's folder during a test run, else commit-ready (successes only)."""
    example = Example(result.example)
    folder = run_dir()
    if folder is None and not result.ok:
        return  # a failure is reported by whoever ran it, and never replaces a good committed output
    path = _path(folder or OUTPUTS, example, result.device)
    text = as_json(result)
    if path.is_file() and path.read_text() == text:
        return  # leave the file alone, so that `mkdocs serve` sees no change
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
