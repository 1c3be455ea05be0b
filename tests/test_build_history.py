"""A page says what its outputs show, not its own build history: "an earlier version of this page",
"an earlier run on an H100", "this page's earlier recordings", "the first recording". A reader cannot
check a run the page does not show: show it (both recordings' numbers are on the reproduction
tables), or drop it."""

import re
from pathlib import Path

import pytest

from execdocs.layout import DOCS, relative

BUILD_HISTORY = re.compile(
    r"earlier versions? of this (page|example)|earlier recordings?|earlier runs? on\b|this page's earlier"
    r"|first recording|in earlier runs",
    re.IGNORECASE,
)


def build_history(text: str) -> list[tuple[int, str]]:
    """(line, phrase) of each phrase that tells the page's own build history."""
    return [
        (number, match.group(0))
        for number, line in enumerate(text.splitlines(), start=1)
        for match in BUILD_HISTORY.finditer(line)
    ]


def test_a_planted_history_phrase_is_found_with_its_line():
    text = "A measured figure.\nAn earlier version of this page assumed the opposite;\nthe first recording gave 2.9x."
    assert build_history(text) == [(2, "earlier version of this page"), (3, "first recording")]


def test_a_cache_read_from_an_earlier_run_is_not_history():
    assert build_history("the best configuration found by an earlier run is read from the cache") == []


PAGES = sorted(DOCS.rglob("*.md"))


@pytest.mark.parametrize("path", PAGES, ids=[relative(path) for path in PAGES])
def test_pages_tell_no_build_history(path: Path):
    found = build_history(path.read_text())
    assert not found, (
        f"{relative(path)} tells its own build history at "
        + ", ".join(f"line {line} ({phrase!r})" for line, phrase in found)
        + ": show what the page refers to (a reproduction table holds both recordings), or drop it"
    )
