"""Does a number the prose quotes come out again? Compare two runs of one example, place by place.

`python -m execdocs.record --twice` runs an example twice and hands both results here. Each
number that a page showing the example quotes (execdocs/prose_numbers.py) and that the first run
printed is found by its place, (section, line, which number on the line), and read at the same
place in the second run. It agrees when the two differ by no more than the page allows in its
front matter, `reproduce_within: 5%` (5% when the page says nothing).

A measured number rarely comes out to the last digit again, so a quoted number the first run did
not print is looked for in the recording the prose was written from, the one committed before
the runs, and both runs are read at its place there.

The report is committed at snippets/reproduction/<device>/<chapter>/<topic>.json.
"""

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mkdocs.utils import meta

from execdocs.examples import Example
from execdocs.layout import DOCS, REPRODUCTION, relative
from execdocs.pages import page_references
from execdocs.prose_numbers import quoted_numbers
from execdocs.store import Result

TOLERANCE_KEY = "reproduce_within"
DEFAULT_TOLERANCE = "5%"
# A number as an output prints it; a sign only where it can't be a range's dash ("8.98-16.90").
NUMERIC_TOKEN = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
PERCENT = re.compile(r"\s*(\d+(?:\.\d+)?)\s*%\s*")


class ReproductionError(Exception):
    """A page setting that can't be read; the message names the page and says what to write."""


@dataclass(frozen=True)
class QuotingPage:
    page: str
    shown_sections: tuple[str, ...]  # of the example, looked in first for a quoted number
    numbers: tuple[str, ...]  # what the prose quotes
    tolerance: float  # a fraction: 0.05 for 5%


@dataclass
class Row:
    page: str
    quoted: str  # as the prose quotes it
    section: str
    line: int  # index of the line in the section's output, from 0
    token: int  # index of the number among the numbers of that line, from 0
    first: float | None  # None when that run printed no number at that place
    second: float | None
    relative_difference: float | None  # (second - first) / |first|
    tolerance: float
    agrees: bool
    note: str = ""


@dataclass
class Report:
    example: str
    device: str
    key: str  # content key of the recording that was kept: the second run's
    sections_digest: str  # of what that recording printed, which its key alone can't tell apart
    stamps: list[dict[str, str]]  # of the first and the second run
    seconds: list[float]
    rows: list[Row] = field(default_factory=list)

    def checked(self, recording: Result | None) -> bool:
        """Whether the recording is the run this check kept. Its key can't tell: recording an unchanged
        example again keeps the key, while the numbers it printed change."""
        return recording is not None and (recording.key, sections_digest(recording)) == (self.key, self.sections_digest)

    def summary(self) -> str:
        if not self.rows:
            return "no page quotes a number it printed"
        agreeing = sum(row.agrees for row in self.rows)
        return f"{len(self.rows)} numbers quoted, {agreeing} agree within their page's tolerance"


def sections_digest(result: Result) -> str:
    return hashlib.sha256(json.dumps(result.sections, sort_keys=True).encode()).hexdigest()


def tolerance(markdown: str, page: str) -> float:
    """The page's `reproduce_within`, as a fraction."""
    stated = str(meta.get_data(markdown)[1].get(TOLERANCE_KEY, DEFAULT_TOLERANCE))
    match = PERCENT.fullmatch(stated)
    if not match:
        raise ReproductionError(
            f"{page}: {TOLERANCE_KEY}: {stated!r} is not a percentage; write it as `{TOLERANCE_KEY}: 5%`"
        )
    return float(match[1]) / 100


def quoting_page(path: Path, example: Example) -> QuotingPage | None:
    """What a page that includes or shows the example quotes, and how closely; None for other pages."""
    references = [reference for reference in page_references(path) if reference.example == example]
    if not references:
        return None
    markdown, page = path.read_text(), relative(path)
    shown = dict.fromkeys(reference.section for reference in references if reference.shows_output)
    return QuotingPage(page, tuple(shown), tuple(quoted_numbers(markdown)), tolerance(markdown, page))


def quoting_pages(example: Example) -> list[QuotingPage]:
    return [page for path in sorted(DOCS.rglob("*.md")) if (page := quoting_page(path, example))]


def numbers_on(line: str) -> list[str]:
    return NUMERIC_TOKEN.findall(line)


