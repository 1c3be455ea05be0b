"""Which lessons still hold on another torch: every CPU example run under other torch releases and
compared with its committed CPU recording.

    python -m execdocs.drift 2.11.0 2.14.1 2.15.0     # `nox -s drift -- 2.11.0 2.14.1 2.15.0`

Each release gets a virtual environment of its own, .cache/drift/torch-<release>/, holding that
torch and the other packages the examples import, at the project's pins. Every example that runs on
the CPU runs there once, in a fresh process, as a recording does. The same examples also run once
under this environment's own torch, the release of the committed recordings: that control run tells
which sections differ from one run to the next (timings, hashes), and a change there is not counted
against another release.

Writes snippets/drift/<release>.json for each release and for the control; the Versions page reads
them (execdocs/drift_page.py). After editing an example, re-check only it:
`nox -s drift -- 2.11.0 2.14.1 2.15.0 --examples dynamo/guards`.
"""

import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path

from execdocs.environment import machine_stamp
from execdocs.examples import Example, all_examples
from execdocs.layout import CACHE, DRIFT, ROOT
from execdocs.runner import run_now
from execdocs.store import Result, load_committed

VENVS = CACHE / "drift"
# Numbers, hexadecimal addresses and long generated names (cache keys, temporary folders) vary from run to
# run; a section whose text differs only in those changed "in numbers only".
VARYING = re.compile(r"0x[0-9a-f]+|\b[a-z0-9_]{24,}\b|\d+(\.\d+)?(e[+-]?\d+)?", re.IGNORECASE)


def example_requirements() -> list[str]:
    """What an example's process imports besides torch, at the project's pins: the project's other
    dependencies, and the docs and models groups (execdocs itself imports MkDocs' utilities)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    groups = project["dependency-groups"]
    dependencies = [
        requirement for requirement in project["project"]["dependencies"] if not requirement.startswith("torch")
    ]
    return dependencies + groups["docs"] + groups["models"]


def environment_for(release: str) -> Path:
    """The python of a virtual environment with torch==release and the examples' packages, made once."""
    venv = VENVS / f"torch-{release}"
    python = venv / "bin" / "python"
    if not (venv / "ready").is_file():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        # The release's own torch decides its triton; a machine's pip configuration may cap torch's
        # release, so this environment reads no configuration file.
        env = {**os.environ, "PIP_CONFIG_FILE": os.devnull}
        pip = [str(python), "-m", "pip", "install", "--quiet"]
        subprocess.run([*pip, f"torch=={release}"], check=True, env=env)
        subprocess.run([*pip, *example_requirements(), f"torch=={release}"], check=True, env=env)
        (venv / "ready").write_text(release)
    return python


def normalized(text: str) -> str:
    """The text with what varies from run to run replaced, and runs of spaces (a column's padding
    follows its numbers' widths) collapsed."""
    return re.sub(r"[ \t]+", " ", VARYING.sub("#", text))


def section_change(old: str | None, new: str | None) -> dict:
    """How one section's output differs: same, numbers (only), text, missing or new; and by how many lines."""
    if old is None or new is None:
        return {"change": "new" if old is None else "missing", "lines_changed": len((new or old).splitlines())}
    if old == new:
        return {"change": "same", "lines_changed": 0}
    old_lines, new_lines = old.splitlines(), new.splitlines()
    changed = sum(
        max(i2 - i1, j2 - j1)
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old_lines, new_lines).get_opcodes()
        if tag != "equal"
    )
    # A table sorted by time reorders its rows when its times move: the same lines in another order.
    same_lines = sorted(normalized(old).splitlines()) == sorted(normalized(new).splitlines())
    return {"change": "numbers" if same_lines else "text", "lines_changed": changed}


def counts(change: str, control: str) -> bool:
    """Whether a section's change under a release is the release's: the control run, under the recorded
    release, shows what differs from one run to the next anyway (timings: numbers; hashes: text)."""
    if change in ("text", "missing", "new"):
        return control in ("same", "numbers")
    return change == "numbers" and control == "same"  # a number that never moves, such as a count, moved


def compare(example: Example, result: Result, control: dict[str, str] | None) -> dict:
    """One example's drift record: whether it ran, its failure, and how each section changed.
    `control` is each section's change in the control run (None: this is the control run)."""
    committed = load_committed(example, "cpu")
    old = committed.sections if committed else {}
    sections = {}
    for name in sorted(set(old) | set(result.sections)):
        change = section_change(old.get(name), result.sections.get(name))
        if control is None:  # the control run is the yardstick: what it changed varies from run to run
            sections[name] = {**change, "control": change["change"], "counts": False}
            continue
        in_control = control.get(name, "same")
        sections[name] = {**change, "control": in_control, "counts": counts(change["change"], in_control)}
    changed = [name for name, change in sections.items() if change["counts"]]
    status = "failed" if not result.ok else "changed" if changed else "held"
    record = {"example": example.name, "key": result.key, "inputs": result.inputs, "status": status}
    record["seconds"] = result.seconds
    record["sections"] = sections
    if result.error:
        record["error"] = {"summary": result.error["summary"][-600:], "location": result.error["location"]}
    # What it printed wherever that differs from the recording, counted or not: a page that compares its two
    # tabs reads here whether the CPU under the GPU recording's release printed what the GPU tab shows.
    record["new_output"] = {name: text for name, text in result.sections.items() if sections[name]["change"] != "same"}
    return record


