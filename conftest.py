"""pytest configuration for the whole repository: sybil over docs/, and the test run's folder.

It lives at the root because a conftest under tests/ never sees docs/*.md.
"""

import os
import shutil
from collections import Counter

from execdocs.layout import CACHE, RUN_DIR_ENV
from execdocs.sybil_blocks import is_doc_block, markdown_sybil

pytest_collect_file = markdown_sybil().pytest()


def pytest_configure(config):
    """Give the run a fresh results folder, shared with its xdist workers through the environment."""
    if hasattr(config, "workerinput"):
        return
    if RUN_DIR_ENV not in os.environ:
        folder = CACHE / "test-run"
        shutil.rmtree(folder, ignore_errors=True)
        os.environ[RUN_DIR_ENV] = str(folder)


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
