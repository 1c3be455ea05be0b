"""Does a number the prose quotes come out again? Two runs of one example, compared place by place.

`python -m execdocs.record --twice` runs an example twice and keeps the second run as its
recording. The report, snippets/reproduction/<device>/<chapter>/<topic>.json, keeps what the first
run printed (`first_sections`) and names the recording it belongs to by its key and a digest of
its sections.

The comparison is made when the page is built, against the prose as it reads then: each number
that a page showing the example quotes (execdocs/prose_numbers.py) is found by its place in the
recording, (section, line, which number on the line), and read at the same place in the first
run. It agrees when the two differ by no more than the page allows in its front matter,
`reproduce_within: 5%` (5% when the page says nothing). A quoted number that the recording does
not print (a threshold, a citation) is not this example's to check.

Two runs made in separate processes (on two fresh machines, say) make a report too, once the
second is the committed recording and the first run's result file is at hand:

    python -m execdocs.record --first-run first-run.json benchmarking/zoo_inference

The reports written before the first run's sections were kept hold `first_values` instead: the
first run's number at each place their rows had compared, {"section:line:token": number}, and at
every place of a line that a row's note quoted in full. At all of those places the first run's line
read as the recording's does (checked when they were converted), so a number is all they keep; a
quoted number at any other place shows as not compared.
"""

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from mkdocs.utils import meta

from execdocs import store
from execdocs.examples import Example
from execdocs.layout import DOCS, REPRODUCTION, relative
from execdocs.pages import page_references
from execdocs.prose_numbers import quoted_numbers
from execdocs.store import Result

TOLERANCE_KEY = "reproduce_within"
DEFAULT_TOLERANCE = 0.05
# A number as an output prints it; a sign only where it can't be a range's dash ("8.98-16.90").
NUMERIC_TOKEN = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
PERCENT = re.compile(r"\s*(\d+(?:\.\d+)?)\s*%\s*")

Place = tuple[str, int, int]  # section, index of the line in it, index of the number on the line; from 0


class ReproductionError(Exception):
    """A page setting that can't be read; the message names the page and says what to write."""


@dataclass(frozen=True)
class QuotingPage:
    page: str
    shown_sections: tuple[str, ...]  # of the example, looked in first for a quoted number
    numbers: tuple[str, ...]  # what the prose quotes
    tolerance: float  # a fraction: 0.05 for 5%


def within(first: float, second: float, tolerance: float) -> bool:
    return abs(second - first) <= tolerance * abs(first)


@dataclass(frozen=True)
class Row:
    page: str
    quoted: str  # as the prose quotes it
    place: Place  # where the recording printed it
    places: int  # how many places the recording printed it at; `place` is the first
    second: float  # the recording's number there
    first: float | None  # the first run's; None where it printed none, or where the report did not keep it
    tolerance: float
    note: str = ""  # why the two can't agree
    compared: bool = True  # False where the report did not keep the first run's number

    @property
    def relative_difference(self) -> float | None:
        if self.first is None:
            return None
        if self.first == 0:
            return 0.0 if self.second == 0 else float("inf")
        return (self.second - self.first) / abs(self.first)

    @property
    def agrees(self) -> bool:
        return self.first is not None and not self.note and within(self.first, self.second, self.tolerance)

    def shown(self, value: float | None) -> str:
        """A number of the row to as many decimals as the prose quotes."""
        return "–" if value is None else f"{value:.{len(self.quoted.partition('.')[2])}f}"

    @property
    def verdict(self) -> str:
        verdict = "yes" if self.agrees else "no" if self.compared else "not compared"
        verdict += f": {self.note}" if self.note else ""
        return verdict + (f" (printed at {self.places} places; this is the first)" if self.places > 1 else "")


