"""Finishing touches to each page's HTML for readers: what search indexes, what the keyboard reaches."""

import re

# The div execdocs/render.py puts around each output. md_in_html keeps only its class, and inside an
# admonition leaves its `markdown` attribute: so the attribute that search reads is added here.
_OUTPUT_BLOCK = re.compile(r'<div class="execdocs-output"(?: markdown(?:="1")?)?>')
# The element that scrolls sideways: <code> in Material's code blocks, the highlight div in a lab's cells.
_SCROLLING_CODE = re.compile(r'(<pre\b(?![^>]*mermaid)[^>]*>(?:<span></span>)?<code)\b(?![^>]*tabindex)|(<div class="highlight-ipynb\b[^"]*")')


def without_outputs_in_search(html: str) -> str:
    """Recorded dumps would double the search index that every page loads, and drown the prose's matches."""
    return _OUTPUT_BLOCK.sub('<div class="execdocs-output" data-search-exclude>', html)


def keyboard_scrollable_code(html: str) -> str:
    """A code block wider than the column scrolls; without a tab stop, a keyboard cannot scroll it."""
    return _SCROLLING_CODE.sub(lambda match: f'{match.group(0)} tabindex="0"', html)
