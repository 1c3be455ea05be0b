"""What the build publishes besides pages: plots drawn from printed numbers, every stored result
as JSON, and the files an example wrote for readers to open (a report, say)."""

import pytest

from tests.sandbox import Sandbox

PLOTTED_EXAMPLE = """\
import json
import os
from pathlib import Path

# --8<-- [start:numbers]
print(json.dumps({"batch": [1, 2, 4], "ms": [1.0, 1.5, 2.5]}))
# --8<-- [end:numbers]
# --8<-- [start:words]
print("not a JSON document")
# --8<-- [end:words]
report = Path(os.environ["EXECDOCS_ARTIFACTS"]) / "report"
report.mkdir()
(report / "index.html").write_text("<p>a report</p>")
"""

DRAW_MODULE = """\
from matplotlib.figure import Figure


def draw(data):
    figure = Figure()
    figure.add_subplot().plot(data["batch"], data["ms"])
    return figure
"""

PLOT_PAGE = """\
# Demo

```python exec="on" html="true"
from execdocs import show_plot
show_plot("demo/example:{section}", "demo._plots:draw")
```

[The report](outputs/cpu/demo/example/report/index.html) and [the raw result](outputs/cpu/demo/example.json).
"""


@pytest.fixture
def sandbox(tmp_path):
    sandbox = Sandbox(tmp_path)
    sandbox.write("examples/demo/example.py", PLOTTED_EXAMPLE)
    sandbox.write("examples/demo/_plots.py", DRAW_MODULE)
    return sandbox


def test_a_plot_is_inline_svg_and_the_result_and_its_files_are_published(sandbox):
    sandbox.write("docs/index.md", PLOT_PAGE.format(section="numbers"))
    build = sandbox.build()
    assert build.returncode == 0, build.stderr
    page = (sandbox.root / "site" / "index.html").read_text()
    assert '<figure class="execdocs-plot">' in page and "<svg" in page
    assert "currentColor" in page, "black in the figure follows the page's text colour"
    assert "Plotted from <code>examples/demo/example.py</code>" in page
    assert (sandbox.root / "site/outputs/cpu/demo/example/report/index.html").read_text() == "<p>a report</p>"
    assert '"sections"' in (sandbox.root / "site/outputs/cpu/demo/example.json").read_text()
    assert len(list((sandbox.root / ".cache/plots").glob("*.svg"))) == 1, "drawn once, then cached"


def test_a_plot_of_a_section_that_is_not_json_says_what_to_print(sandbox):
    sandbox.write("docs/index.md", PLOT_PAGE.format(section="words"))
    build = sandbox.build()
    assert build.returncode != 0
    assert "show_plot('demo/example:words'): the section must print one JSON document" in build.stderr