def _words(line: str) -> str:
    """The line without its numbers or its alignment: what names the quantities it prints."""
    return " ".join(NUMERIC_TOKEN.sub("#", line).split())


def places(quoted: str, result: Result, page: QuotingPage) -> list[tuple[str, int, int]]:
    """Every (section, line, token) where the result printed the quoted number, sections the page shows first."""
    sections = dict.fromkeys([s for s in page.shown_sections if s in result.sections] + list(result.sections))
    found = []
    for section in sections:
        for line, text in enumerate(result.sections[section].splitlines()):
            numbers = numbers_on(text)
            found += [(section, line, token) for token, number in enumerate(numbers) if number.lstrip("+-") == quoted]
    return found


def _number_at(result: Result, run: str, place: tuple[str, int, int], located: str) -> tuple[str | None, str]:
    """The number a run printed at this place (None if none), and what is wrong with it, if anything.

    `located` is the line the number was found on: the same place with other words around it holds
    another quantity (a table sorted by time, say), so it can't agree.
    """
    section, line, token = place
    if section not in result.sections:
        return None, f"the {run} run printed no section '{section}'"
    lines = result.sections[section].splitlines()
    if line >= len(lines):
        return None, f"the {run} run's section '{section}' has only {len(lines)} lines"
    numbers = numbers_on(lines[line])
    if token >= len(numbers):
        return None, f"no number at this place in the {run} run, whose line reads: {lines[line].strip()}"
    if _words(lines[line]) != _words(located):
        return numbers[token], f"the line reads differently in the {run} run: {lines[line].strip()}"
    return numbers[token], ""


def _row(page: QuotingPage, quoted: str, place: tuple[str, int, int], located: str, runs: list[Result]) -> Row:
    (first, first_problem), (second, second_problem) = [
        _number_at(result, run, place, located) for result, run in zip(runs, ("first", "second"), strict=True)
    ]
    first_value = None if first is None else float(first)
    second_value = None if second is None else float(second)
    difference = None
    if first_value is not None and second_value is not None:
        difference = round((second_value - first_value) / abs(first_value), 6)
    problems = "; ".join(problem for problem in (first_problem, second_problem) if problem)
    section, line, token = place
    return Row(
        page=page.page,
        quoted=quoted,
        section=section,
        line=line,
        token=token,
        first=first_value,
        second=second_value,
        relative_difference=difference,
        tolerance=page.tolerance,
        agrees=difference is not None and not problems and abs(difference) <= page.tolerance,
        note=problems,
    )


def page_rows(page: QuotingPage, first: Result, second: Result, before: Result | None) -> list[Row]:
    """A row for each number the page quotes that the first run, or else the recording before, printed."""
    rows = []
    for quoted in page.numbers:
        source, found = first, places(quoted, first, page)
        if not found and before is not None:
            source, found = before, places(quoted, before, page)
        if not found:
            continue  # quoted from another output, a source or a citation: not this example's to check
        section, line, _ = found[0]
        row = _row(page, quoted, found[0], source.sections[section].splitlines()[line], [first, second])
        where = "the first run" if source is first else "the recording before these runs"
        notes = [] if source is first else [f"not printed by the first run; read where {where} printed it"]
        if len(found) > 1:
            notes.append(f"printed at {len(found)} places in {where}; this is the first")
        row.note = "; ".join([*notes, row.note] if row.note else notes)
        rows.append(row)
    return rows


def compare(first: Result, second: Result, pages: list[QuotingPage], before: Result | None = None) -> Report:
    """The report of two successful runs of one example (the second is the one kept); `before` is the
    recording committed before them, which the prose quotes."""
    rows = [row for page in pages for row in page_rows(page, first, second, before)]
    stamps, seconds = [first.stamp, second.stamp], [first.seconds, second.seconds]
    return Report(second.example, second.device, second.key, sections_digest(second), stamps, seconds, rows)


def report_path(example: Example, device: str) -> Path:
    return REPRODUCTION / device / f"{example.name}.json"


def save(report: Report) -> Path:
    path = report_path(Example(report.example), report.device)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(report), indent=1) + "\n")
    return path


def load(example: Example, device: str) -> Report | None:
    path = report_path(example, device)
    if not path.is_file():
        return None
    fields = json.loads(path.read_text())
    return Report(**{**fields, "rows": [Row(**row) for row in fields["rows"]]})
