"""The numbers a page's prose quotes ("0.0148 ms", "1.66x"), as an author reads them off an output.

Only numbers with three or more significant digits count: "1.2x" is usually a threshold or a
rounded description, "0.0148" is a measurement.
"""

import re

from mkdocs.utils import meta

NUMBER = re.compile(r"(?<![\w.])(\d+\.\d+)(?![\w.]*\d)")
# A figure: a number with its unit ("31 ms", "5%", "3.5x", "2.00 GiB"), whatever its digits
FIGURE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(?:%|x\b|×|ms\b|s\b|µs\b|us\b|GB/s|GiB|GB\b|MB\b|kB\b|times\b)")
# Pages that sum up others: every figure on them is a quoted output line (show_quote)
SUMMARY_PAGES = ("distributed/remember.md", "deploying/levers.md", "benchmarking/decision_guide.md")
REMEMBER = re.compile(r"^## What to remember[ \t]*$(?P<section>.*?)(?=^## |\Z)", re.M | re.S)
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


def summary_prose(page: str, markdown: str) -> str:
    """The prose that sums a page up: all of a summary page, else its "What to remember" section."""
    if page in SUMMARY_PAGES:
        return prose(markdown)
    found = REMEMBER.search(meta.get_data(markdown)[0])
    return prose(found["section"]) if found else ""


def figures(text: str) -> list[str]:
    """Each figure with a unit in `text`, once, in order."""
    return list(dict.fromkeys(FIGURE.findall(text)))


def printed(figure: str, output: str) -> bool:
    """Whether `output` prints `figure` as a number of its own: "27" is not in "0.427", nor in "27.4"."""
    return re.search(rf"(?<![\d.]){re.escape(figure)}(?!\d|\.\d)", output) is not None