@dataclass
class Report:
    example: str
    device: str
    key: str  # content key of the recording that was kept: the second run's
    sections_digest: str  # of what that recording printed, which its key alone can't tell apart
    stamps: list[dict[str, str]]  # of the first and the second run
    seconds: list[float]
    first_sections: dict[str, str] | None = None  # what the first run printed, per section
    first_values: dict[str, float] | None = None  # instead, in a report written before those were kept

    def checked(self, recording: Result | None) -> bool:
        """Whether the recording is the run this check kept. Its key can't tell: recording an unchanged
        example again keeps the key, while the numbers it printed change."""
        return recording is not None and (recording.key, sections_digest(recording)) == (self.key, self.sections_digest)


def sections_digest(result: Result) -> str:
    return hashlib.sha256(json.dumps(result.sections, sort_keys=True).encode()).hexdigest()


def percent(fraction: float) -> str:
    return f"{100 * fraction:g}%"


def tolerance(markdown: str, page: str) -> float:
    """The page's `reproduce_within`, as a fraction."""
    stated = meta.get_data(markdown)[1].get(TOLERANCE_KEY)
    if stated is None:
        return DEFAULT_TOLERANCE
    match = PERCENT.fullmatch(str(stated))
    if not match:
        raise ReproductionError(
            f"{page}: {TOLERANCE_KEY}: {str(stated)!r} is not a percentage; write it as `{TOLERANCE_KEY}: 5%`"
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


def places(quoted: str, result: Result, page: QuotingPage) -> list[Place]:
    """Every place where the result printed the quoted number, in the sections the page shows first."""
    sections = dict.fromkeys([s for s in page.shown_sections if s in result.sections] + list(result.sections))
    found = []
    for section in sections:
        for line, text in enumerate(result.sections[section].splitlines()):
            numbers = numbers_on(text)
            found += [(section, line, token) for token, number in enumerate(numbers) if number.lstrip("+-") == quoted]
    return found


def _first_run_number(sections: dict[str, str], place: Place, located: str) -> tuple[float | None, str]:
    """The number the first run printed at this place (None if none), and what is wrong with it, if anything.

    `located` is the recording's line there: the same place with other words around it holds another
    quantity (a table sorted by time, say), so it can't agree.
    """
    section, line, token = place
    lines = sections.get(section, "").splitlines()
    if not lines:
        return None, f"the first run printed nothing in section '{section}'"
    # A table sorted by a measured column puts its rows in another order in each run: the line whose
    # words are the recording's, if the section has exactly one, is the same quantity.
    same_words = [index for index, text in enumerate(lines) if _words(text) == _words(located)]
    if line < len(lines) and _words(lines[line]) != _words(located) and len(same_words) == 1:
        line = same_words[0]
    if line >= len(lines):
        return None, f"the first run's section '{section}' has only {len(lines)} lines"
    numbers = numbers_on(lines[line])
    if token >= len(numbers):
        return None, f"no number at this place in the first run, whose line reads: {lines[line].strip()}"
    if _words(lines[line]) != _words(located):
        return float(numbers[token]), f"the line reads differently in the first run: {lines[line].strip()}"
    return float(numbers[token]), ""


def _row(report: Report, recording: Result, page: QuotingPage, quoted: str, found: list[Place]) -> Row:
    section, line, token = place = found[0]
    located = recording.sections[section].splitlines()[line]
    if report.first_values is None:
        first, note = _first_run_number(report.first_sections, place, located)
    else:  # a report of the old form
        first = report.first_values.get(f"{section}:{line}:{token}")
        note = "" if first is not None else "the first run's number at this place was not kept"
    compared = report.first_values is None or first is not None
    second = float(numbers_on(located)[token])
    return Row(page.page, quoted, place, len(found), second, first, page.tolerance, note, compared)


def rows(report: Report, recording: Result, pages: list[QuotingPage]) -> list[Row]:
    """A row for each number a page quotes that the recording (the second run) prints."""
    return [
        _row(report, recording, page, quoted, found)
        for page in pages
        for quoted in page.numbers
        if (found := places(quoted, recording, page))
    ]


def summary(found: list[Row]) -> str:
    if not found:
        return "no page quotes a number the recording prints"
    tolerances = ", ".join(percent(value) for value in sorted({row.tolerance for row in found}))
    text = f"{len(found)} quoted numbers, {sum(row.agrees for row in found)} agree within the page's tolerance"
    not_compared = sum(not row.compared for row in found)
    return f"{text} ({tolerances})" + (f", {not_compared} not compared" if not_compared else "")


def moved(first: dict[str, str], second: dict[str, str], tolerance: float) -> list[str]:
    """Per section, how many of the numbers both runs printed at one place differ beyond the tolerance."""
    counts = []
    for section, text in second.items():
        pairs = [
            (float(a), float(b))
            for old, new in zip(first.get(section, "").splitlines(), text.splitlines(), strict=False)
            if _words(old) == _words(new)
            for a, b in zip(numbers_on(old), numbers_on(new), strict=False)
        ]
        beyond = sum(not within(a, b, tolerance) for a, b in pairs)
        if beyond:
            counts.append(f"{section} {beyond} of {len(pairs)}")
    return counts


def report_text(report: Report, recording: Result, pages: list[QuotingPage], path: Path) -> str:
    """What a check prints when it is made (so `report` has first_sections): the quoted numbers, then the
    sections whose numbers moved."""
    found = rows(report, recording, pages)
    lines = [f"{report.example} on {report.device}, run twice ({relative(path)}): {summary(found)}"]
    if found:
        lines.append(f"  {'page':36} {'number':>10} {'first':>10} {'second':>10} {'diff %':>8}  agrees")
    for row in found:
        difference = "–" if row.relative_difference is None else f"{100 * row.relative_difference:+.1f}"
        first, second, page = row.shown(row.first), row.shown(row.second), row.page.removeprefix("docs/")
        lines.append(f"  {page:36} {row.quoted:>10} {first:>10} {second:>10} {difference:>8}  {row.verdict}")
    strictest = min((page.tolerance for page in pages), default=DEFAULT_TOLERANCE)
    counts = moved(report.first_sections, recording.sections, strictest)
    beyond = "; ".join(counts) if counts else "none"
    lines.append(f"  numbers beyond {percent(strictest)} between the runs, per section: {beyond}")
    return "\n".join(lines)


def make_report(first: Result, second: Result) -> Report:
    """The report of two successful runs of one example, the second of which is its recording."""
    stamps, seconds = [first.stamp, second.stamp], [first.seconds, second.seconds]
    key, digest = second.key, sections_digest(second)
    return Report(second.example, second.device, key, digest, stamps, seconds, first_sections=dict(first.sections))


def report_path(example: Example, device: str) -> Path:
    return REPRODUCTION / device / f"{example.name}.json"


def save(report: Report) -> Path:
    path = report_path(Example(report.example), report.device)
    path.parent.mkdir(parents=True, exist_ok=True)
    fields = {name: value for name, value in asdict(report).items() if value is not None}  # one of the first_*
    path.write_text(json.dumps(fields, indent=1) + "\n")
    return path


def load(example: Example, device: str) -> Report | None:
    path = report_path(example, device)
    return Report(**json.loads(path.read_text())) if path.is_file() else None


def report_of_separate_runs(example: Example, first_path: Path) -> tuple[Report, Result]:
    """The report of two runs made in separate processes (`record --first-run`): the first run's result
    file against the committed recording, which is the second run. Saved, and returned with the recording."""
    first = Result(**json.loads(first_path.read_text()))
    second = store.load_committed(example, first.device)
    if first.example != example.name:
        raise ReproductionError(f"{first_path} is a run of {first.example}, not of {example.name}")
    if not first.ok:
        failure = first.error["summary"]
        raise ReproductionError(f"{first_path} is a failed run ({failure}); only successful runs compare")
    if second is None:
        missing = f"no {first.device} recording of {example.name} is committed"
        raise ReproductionError(f"{missing}: record the second run first")
    if first.key != second.key:
        raise ReproductionError(
            f"{first_path} ran other source than the committed recording (key {first.key[:12]}, not "
            f"{second.key[:12]}): the two runs must run the same source"
        )
    report = make_report(first, second)
    save(report)
    return report, second
