"""Measure how fast authors get a page: `python -m execdocs.build_benchmark` (takes minutes).

Works in a fresh clone of the committed repository, on this machine's device, and prints:
- first build of a fresh clone, from the committed outputs (what a newcomer's first serve costs;
  the labs run, since their rendered pages are not committed);
- with `--cold` only (it runs every example: tens of minutes on two cores), a cold full build, with no
  stored outputs and empty caches;
- warm rebuild with nothing changed;
- rebuild after editing one page's Markdown;
- rebuild after editing one example (and which examples ran again).
Timings here are wall-clock seconds of `mkdocs build`, Python start-up included.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from execdocs.examples import all_examples
from execdocs.layout import ROOT
from execdocs.pages import all_references

RAN = re.compile(r"ran (examples/\S+)(?: at \d+ GPUs)? on (\w+)")
# mkdocs-jupyter's own log line when it executes a lab instead of reading its render cache.
EXECUTED_LAB = re.compile(r"Cache miss, writing: \S*/(docs/labs/\S+)")


def build(clone: Path) -> tuple[float, list[str]]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("EXECDOCS_")}
    env.update(PYTHONPATH=f"{clone}{os.pathsep}{clone / 'examples'}", NO_MKDOCS_2_WARNING="1")
    started = time.perf_counter()
    process = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--site-dir", "site"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    if process.returncode:
        raise SystemExit(f"build failed in {clone}:\n{process.stderr[-3000:]}")
    ran = [f"{path} ({device})" for path, device in RAN.findall(process.stderr)]
    return seconds, ran + [f"{lab} (lab)" for lab in EXECUTED_LAB.findall(process.stderr)]


def fresh_clone(folder: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(ROOT), str(folder)], check=True)
    shutil.copytree(ROOT / ".cache" / "vendor", folder / ".cache" / "vendor")
    return folder


def report(label: str, seconds: float, ran: list[str]) -> None:
    print(f"{label:52} {seconds:6.1f} s   ran {len(ran)}: {', '.join(ran) or '-'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cold", action="store_true", help="also time a build with no outputs and empty caches")
    cold = parser.parse_args().cold
    with tempfile.TemporaryDirectory() as scratch:
        clone = fresh_clone(Path(scratch) / "clone")
        report("first build of a fresh clone (committed outputs)", *build(clone))
        if cold:
            shutil.rmtree(clone / "snippets" / "outputs" / "cpu", ignore_errors=True)
            shutil.rmtree(clone / ".cache", ignore_errors=True)
            shutil.copytree(ROOT / ".cache" / "vendor", clone / ".cache" / "vendor")
            report("cold full build (no outputs, empty caches)", *build(clone))
        report("warm rebuild, nothing changed", *build(clone))
        page = clone / "docs" / "distributed" / "link.md"
        page.write_text(page.read_text() + "\nAn edit.\n")
        report(f"rebuild after editing {page.relative_to(clone)}", *build(clone))
        # An example no page shows GPU output of: editing one of those would make its recording stale.
        shown_on_gpu = {ref.example.name for ref in all_references() if ref.device == "cuda"}
        edited = next(example for example in all_examples() if example.name not in shown_on_gpu)
        example = clone / edited.display_path
        example.write_text(example.read_text() + "\n# an edit\n")
        report(f"rebuild after editing {example.relative_to(clone)}", *build(clone))
        report("warm rebuild again", *build(clone))


if __name__ == "__main__":
    main()
