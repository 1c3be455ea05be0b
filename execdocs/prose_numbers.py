"""The numbers a page's prose quotes ("0.0148 ms", "1.66x"), as an author reads them off an output.

Only numbers with three or more significant digits count: "1.2x" is usually a threshold or a
rounded description, "0.0148" is a measurement.
"""

import re

from mkdocs.utils import meta

NUMBER = re.compile(r"(?<![\w.])(\d+\.\d+)(?![\w.]*\d)")
VERSION = re.compile(r"\b(?:torch|Python|triton|CUDA|PyTorch|sm_)\s?\d+\.\d+(?:\.\d+)?", re.I)


def significant_digits(number: str) -> int:
    return len(number.replace(".", "").lstrip("0"))


def prose(markdown: str) -> str:
    """The page without front matter, fenced blocks, inline code, link targets and version numbers."""
    text = meta.get_data(markdown)[0]  # split as MkDocs splits it, so a setting is never prose
    text = re.sub(r"^(`{3,}|~{3,}).*?^\1", "", text, flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return VERSION.sub("", text)


def quoted_numbers(markdown: str) -> list[str]:
    """Each measured-looking number the prose quotes, once, in the order the page quotes them."""
    found = NUMBER.findall(prose(markdown))
    return list(dict.fromkeys(number for number in found if significant_digits(number) >= 3))
