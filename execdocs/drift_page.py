"""What the Versions page prints from the drift recordings (snippets/drift/, written by execdocs.drift).

    ```python exec="on"
    from execdocs.drift_page import show_matrix
    show_matrix()
    ```

An example edited after the drift run is shown as not re-checked: its content key no longer matches
the one the drift run recorded.
"""

import json
import textwrap

from execdocs.examples import Example, content_key
from execdocs.layout import DRIFT
from execdocs.render import fenced, print_to_block
from execdocs.store import load_committed


def reports() -> list[dict]:
    """The control first, then the releases in order."""
    found = [json.loads(path.read_text()) for path in DRIFT.glob("*.json")]
    if not found:
        raise FileNotFoundError(f"no drift recording in {DRIFT}: run `nox -s drift -- 2.11.0 2.14.1 2.15.0`")
    return sorted(found, key=lambda report: (report["release"] != "control", report["stamp"]["torch"]))


def current(record: dict) -> bool:
    """Whether the example and the modules it imported are unchanged since the drift run checked it."""
    return content_key(record["inputs"]) == record["key"]


def cell(record: dict) -> str:
    if not current(record):
        return "not re-checked"
    if record["status"] == "changed":
        changed = [name for name, change in record["sections"].items() if change["counts"]]
        return f"changed: {', '.join(f'`{name}`' for name in changed)}"
    return record["status"]


def release_label(report: dict) -> str:
    torch = report["stamp"]["torch"].split("+")[0]
    return f"{torch} (recorded)" if report["release"] == "control" else torch


def show_summary() -> None:
    """One row per release: how many examples held, changed and failed, and when it ran."""
    rows = ["| torch | held | changed | failed | not re-checked | run on | minutes |", "|---|---|---|---|---|---|---|"]
    for report in reports():
        records = report["examples"]
        stale = sum(not current(record) for record in records)
        counts = [
            sum(current(r) and r["status"] == status for r in records) for status in ("held", "changed", "failed")
        ]
        rows.append(
            f"| {release_label(report)} | {' | '.join(map(str, counts))} | {stale} | {report['stamp']['date']} "
            f"| {report['minutes']} |"
        )
    print_to_block("\n".join(rows))


def show_matrix() -> None:
    """One row per example that failed or changed under some release, one column per release."""
    found = reports()
    by_example = {}
    for report in found:
        for record in report["examples"]:
            by_example.setdefault(record["example"], {})[report["release"]] = record
    header = "| example | " + " | ".join(release_label(report) for report in found) + " |"
    rows = [header, "|---" * (len(found) + 1) + "|"]
    for name, records in sorted(by_example.items()):
        releases = [records.get(report["release"]) for report in found[1:]]
        if all(record and record["status"] == "held" and current(record) for record in releases):
            continue
        cells = [cell(records[report["release"]]) if report["release"] in records else "-" for report in found]
        rows.append(f"| `{name}` | " + " | ".join(cells) + " |")
    print_to_block("\n".join(rows))


def show_change(example: str, section: str, release: str) -> None:
    """A changed section's recorded output beside what `release` printed, in two content tabs."""
    report = next(report for report in reports() if report["release"] == release)
    record = next(record for record in report["examples"] if record["example"] == example)
    if section not in record["new_output"]:
        raise KeyError(f"{example}:{section} did not change under torch {release} in {DRIFT}/{release}.json")
    committed = load_committed(Example(example), "cpu")
    tabs = [
        (f"torch {committed.stamp['torch'].split('+')[0]} (recorded)", committed.sections[section]),
        (f"torch {release}", record["new_output"][section]),
    ]
    print_to_block(
        "\n".join(f'=== "{label}"\n\n{textwrap.indent(fenced(text, "text"), "    ")}\n' for label, text in tabs)
    )


def show_control() -> None:
    """What the control run says varies from one run to the next under the recorded release."""
    control = next(report for report in reports() if report["release"] == "control")
    changes = [change["change"] for record in control["examples"] for change in record["sections"].values()]
    varied = {kind: changes.count(kind) for kind in ("numbers", "text")}
    print_to_block(
        f"In the control run, {len(changes) - changes.count('same')} of the {len(changes)} sections printed "
        f"something else than the recording: {varied['numbers']} only in numbers (times, sizes, addresses) and "
        f"{varied['text']} in their text (such as the vector instructions Inductor found on the machine's CPU). "
        "Those sections vary from run to run, or from machine to machine, under the recorded release, and a "
        "release is not charged with what they vary in."
    )


def show_failures(release: str) -> None:
    """Each example that failed under `release`: where, and the first line of what it raised."""
    report = next(report for report in reports() if report["release"] == release)
    rows = ["| example | failed at | with |", "|---|---|---|"]
    for record in report["examples"]:
        if record["status"] == "failed":
            message = record["error"]["summary"].strip().splitlines()[0].replace("|", "\\|")[:160]
            rows.append(f"| `{record['example']}` | `{record['error']['location']}` | {message} |")
    print_to_block("\n".join(rows))
