"""sybil support: every fenced Python block of docs/**/*.md becomes a test.

sybil's own Markdown parser takes only fences whose info string is exactly `python`, so
markdown-exec blocks (`python exec="on" ...`) would be skipped silently; this parser takes them
all, with their attributes:

- a block that includes example sections (`--8<-- "examples/...py:section"`) passes when that
  example ran successfully in this test run (or, for another device, has a fresh recording);
- any other Python block runs, in one namespace per page; `show()` calls inside it check the
  output they display the same way;
- a block marked `requires="cuda"` is skipped on a machine without a CUDA GPU, with that reason.
"""

from pathlib import Path

import pytest
from sybil import Document, Region, Sybil

from execdocs import runner
from execdocs.environment import can_run, machine_device
from execdocs.examples import Example
from execdocs.layout import DOCS, relative
from execdocs.markdown_blocks import blocks
from execdocs.pages import Reference, default_device, include_target, parse_target, problem

GPU_SKIP_REASON = "needs a CUDA GPU; the page says so, and the GPU image runs this block"


def _verify_includes(example) -> None:
    page, block = example.region.parsed
    machine = machine_device()
    for target in block.includes:
        name, section = parse_target(include_target(target))
        source = Example(name)
        device = default_device(source, machine)
        # An example's section is verified by its run; a support module's only has to exist.
        ran = not source.is_support_module
        reference = Reference(
            page, block.line, block.attrs.get("id", f"at line {block.line}"), source, section, device, shows_output=ran
        )
        result = runner.ensure(source, device) if ran and source.runs_on(device) else None
        message = problem(reference, device, result, can_run(device, source.gpus))
        if message:
            pytest.fail(message, pytrace=False)


def _run_python(example) -> None:
    page, block = example.region.parsed
    if block.attrs.get("requires") == "cuda" and machine_device() != "cuda":
        pytest.skip(GPU_SKIP_REASON)
    # Pad with blank lines so that a traceback names the page's own line numbers.
    code = compile("\n" * block.line + block.body, page, "exec")
    exec(code, example.namespace)


def parse_python_blocks(document: Document):
    page = relative(Path(document.path))
    for block in blocks(document.text):
        if block.lang != "python":
            continue
        includes_examples = any(target.startswith("examples/") for target in block.includes)
        evaluator = _verify_includes if includes_examples else _run_python
        yield Region(block.start, block.end, parsed=(page, block), evaluator=evaluator)


def markdown_sybil() -> Sybil:
    return Sybil(parsers=[parse_python_blocks], patterns=["*.md"], path=str(DOCS), name="docs")


def is_doc_block(nodeid: str) -> bool:
    return ".md::" in nodeid