def reclassified(report: dict, control: dict[str, dict] | None) -> dict:
    """The report's verdicts computed again from what it kept (every section that differed from the
    recording), against the committed recordings as they are now: no example runs."""
    records = []
    for record in report["examples"]:
        example = Example(record["example"])
        committed = load_committed(example, "cpu")
        printed = {
            name: record["new_output"].get(name, committed.sections.get(name) if committed else None)
            for name, change in record["sections"].items()
            if change["change"] != "missing"
        }
        error = {**record["error"], "traceback": ""} if record.get("error") else None
        result = Result(example.name, "cpu", record["key"], record["inputs"], {}, printed, error, record["seconds"])
        records.append(compare(example, result, None if control is None else control.get(example.name, {})))
    return {**report, "examples": records}


def run_release(release: str | None, examples: list[Example], control: dict[str, dict], jobs: int) -> dict:
    """Run every example under `release` (None: this environment's own torch) and compare."""
    python = sys.executable if release is None else str(environment_for(release))
    label = release or "control"
    caches = VENVS / f"caches-{label}"  # compiled artifacts of one release never meet another's
    env = {"TORCHINDUCTOR_CACHE_DIR": str(caches / "inductor"), "TRITON_CACHE_DIR": str(caches / "triton")}
    started = time.perf_counter()

    def one(example: Example) -> dict:
        result = run_now(example, "cpu", keep=False, python=python, **env)
        print(f"{label:8} {example.name:40} {result.seconds:6.1f} s  {'ok' if result.ok else 'FAILED'}", flush=True)
        return compare(example, result, None if release is None else control.get(example.name, {}))

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        records = list(pool.map(one, examples))
    versions = subprocess.run(
        [python, "-c", "import torch, triton; print(torch.__version__, triton.__version__)"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    return {
        "release": label,
        "stamp": {
            "torch": versions[0],
            "triton": versions[1],
            "python": machine_stamp()["python"],
            "date": str(date.today()),
        },
        "minutes": round((time.perf_counter() - started) / 60, 1),
        "examples": records,
    }


def save(report: dict, rechecked: list[str] | None) -> None:
    """Write a release's report; a re-check of some examples replaces only their records."""
    path = DRIFT / f"{report['release']}.json"
    if rechecked and path.is_file():
        earlier = json.loads(path.read_text())
        kept = [record for record in earlier["examples"] if record["example"] not in rechecked]
        report = {**earlier, "examples": sorted(kept + report["examples"], key=lambda record: record["example"])}
    path.write_text(json.dumps(report, indent=1))


def section_changes(control: dict) -> dict[str, dict[str, str]]:
    """The control run's change of each section, by example: what the releases are judged against."""
    return {
        record["example"]: {name: change["change"] for name, change in record["sections"].items()}
        for record in control["examples"]
    }


def reclassify(releases: list[str]) -> int:
    """After the rules or the recordings changed: every stored report's verdicts, computed again."""
    control = reclassified(json.loads((DRIFT / "control.json").read_text()), None)
    save(control, None)
    in_control = section_changes(control)
    for release in releases:
        save(reclassified(json.loads((DRIFT / f"{release}.json").read_text()), in_control), None)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("releases", nargs="+", help="torch releases, e.g. 2.11.0 2.14.1 2.15.0")
    parser.add_argument("--jobs", type=int, default=2, help="examples run at once")
    parser.add_argument(
        "--examples", nargs="+", metavar="CHAPTER/TOPIC", help="re-check only these, keeping the others' verdicts"
    )
    parser.add_argument(
        "--reclassify", action="store_true", help="run nothing: compute the stored reports' verdicts again"
    )
    arguments = parser.parse_args()
    if arguments.reclassify:
        return reclassify(arguments.releases)
    examples = [example for example in all_examples() if example.runs_on("cpu")]
    if arguments.examples:
        unknown = set(arguments.examples) - {example.name for example in examples}
        if unknown:
            raise SystemExit(f"no CPU example named {', '.join(sorted(unknown))}; see examples/<chapter>/<topic>.py")
        examples = [example for example in examples if example.name in arguments.examples]
    DRIFT.mkdir(parents=True, exist_ok=True)
    control = run_release(None, examples, {}, arguments.jobs)
    in_control = section_changes(control)
    save(control, arguments.examples)
    for release in arguments.releases:
        report = run_release(release, examples, in_control, arguments.jobs)
        save(report, arguments.examples)
        tally = {
            status: sum(r["status"] == status for r in report["examples"]) for status in ("held", "changed", "failed")
        }
        print(f"torch {release}: {tally} in {report['minutes']} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
