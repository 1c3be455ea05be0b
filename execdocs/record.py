"""Re-run examples on this machine's device and keep their outputs for committing.

    python -m execdocs.record overview            # every example of a chapter
    python -m execdocs.record overview/end_to_end # one example
    python -m execdocs.record --twice benchmarking/case_study
    python -m execdocs.record --first-run first.json benchmarking/zoo_inference  # runs nothing

`nox -s record -- <targets>` calls this; on the GPU image it writes snippets/outputs/cuda/.
With --twice, each example runs twice and the second run is kept; what the first run printed goes
to snippets/reproduction/<device>/, against which the pages compare the numbers their prose quotes
(execdocs/reproduction.py). The command ends with that comparison, made against the prose as it
reads before the runs.
"""

import argparse
import os
import sys
import time
from pathlib import Path

from execdocs.environment import machine_device, machine_gpus
from execdocs.examples import Example, all_examples
from execdocs.layout import CACHE, relative, run_dir
from execdocs.reproduction import (
    ReproductionError,
    make_report,
    quoting_pages,
    report_of_separate_runs,
    report_path,
    report_text,
)
from execdocs.reproduction import save as save_report
from execdocs.runner import record, record_twice
from execdocs.store import Result, as_json

# A failed recording never replaces a committed output, but what it printed up to the failure is
# what its author needs (on a GPU machine, often the only chance to see it): it is kept here.
FAILURES = CACHE / "record-failures"


def keep_failure(result: Result) -> Path:
    path = FAILURES / result.device / f"{result.example}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(as_json(result))
    return path


def select(targets: list[str]) -> list[Example]:
    examples = all_examples()
    chosen = [example for example in examples if any(t in (example.name, example.chapter) for t in targets)]
    unknown = [t for t in targets if not any(t in (e.name, e.chapter) for e in examples)]
    if unknown:
        raise SystemExit(f"no example or chapter named {', '.join(unknown)}; see examples/<chapter>/<topic>.py")
    return chosen


def refuse_what_needs_more_gpus(examples: list[Example], device: str) -> None:
    """Stop before anything runs if an example needs more GPUs than this machine has: none may start and hang."""
    gpus = machine_gpus()
    short = [example for example in examples if example.runs_on(device) and device == "cuda" and example.gpus > gpus]
    if short:
        needs = ", ".join(f"{example.described} needs {example.gpus}" for example in short)
        raise SystemExit(
            f"not recorded: {needs} GPUs and this machine has {gpus}; record it on a machine with that many "
            "GPUs, or leave it out of the targets. Nothing was run."
        )


def refuse_another_compiler() -> None:
    """Stop before anything runs if CXX names a compiler other than the image's g++: one that links libstdc++
    statically makes AOTInductor packages that crash the process that loads them, with no message."""
    compiler = os.environ.get("CXX")
    if compiler and not Path(compiler.split()[0]).name.startswith("g++"):
        raise SystemExit(
            f"not recorded: CXX is {compiler!r}, and the recordings are made with g++, as the GPU image sets it "
            "(a compiler that links libstdc++ statically makes AOTInductor packages that do not load: "
            "docs/deploying/aoti_load.md); run `export CXX=g++` and record again. Nothing was run."
        )


def status_line(result: Result, run: str) -> str:
    status = "ok"
    if not result.ok:
        kept = relative(keep_failure(result))
        status = f"FAILED at {result.error['location']}: {result.error['summary']} (what it printed: {kept})"
    return f"{result.example:40} {result.device:5} {result.seconds:7.1f} s  {run}{status}"


def report_separate_runs(examples: list[Example], first_run: Path) -> int:
    if len(examples) != 1:
        raise SystemExit("--first-run compares one example: name it as <chapter>/<topic>")
    example = examples[0]
    try:
        report, recording = report_of_separate_runs(example, first_run)
    except ReproductionError as error:
        raise SystemExit(str(error)) from None
    print(report_text(report, recording, quoting_pages(example), report_path(example, report.device)))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("targets", nargs="+", help="chapters or <chapter>/<topic> names")
    parser.add_argument("--jobs", type=int, default=1, help="examples run at once (1 keeps GPU timings clean)")
    parser.add_argument(
        "--twice",
        action="store_true",
        help="run each example twice, keep the second run, and report whether the numbers its pages quote reproduce",
    )
    parser.add_argument(
        "--first-run",
        type=Path,
        metavar="FILE",
        help="run nothing: report FILE, a first run recorded in another process, against the committed recording",
    )
    arguments = parser.parse_args()
    if arguments.first_run:
        return report_separate_runs(select(arguments.targets), arguments.first_run)
    if run_dir() is not None:
        raise SystemExit("EXECDOCS_RUN_DIR is set: recording writes committed outputs; unset it first.")
    device = machine_device()
    examples = select(arguments.targets)
    refuse_what_needs_more_gpus(examples, device)
    refuse_another_compiler()
    if arguments.twice:
        # Read before any GPU time is spent, so that a page's unreadable tolerance stops nothing halfway.
        pages = {example.name: quoting_pages(example) for example in examples}
    started = time.perf_counter()
    runs_wanted = 2 if arguments.twice else 1

    def succeeded(runs: list[Result]) -> bool:
        return len(runs) == runs_wanted and all(run.ok for run in runs)

    def report(runs: list[Result]) -> None:
        """Print how the example's runs went and, for a pair, save its reproduction report beside the recording
        that was just kept: each example's pair is complete on disk as soon as it finishes."""
        for number, result in enumerate(runs, start=1):
            print(status_line(result, f"run {number} of 2: " if arguments.twice else ""), flush=True)
        if arguments.twice and succeeded(runs):
            first, second = runs
            pair = make_report(first, second)
            print(f"\n{report_text(pair, second, pages[first.example], save_report(pair))}\n", flush=True)

    if arguments.twice:
        attempts = record_twice(examples, device, report, jobs=arguments.jobs)
    else:
        attempts = record(examples, device, report, jobs=arguments.jobs)
    recorded = sum(map(succeeded, attempts))
    print(f"recorded {recorded} of {len(attempts)} on {device} in {time.perf_counter() - started:.0f} s")
    return 0 if recorded == len(attempts) else 1


if __name__ == "__main__":
    sys.exit(main())
