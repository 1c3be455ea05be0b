"""What `record --twice` found for a chapter's examples, as tables on a page.

    ```python exec="on" html="true"
    from execdocs import show_reproduction
    show_reproduction("benchmarking")
    ```

One table for each example with a recording on the device: every number its pages quote, as
each of the two runs printed it. An example never checked twice, or re-recorded since its check,
says so and names the command; neither fails the build: the check informs authors, it gates nothing.
"""

from html import escape

from execdocs import store
from execdocs.examples import Example, all_examples
from execdocs.render import print_to_block
from execdocs.reproduction import Report, Row, load

COLUMNS = ("Page", "Number", "Section", "First run", "Second run", "Difference", "Agrees")


def twice_command(example: Example, device: str) -> str:
    no_venv = " --no-venv" if device == "cuda" else ""  # the GPU image's own torch
    return f"nox{no_venv} -s record -- --twice {example.name}"


def _admonition(kind: str, title: str, text: str) -> str:
    return f'<div class="admonition {kind}">\n<p class="admonition-title">{title}</p>\n<p>{text}</p>\n</div>'


def _percent(fraction: float) -> str:
    return f"{100 * fraction:g}%"


def _cells(row: Row) -> list[str]:
    first, second = ("–" if value is None else f"{value:g}" for value in (row.first, row.second))
    difference = row.relative_difference
    if row.agrees:
        verdict = f"yes, within {_percent(row.tolerance)}"
    elif difference is not None and abs(difference) > row.tolerance:
        verdict = f"no, beyond {_percent(row.tolerance)}"
    else:
        verdict = "no"
    verdict += f"; {row.note}" if row.note else ""
    page = f"<code>{escape(row.page.removeprefix('docs/'))}</code>"
    shown_difference = "–" if difference is None else f"{100 * difference:+.1f}%"
    return [page, row.quoted, escape(row.section), first, second, shown_difference, escape(verdict)]


def _runs(report: Report) -> str:
    runs = [
        f"{order} run {stamp['date']}, torch {escape(stamp['torch'])}, {seconds:.0f} s"
        for order, stamp, seconds in zip(("First", "second"), report.stamps, report.seconds, strict=True)
    ]
    where = report.stamps[-1].get("gpu", "GPU").removeprefix("NVIDIA ") if report.device == "cuda" else "CPU"
    return " · ".join([*runs, escape(where)])


def _table(report: Report) -> str:
    head = "".join(f"<th>{column}</th>" for column in COLUMNS)
    body = "\n".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in _cells(row)) + "</tr>" for row in report.rows)
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def example_html(example: Example, device: str) -> str:
    """The example's report, or what keeps it from being shown and the command that makes one."""
    name = f"<code>{example.display_path}</code>"
    command = f"<code>{twice_command(example, device)}</code>"
    report = load(example, device)
    if report is None:
        return _admonition("note", name, f"Not checked twice yet: run {command} to check it.")
    if not report.checked(store.load_committed(example, device)):
        return _admonition("warning", name, f"Re-recorded since this check: run {command} again.")
    table = f"\n{_table(report)}" if report.rows else ""
    return f'<p>{name}: {report.summary()}.</p>{table}\n<p class="execdocs-stamp">{_runs(report)}</p>'


def show_reproduction(chapter: str, device: str = "cuda") -> None:
    """For each example of the chapter recorded on `device`, what two runs of it printed for every number quoted."""
    examples = [
        example
        for example in all_examples()
        if example.chapter == chapter
        and (example.devices == (device,) or store.load_committed(example, device) is not None)
    ]
    if not examples:
        print_to_block(f"<p>No example of the chapter {escape(chapter)!r} has a {escape(device)} recording.</p>")
        return
    print_to_block("\n".join(example_html(example, device) for example in examples))
