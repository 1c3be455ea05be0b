"""Finishing touches to each page's HTML for readers: what search indexes, what the keyboard reaches."""

import re

# The wrapper of every highlighted code block: Markdown's, and nbconvert's in the labs.
_CODE_BLOCK = re.compile(r'<div class="(?:language-\S+ )?highlight(?:-ipynb)?\b[^"]*"')
# The element that scrolls sideways: <code> in Material's code blocks, the highlight div in a lab's cells.
_SCROLLING_CODE = re.compile(
    r'(<pre\b[^>]*>(?:<span></span>)?<code)\b(?![^>]*tabindex)|(<div class="highlight-ipynb\b[^"]*")'
)


def without_code_in_search(html: str) -> str:
    """Search covers the prose and its inline code. Code blocks and recorded dumps would more than double
    the index that every page loads, and drown the prose's matches."""
    return _CODE_BLOCK.sub(lambda match: f"{match.group(0)} data-search-exclude", html)


def keyboard_scrollable_code(html: str) -> str:
    """A code block wider than the column scrolls; without a tab stop, a keyboard cannot scroll it."""
    return _SCROLLING_CODE.sub(lambda match: f'{match.group(0)} tabindex="0"', html)
