"""A claim about another torch release links to the output that shows it: every link to the Versions page from
another page names a section of it (`versions.md#...`) that shows an output, not the page as a whole.
"""

import re

import pytest
from markdown.extensions.toc import slugify

from execdocs.layout import DOCS
from execdocs.prose_numbers import prose

VERSIONS = DOCS / "versions.md"
LINK_TO_VERSIONS = re.compile(r"\]\((?:\.\./)*versions\.md(?:#(?P<anchor>[^)\s]+))?\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(?P<title>.+?)[ \t]*$")
EXECUTED_BLOCK = re.compile(r'^```python exec="on"')


def sections_showing_output(markdown: str) -> set[str]:
    """The anchors of the page's sections (each up to the next heading) that hold an executed block."""
    anchors, current, in_fence = set(), None, False
    for line in markdown.splitlines():
        if EXECUTED_BLOCK.match(line) and current is not None:
            anchors.add(current)
        if line.startswith("```"):
            in_fence = not in_fence
        elif not in_fence and (heading := HEADING.match(line)):
            current = slugify(heading["title"], "-")
    return anchors


def links_to_versions(markdown: str) -> list[str]:
    """The anchor of each link to the Versions page in the page's prose ("" for a link to the whole page)."""
    return [match["anchor"] or "" for match in LINK_TO_VERSIONS.finditer(markdown)]


SHOWING = sections_showing_output(VERSIONS.read_text())
PAGES = sorted(path for path in DOCS.rglob("*.md") if path != VERSIONS and "versions.md" in path.read_text())


@pytest.mark.parametrize("path", PAGES, ids=[path.relative_to(DOCS).as_posix() for path in PAGES])
def test_a_link_to_the_versions_page_points_at_an_output(path):
    text = path.read_text()
    unbacked = [anchor or "(the whole page)" for anchor in links_to_versions(text) if anchor not in SHOWING]
    assert not unbacked, (
        f"docs/{path.relative_to(DOCS).as_posix()} links the Versions page at {', '.join(unbacked)}, where no output "
        f"is shown: link the section that shows the output the claim rests on ({', '.join(sorted(SHOWING))}), or "
        "drop the claim"
    )


def test_a_planted_link_to_the_whole_versions_page_is_found():
    planted = "The CPU under torch 2.11 does the same (see [Versions](../versions.md)).\n"
    assert links_to_versions(prose(planted) + planted) == [""]
    assert "" not in SHOWING
