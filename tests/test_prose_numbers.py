"""Numbers in a page's prose come from its outputs: a measured figure quoted in a sentence
("0.0148 ms", "1.66x") must appear in what an example the page shows printed (any device), in
the example's own source (an assert's threshold), or in a line that cites an outside source with
a link (a published result). Re-recording an example whose numbers the prose quotes then fails
here, instead of leaving the prose quoting a run that no longer exists.

Only numbers with three or more significant digits are checked: "1.2x" is usually a threshold or
a rounded description, "0.0148" is a measurement.
"""

import re
from pathlib import Path

import pytest

from execdocs import store
from execdocs.layout import DOCS, relative
from execdocs.pages import page_references

NUMBER = re.compile(r"(?<![\w.])(\d+\.\d+)(?![\w.]*\d)")
VERSION = re.compile(r"\b(?:torch|Python|triton|CUDA|PyTorch|sm_)\s?\d+\.\d+(?:\.\d+)?", re.I)
CITATION_LINE = re.compile(r"\]\(https?://")


def significant_digits(number: str) -> int:
    return len(number.replace(".", "").lstrip("0"))


def prose(markdown: str) -> str:
    """The page without fenced blocks, inline code, link targets and version numbers."""
    text = re.sub(r"^(`{3,}|~{3,}).*?^\1", "", markdown, flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return VERSION.sub("", text)


def sources_of_numbers(path: Path) -> str:
    """Everything a number in the prose may be quoted from: outputs, example sources, citing lines."""
    texts = [line for line in path.read_text().splitlines() if CITATION_LINE.search(line)]
    for example in {reference.example for reference in page_references(path)}:
        texts.append(example.source)
        for device in ("cpu", "cuda"):
            result = store.load_committed(example, device)
            if result is not None:
                texts.extend(result.sections.values())
    return "\n".join(texts)


PAGES = sorted(DOCS.rglob("*.md"))


@pytest.mark.parametrize("path", PAGES, ids=[relative(path) for path in PAGES])
def test_quoted_numbers_come_from_the_outputs(path):
    quoted = [n for n in NUMBER.findall(prose(path.read_text())) if significant_digits(n) >= 3]
    known = sources_of_numbers(path)
    unknown = sorted({n for n in quoted if n not in known})
    assert not unknown, (
        f"{relative(path)} quotes {', '.join(unknown)}, which no output the page shows printed: "
        "quote the number as the recorded output prints it, or re-read the output after re-recording"
    )
