"""A throwaway copy of the project's tooling with pages and examples of a test's own making."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from execdocs.layout import ROOT, VENDOR

COPIED = [
    "execdocs",
    "examples/compile_tools.py",
    "docs/assets",
    "snippets/abbreviations.md",
    "conftest.py",
    "pyproject.toml",
    "tests/test_recordings.py",
]


class Sandbox:
    def __init__(self, folder: Path, pages: tuple[str, ...] = ("index.md",)):
        self.root = folder
        for name in COPIED:
            source, target = ROOT / name, folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(source, target)
        config = (ROOT / "mkdocs.yml").read_text()
        nav = "".join(f"  - {page}\n" for page in pages)
        (folder / "mkdocs.yml").write_text(config[: config.index("\nnav:")] + "\nnav:\n" + nav)
        shutil.copytree(VENDOR, folder / ".cache" / "vendor")

    def write(self, relative_path: str, text: str) -> Path:
        path = self.root / relative_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def run(self, *command: str) -> subprocess.CompletedProcess:
        """Run a command inside the sandbox, as if on a CPU machine, with its own copy of the tooling."""
        env = {key: value for key, value in os.environ.items() if not key.startswith("EXECDOCS_")}
        env.update(
            PYTHONPATH=os.pathsep.join([str(self.root), str(self.root / "examples")]),
            EXECDOCS_DEVICE="cpu",
            NO_MKDOCS_2_WARNING="1",
        )
        return subprocess.run(
            [sys.executable, *command], cwd=self.root, env=env, capture_output=True, text=True, timeout=300
        )

    def build(self) -> subprocess.CompletedProcess:
        return self.run("-m", "mkdocs", "build", "--site-dir", "site")
