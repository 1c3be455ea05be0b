"""What Dynamo said while a compiled model ran: its graph breaks, and the frames it would not trace.

Import it from an example of this chapter: `from distributed import _dynamo_log`.
"""

import io
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager

import compile_tools

# A file's path up to the installed packages, or up to this project's examples: dropped
MACHINE_PART = re.compile(r"/\S*?site-packages/|/\S*?/(?=examples/)")
# At debug level Dynamo's convert_frame logger says which frames it skips: "skipping: forward (reason: ..., file: ...)"
FRAMES_LOGGER = "torch._dynamo.convert_frame"
SKIPPED_FORWARD = re.compile(r"^skipping: forward \(reason: (.*), file: (.*)\)$")


@contextmanager
def logger_output(name: str, level: int) -> Iterator[io.StringIO]:
    """What the logger `name` writes at `level` and above while the block runs (for loggers that are not
    TORCH_LOGS artifacts, which compile_tools.captured_logs covers)."""
    output = io.StringIO()
    handler = logging.StreamHandler(output)
    logger = logging.getLogger(name)
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield output
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)


@contextmanager
def dynamo_said() -> Iterator[dict]:
    """Collect, while the block runs, the graph breaks' explanations, the recompiles' reasons, and the forward
    frames Dynamo did not trace, with the reason (into the dict this yields, filled when the block ends)."""
    said: dict = {}
    with logger_output(FRAMES_LOGGER, logging.DEBUG) as frames:
        with compile_tools.captured_logs(graph_breaks=True, recompiles=True) as log:
            yield said
    lines = log.getvalue().splitlines()
    said["graph_breaks"] = list(dict.fromkeys(  # each once, in order; the sentence before any file's path
        line.split("Explanation: ")[1].split(" in file ")[0].split(". ")[0] for line in lines if "Explanation: " in line
    ))  # fmt: skip
    said["recompiles"] = list(dict.fromkeys(line.strip()[2:] for line in lines if "mismatch" in line))
    skipped = [match.groups() for line in frames.getvalue().splitlines() if (match := SKIPPED_FORWARD.match(line))]
    frames_said = (f"{MACHINE_PART.sub('', file)} ({reason})" for reason, file in skipped)
    said["skipped_forward"] = list(dict.fromkeys(frames_said))
