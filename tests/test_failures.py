"""Bad input fails loudly: each message names the page, the block and the example's file:line,
and says what to do. Each test builds a small project of its own."""

import json

import pytest

from tests.sandbox import Sandbox

SECTION_THEN_FALSE_CLAIM = """\
# --8<-- [start:first]
print("hello")
# --8<-- [end:first]
assert 1 + 1 == 3
"""

SHOW_FIRST = """\
# Demo

```python exec="on" id="demo/example:first"
from execdocs import show
show("demo/example:{section}")
```
"""


# A GPU recording whose key no longer matches its example.
STALE_RECORDING = {
    "example": "demo/example",
    "device": "cuda",
    "key": "recorded-from-an-older-source",
    "inputs": ["examples/demo/example.py"],
    "sections": {"first": "hello"},
    "error": None,
    "seconds": 1.0,
    "stamp": {"python": "3.12", "torch": "2.11", "triton": "3.6", "cuda": "13.0", "gpu": "H100", "date": "2026-01-01"},
}


@pytest.fixture
def sandbox(tmp_path):
    return Sandbox(tmp_path)


def test_a_false_assertion_fails_the_build_naming_page_block_and_line(sandbox):
    sandbox.write("examples/demo/example.py", SECTION_THEN_FALSE_CLAIM)
    sandbox.write("docs/index.md", SHOW_FIRST.format(section="first"))
    build = sandbox.build()
    assert build.returncode != 0
    assert "docs/index.md:3 (block demo/example:first)" in build.stderr
    assert "examples/demo/example.py:4 failed on cpu: assertion failed: assert 1 + 1 == 3" in build.stderr
    assert "Run `python examples/demo/example.py`" in build.stderr
    assert not (sandbox.root / "site" / "index.html").exists(), "no page is written with a failure in it"


def test_a_missing_section_says_how_to_add_it(sandbox):
    sandbox.write("examples/demo/example.py", SECTION_THEN_FALSE_CLAIM.replace("assert 1 + 1 == 3", ""))
    sandbox.write("docs/index.md", SHOW_FIRST.format(section="second"))
    build = sandbox.build()
    assert build.returncode != 0
    assert (
        "docs/index.md:3 (block demo/example:first): examples/demo/example.py has no section 'second'" in build.stderr
    )
    assert "# --8<-- [start:second]" in build.stderr


def test_a_quote_the_output_no_longer_prints_fails_the_build(sandbox):
    sandbox.write("examples/demo/example.py", SECTION_THEN_FALSE_CLAIM.replace("assert 1 + 1 == 3", ""))
    page = '# Demo\n\n```python exec="on" id="demo/example:first"\nfrom execdocs import show_quote\n'
    sandbox.write("docs/index.md", page + 'show_quote("demo/example:first", "{quote}")\n```\n'.format(quote="hello"))
    assert sandbox.build().returncode == 0
    sandbox.write("docs/index.md", page + 'show_quote("demo/example:first", "goodbye")\n```\n')
    build = sandbox.build()
    assert build.returncode != 0
    assert "docs/index.md:3 (block demo/example:first)" in build.stderr
    assert "no line of the cpu output of section 'first' contains 'goodbye'" in build.stderr


def test_a_missing_gpu_recording_names_the_command_that_records_it(sandbox):
    sandbox.write("examples/demo/example.py", "# execdocs: devices=cuda\n" + SECTION_THEN_FALSE_CLAIM)
    sandbox.write("docs/index.md", SHOW_FIRST.format(section="first"))
    build = sandbox.build()
    assert build.returncode != 0
    assert "no cuda output of examples/demo/example.py is committed" in build.stderr
    assert "nox -s record -- demo/example" in build.stderr


def test_a_stale_gpu_recording_fails_the_build_and_the_tests(sandbox):
    sandbox.write("examples/demo/example.py", "# execdocs: devices=cuda\n" + SECTION_THEN_FALSE_CLAIM)
    sandbox.write("docs/index.md", SHOW_FIRST.format(section="first"))
    sandbox.write("snippets/outputs/cuda/demo/example.json", json.dumps(STALE_RECORDING))
    build = sandbox.build()
    assert build.returncode != 0
    assert "the cuda output of examples/demo/example.py recorded on 2026-01-01 is stale" in build.stderr
    tests = sandbox.run("-m", "pytest", "tests/test_recordings.py", "-q", "-p", "no:cacheprovider")
    assert tests.returncode != 0
    assert "is stale" in tests.stdout and "nox -s record -- demo/example" in tests.stdout


def test_a_broken_link_fails_the_strict_build(sandbox):
    sandbox.write("docs/index.md", "# Demo\n\nSee [the missing page](missing.md).\n")
    build = sandbox.build()
    assert build.returncode != 0
    assert "missing.md" in build.stderr


def test_a_gpu_only_block_is_skipped_on_cpu_and_says_so_on_the_page_and_in_the_summary(sandbox):
    sandbox.write(
        "docs/index.md",
        '# Demo\n\n```python requires="cuda"\nimport torch\nassert torch.cuda.is_available()\n```\n\n'
        "```python\nassert 2 + 2 == 4\n```\n",
    )
    tests = sandbox.run("-m", "pytest", "docs", "-p", "no:cacheprovider", "-rs")
    assert tests.returncode == 0, tests.stdout
    assert "1 verified, 1 skipped, 0 failed" in tests.stdout
    assert "needs a CUDA GPU" in tests.stdout
    build = sandbox.build()
    assert build.returncode == 0, build.stderr
    page = (sandbox.root / "site" / "index.html").read_text()
    assert "Needs a CUDA GPU" in page and 'requires="cuda"' not in page


def test_a_preview_shows_a_stale_gpu_recording_marked_as_stale(sandbox):
    """Under `mkdocs serve` an author without a GPU still sees the page, with the problem on it."""
    sandbox.write("examples/demo/example.py", "# execdocs: devices=cuda\n" + SECTION_THEN_FALSE_CLAIM)
    sandbox.write("snippets/outputs/cuda/demo/example.json", json.dumps(STALE_RECORDING))
    shown = sandbox.run(
        "-c",
        "import os; os.environ['EXECDOCS_PREVIEW'] = '1'\n"
        "from execdocs.render import render\n"
        "print(render('demo/example:first')[0])",
    )
    assert shown.returncode == 0, shown.stderr
    assert "Stale: this preview shows an outdated recording." in shown.stdout
    assert "nox -s record -- demo/example" in shown.stdout and "hello" in shown.stdout
