"""Re-run examples on this machine's device and keep their outputs for committing.

    python -m execdocs.record overview            # every example of a chapter
    python -m execdocs.record overview/end_to_end # one example

`nox -s record -- <targets>` calls this; on the GPU image it writes snippets/outputs/cuda/.
"""

import argparse
import sys
import time
from pathlib import Path

from execdocs.environment import machine_device
from execdocs.examples import Example, all_examples
from execdocs.layout import CACHE, relative, run_dir
from execdocs.runner import record
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("targets", nargs="+", help="chapters or <chapter>/<topic> names")
    parser.add_argument("--jobs", type=int, default=1, help="examples run at once (1 keeps GPU timings clean)")
    arguments = parser.parse_args()
    if run_dir() is not None:
        raise SystemExit("EXECDOCS_RUN_DIR is set: recording writes committed outputs; unset it first.")
    device = machine_device()
    started = time.perf_counter()
    results = record(select(arguments.targets), device, jobs=arguments.jobs)
    for result in results:
        status = "ok"
        if not result.ok:
            kept = relative(keep_failure(result))
            status = f"FAILED at {result.error['location']}: {result.error['summary']} (what it printed: {kept})"
        print(f"{result.example:40} {device:5} {result.seconds:7.1f} s  {status}")
    print(
        f"recorded {sum(r.ok for r in results)} of {len(results)} on {device} in {time.perf_counter() - started:.0f} s"
    )
    return 0 if all(result.ok for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
