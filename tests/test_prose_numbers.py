"""Numbers in a page's prose come from its outputs: a measured figure quoted in a sentence
("0.0148 ms", "1.66x") must appear in what an example the page shows printed (any device), in
the example's own source (an assert's threshold), or in a line that cites an outside source with
a link (a published result). Re-recording an example whose numbers the prose quotes then fails
here, instead of leaving the prose quoting a run that no longer exists.

Which numbers count as quoted (three or more significant digits) is execdocs/prose_numbers.py's rule.
"""

import re
from pathlib import Path

import pytest

from execdocs import store
from execdocs.layout import DOCS, relative
from execdocs.moved_numbers import first_run_numbers
from execdocs.pages import page_references
from execdocs.prose_numbers import prose, quoted_numbers
from execdocs.render import stamp_line

CITATION_LINE = re.compile(r"\]\(https?://")


def sources_of_numbers(path: Path) -> str:
    """Everything a number in the prose may be quoted from: outputs, example sources, citing lines, and the
    first runs of the reproduction tables the page shows (the other end of a range of both runs)."""
    markdown = path.read_text()
    texts = [line for line in markdown.splitlines() if CITATION_LINE.search(line)]
    texts.extend(first_run_numbers(markdown))
    for example in {reference.example for reference in page_references(path)}:
        texts.append(example.source)
        for device in ("cpu", "cuda"):
            result = store.load_committed(example, device)
            if result is not None:
                texts.extend(result.sections.values())
                texts.append(stamp_line(result))  # shown under every output: versions, host, yardstick
    return "\n".join(texts)


PAGES = sorted(DOCS.rglob("*.md"))


@pytest.mark.parametrize("path", PAGES, ids=[relative(path) for path in PAGES])
def test_quoted_numbers_come_from_the_outputs(path):
    quoted = quoted_numbers(path.read_text())
    known = sources_of_numbers(path)
    unknown = sorted({n for n in quoted if n not in known})
    assert not unknown, (
        f"{relative(path)} quotes {', '.join(unknown)}, which no output the page shows printed: "
        "quote the number as the recorded output prints it, or re-read the output after re-recording"
    )


# "2**18" in prose is Markdown's bold marker between two numbers: it renders as "2" and a bold "18 ..."
POWER_IN_PROSE = re.compile(r"\d+\*\*\d+")


def test_a_power_outside_code_is_found():
    assert POWER_IN_PROSE.findall(prose("a sum of 2**18 values, and `2**20` in code")) == ["2**18"]


@pytest.mark.parametrize("path", PAGES, ids=[relative(path) for path in PAGES])
def test_powers_in_prose_are_written_as_code(path):
    powers = POWER_IN_PROSE.findall(prose(path.read_text()))
    assert not powers, f"{relative(path)} writes {', '.join(powers)} in prose, which renders as bold: write it as code"
