"""What `record --twice` found for a chapter's examples, as tables on a page.

    ```python exec="on" html="true"
    from execdocs import show_reproduction
    show_reproduction("benchmarking")             # or one example: "benchmarking/zoo_inference"
    ```

One table for each example with a recording on the device: every number its pages quote as they
read now, found in the recording (the second run) and read at the same place in the first run
(execdocs/reproduction.py). An example never checked twice, or re-recorded since its check, says
so and names the command; neither fails the build: the check informs authors, it gates nothing.
"""

from html import escape

from execdocs import store
from execdocs.examples import Example, all_examples
from execdocs.render import host_speed, print_to_block
from execdocs.reproduction import Report, Row, load, quoting_pages, rows, summary

COLUMNS = ("Page", "Quoted", "First run", "Second run (committed)", "Difference", "Agrees")


def twice_command(example: Example, device: str) -> str:
    no_venv = " --no-venv" if device == "cuda" else ""  # the GPU image's own torch
    return f"nox{no_venv} -s record -- --twice {example.name}"


def _admonition(kind: str, title: str, text: str) -> str:
    return f'<div class="admonition {kind}">\n<p class="admonition-title">{title}</p>\n<p>{text}</p>\n</div>'


def _cells(row: Row) -> list[str]:
    section, line, token = row.place
    where = f"section {section}, line {line + 1}, number {token + 1}"
    quoted = f'<span title="{escape(where)}">{row.quoted}</span>'
    difference = "–" if row.relative_difference is None else f"{100 * row.relative_difference:+.1f}%"
    page = f"<code>{escape(row.page.removeprefix('docs/'))}</code>"
    return [page, quoted, row.shown(row.first), row.shown(row.second), difference, escape(row.verdict)]


def _runs(report: Report) -> str:
    runs = [
        f"{order} run {stamp['date']}, torch {escape(stamp['torch'])}, {seconds:.0f} s{host_speed(stamp)}"
        for order, stamp, seconds in zip(("First", "second"), report.stamps, report.seconds, strict=True)
    ]
    where = report.stamps[-1].get("gpu", "GPU").removeprefix("NVIDIA ") if report.device == "cuda" else "CPU"
    return " · ".join([*runs, escape(where)])


def _table(found: list[Row]) -> str:
    head = "".join(f"<th>{column}</th>" for column in COLUMNS)
    body = "\n".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in _cells(row)) + "</tr>" for row in found)
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def example_html(example: Example, device: str) -> str:
    """The example's check against its pages' prose as they read now, or why there is none and the command to run."""
    name = f"<code>{example.described}</code>"
    command = f"<code>{twice_command(example, device)}</code>"
    report = load(example, device)
    if report is None:
        return _admonition("note", name, f"Not checked twice yet: run {command} to check it.")
    recording = store.load_committed(example, device)
    if not report.checked(recording):
        return _admonition("warning", name, f"Re-recorded since this check: run {command} again.")
    found = rows(report, recording, quoting_pages(example))
    table = f"\n{_table(found)}" if found else ""
    return f'<p>{name}: {summary(found)}.</p>{table}\n<p class="execdocs-stamp">{_runs(report)}</p>'


def show_reproduction(name: str, device: str = "cuda") -> None:
    """For one example (`chapter/topic`), or each example of a chapter, recorded on `device`: both runs' numbers
    for every number its pages quote."""
    examples = [
        example
        for example in all_examples()
        if name in (example.chapter, example.name)
        and (example.devices == (device,) or store.load_committed(example, device) is not None)
    ]
    if not examples:
        print_to_block(f"<p>No example named or of the chapter {escape(name)!r} has a {escape(device)} recording.</p>")
        return
    print_to_block("\n".join(example_html(example, device) for example in examples))
