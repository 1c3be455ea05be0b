"""pytest configuration for the whole repository: sybil over docs/, and the test run's folder.

It lives at the root because a conftest under tests/ never sees docs/*.md.
"""

import functools
import os
import re
import shutil
from collections import Counter

import pytest

from execdocs.layout import CACHE, ROOT, RUN_DIR_ENV
from execdocs.pages import page_references
from execdocs.sybil_blocks import is_doc_block, markdown_sybil

pytest_collect_file = markdown_sybil().pytest()
SYBIL_ITEM = re.compile(r"^(?P<page>docs/\S+\.md)::sybil:docs,line:(?P<line>\d+),")


def pytest_configure(config):
    """Give the run a fresh results folder, shared with its xdist workers through the environment."""
    if hasattr(config, "workerinput"):
        return
    if RUN_DIR_ENV not in os.environ:
        folder = CACHE / "test-run"
        shutil.rmtree(folder, ignore_errors=True)
        os.environ[RUN_DIR_ENV] = str(folder)


@functools.cache
def examples_shown_at(page: str) -> dict[int, str]:
    """A page's lines -> the example the block starting there includes or shows (the first, if several)."""
    shown = {}
    for reference in page_references(ROOT / page):
        shown.setdefault(reference.line, reference.example.name)
    return shown


def example_group(item) -> str | None:
    """The example an item waits for: a test_example_runs item's, or the one a page's block includes or shows."""
    example = getattr(getattr(item, "callspec", None), "params", {}).get("example")
    if example is not None:
        return example.name
    found = SYBIL_ITEM.match(item.nodeid)
    return examples_shown_at(found["page"]).get(int(found["line"])) if found else None


def pytest_collection_modifyitems(config, items):
    """An example's own test and its page's blocks go to one worker (`-n 2 --dist loadgroup`), where the first
    runs the example and the others read its result: apart, one worker would sit waiting while the other ran it."""
    for item in items:
        group = example_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def pytest_terminal_summary(terminalreporter):
    counts = Counter()
    reasons = Counter()
    for outcome in ("passed", "failed", "skipped", "error"):
        for report in terminalreporter.stats.get(outcome, []):
            if is_doc_block(getattr(report, "nodeid", "")) and (report.when == "call" or outcome != "passed"):
                counts[outcome] += 1
                if outcome == "skipped":
                    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
                    reasons[reason.removeprefix("Skipped: ")] += 1
    if not counts:  # a run of other tests only, e.g. the browser tests after the build
        return
    terminalreporter.write_sep("=", "code blocks in docs/")
    terminalreporter.write_line(
        f"{counts['passed']} verified, {counts['skipped']} skipped, {counts['failed'] + counts['error']} failed"
    )
    for reason, count in reasons.items():
        terminalreporter.write_line(f"  skipped {count}: {reason}")
