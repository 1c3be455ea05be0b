"""Numbers a page quotes that moved between an example's two recordings, beyond the page's tolerance.

A reader cannot tell a steady number from one that moved unless the page says so. So a quoted number
that moved is written as the range of both runs ("0.190–0.394 ms", either order), on a page that shows
both runs (`show_reproduction` naming the example or its chapter); or it is not quoted. A quoted number
whose first run can't be read at the same place can't be checked: record the example again with
`--twice`, or don't quote it.

    python -m execdocs.moved_numbers                      # every page
    python -m execdocs.moved_numbers docs/benchmarking/zoo.md
"""

import functools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from execdocs import store
from execdocs.examples import Example, all_examples
from execdocs.layout import ROOT, relative
from execdocs.pages import page_references
from execdocs.prose_numbers import prose
from execdocs.reproduction import load, numbers_on, quoting_pages, rows

# A unit may follow each end of a range: "0.190 ms to 0.394 ms", "1.12-1.45x"
UNIT = r"\s*(?:ms|s|µs|us|x|×|%|GB/s|GiB|MB|kB)?"
SHOWN_REPRODUCTION = re.compile(r"show_reproduction\(\s*[\"']([^\"']+)[\"']")


def quoted_as_range(text: str, one: str, other: str) -> bool:
    """Whether the prose writes the two numbers as a range, in either order."""

    def number(value: str) -> str:
        return rf"(?<![\w.]){re.escape(value)}(?![\d])"

    ends = [(one, other), (other, one)]
    return any(re.search(number(a) + UNIT + r"\s*(?:–|-|to|and)\s*" + number(b), text) for a, b in ends)


def shown_reproductions(markdown: str) -> set[str]:
    """The chapters and examples whose two runs the page shows (`show_reproduction("...")`)."""
    return set(SHOWN_REPRODUCTION.findall(markdown))


def shows_both_runs(markdown: str, example: Example) -> bool:
    return bool(shown_reproductions(markdown) & {example.name, example.chapter})


@functools.cache
def _first_run_numbers_of(example: Example) -> frozenset[str]:
    """The first run's numbers that the reproduction table of the example shows, as the prose quotes them."""
    shown = set()
    for device in ("cuda", "cpu"):
        report, recording = load(example, device), store.load_committed(example, device)
        if report is not None and report.checked(recording):
            shown |= {row.shown(row.first) for row in rows(report, recording, quoting_pages(example)) if row.first}
    return frozenset(shown)


def first_run_numbers(markdown: str) -> set[str]:
    """The first-run numbers a page shows in its reproduction tables: a range of both runs may quote them."""
    return {
        number
        for example in all_examples()
        if shows_both_runs(markdown, example)
        for number in _first_run_numbers_of(example)
    }


@dataclass(frozen=True)
class MovedQuote:
    page: str
    example: str
    quoted: str
    problem: str

    def __str__(self) -> str:
        return f"{self.page}: {self.quoted} ({self.example}) {self.problem}"


def _problem(row, example: Example, markdown: str) -> MovedQuote | None:
    """What is wrong with how the page quotes this row's number, if anything."""
    if row.agrees:
        return None
    if row.first is None or row.note:
        problem = f"can't be compared with the first run ({row.verdict}): re-record with --twice or don't quote it"
        return MovedQuote(row.page, example.name, row.quoted, problem)
    first = row.shown(row.first)
    if not quoted_as_range(prose(markdown), row.quoted, first):
        problem = f"moved beyond {100 * row.tolerance:g}% from the first run's {first}: "
        problem += f"write it as the range {first}–{row.quoted} or don't quote it"
    elif not shows_both_runs(markdown, example):
        problem = f'is a range of both runs, but the page does not show them: add show_reproduction("{example.name}")'
    else:
        return None
    return MovedQuote(row.page, example.name, row.quoted, problem)


def moved_quotes(pages: list[Path] | None = None) -> list[MovedQuote]:
    """Every quoted number of these pages (all, by default) that moved and is not written as it must be.

    A page that shows several examples, or one on two devices, may quote a number that more than one
    recording printed (a range's end, "1.23", is also a figure in another example's table; a CPU speedup
    is also a figure of the GPU tab): it is written well if it is for any recording that was checked
    twice, and not checked at all if a recording never checked twice prints it too, since it may be that
    one's. The first run's end of a range is not checked again.
    """
    wanted = None if pages is None else {relative(path.resolve()) for path in pages}
    by_quote: dict[tuple[str, str], list[MovedQuote | None]] = {}
    for example in all_examples():
        for device in ("cuda", "cpu"):
            report = load(example, device)
            recording = store.load_committed(example, device)
            if report is None or not report.checked(recording):
                continue  # re-recorded since: the reproduction table says so and names the command
            for row in rows(report, recording, quoting_pages(example)):
                markdown = (ROOT / row.page).read_text()
                if (wanted is None or row.page in wanted) and row.quoted not in first_run_numbers(markdown):
                    by_quote.setdefault((row.page, row.quoted), []).append(_problem(row, example, markdown))
    return [
        found[0]
        for (page, quoted), found in by_quote.items()
        if all(found) and not _printed_unchecked(ROOT / page, quoted)
    ]


def _printed_unchecked(path: Path, quoted: str) -> bool:
    """Whether a recording the page shows that was never checked twice prints the number too."""
    for example in {reference.example for reference in page_references(path)}:
        for device in ("cuda", "cpu"):
            recording = store.load_committed(example, device)
            if recording is not None and load(example, device) is None:
                if any(quoted in numbers_on(text) for text in recording.sections.values()):
                    return True
    return False


def main() -> int:
    pages = [Path(argument) for argument in sys.argv[1:]] or None
    found = moved_quotes(pages)
    for quote in found:
        print(quote)
    print(f"{len(found)} quoted numbers to fix" if found else "every quoted number that moved is a range of both runs")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
