"""The labs: notebooks in jupytext's percent format under docs/labs/, rendered by mkdocs-jupyter.

A lab's cells carry tags: `solution` for a worked solution (it follows the TODO cell it solves),
`check` for a cell that must fail until the task is solved, `timing` for a cell whose checks read a
clock (the build runs such a lab on its own, execdocs/lab_render.py). The site executes each lab with its
solutions; the reader downloads it without them. This module:

- builds the reader's notebook (solution cells removed, outputs cleared), published by the hook as
  `labs/<name>.ipynb`, with the vendored MathJax the lab pages load;
- finishes each rendered lab page: a download button under the title, each solution folded into a
  "Show solution" block, links to `.md` and lab `.py` sources turned into the pages' URLs (a link
  to a missing page is a warning, so a strict build fails on it), and the JupyterLab stylesheet
  that mkdocs-jupyter inlines pruned to what the page's markup uses;
- gives tests/test_labs.py the cells to execute, with and without solutions.
"""

import copy
import json
import logging
import os
import posixpath
import re
from pathlib import Path

import jupytext
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

from execdocs.lab_styles import prune_styles
from execdocs.layout import CACHE, DOCS, EXAMPLES, INDUCTOR_CACHE
from execdocs.vendor import LAB_ASSETS, site_files

log = logging.getLogger("mkdocs.plugins.execdocs.labs")

LABS = DOCS / "labs"
SOLUTION = "solution"
CHECK = "check"
TIMING = "timing"
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}


# Set by `nox -s tests`, whose strict build executes every lab with its solutions after the test run.
BUILD_RUNS_LABS_ENV = "EXECDOCS_BUILD_RUNS_LABS"


def lab_paths() -> list[Path]:
    return sorted(LABS.glob("*.py"))


def is_lab(src_uri: str) -> bool:
    return src_uri.startswith("labs/") and src_uri.endswith(".py") and "/" not in src_uri[len("labs/") :]


def tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def notebook(path: Path, solutions: bool = True):
    """The lab as an nbformat notebook, with or without its solution cells."""
    nb = jupytext.read(path)
    if not solutions:
        nb = copy.deepcopy(nb)
        nb.cells = [cell for cell in nb.cells if SOLUTION not in tags(cell)]
    return nb


def times_itself(path: Path) -> bool:
    return any(TIMING in tags(cell) for cell in notebook(path).cells)


def code_cells(path: Path, solutions: bool = True) -> list[tuple[str, list[str]]]:
    """(source, tags) of each code cell, in order: what tests/test_labs.py executes."""
    return [(cell.source, tags(cell)) for cell in notebook(path, solutions).cells if cell.cell_type == "code"]


def reader_notebook(path: Path, site_url: str | None = None) -> str:
    """The downloadable .ipynb: no solution cells, no outputs, a Python kernel, site links absolute."""
    nb = notebook(path, solutions=False)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        elif cell.cell_type == "markdown" and site_url:
            cell.source = _absolute_links(cell.source, site_url)
    nb.metadata["kernelspec"] = KERNELSPEC
    nb.metadata.pop("jupytext", None)
    return jupytext.writes(nb, fmt="ipynb")


def _absolute_links(markdown: str, site_url: str) -> str:
    """`](../dynamo/guards.md#x)` -> `](<site_url>/dynamo/guards/#x)`: a downloaded notebook has no site around it."""

    def replace(match: re.Match) -> str:
        target, anchor = match.group(1), match.group(2) or ""
        path = posixpath.normpath(posixpath.join("labs", target))
        page = path.removesuffix(".md").removesuffix(".py")
        page = "" if page == "index" else page.removesuffix("/index") + "/"
        return f"]({site_url.rstrip('/')}/{page}{anchor})"

    return re.sub(r"\]\(([^):#\s]+\.(?:md|py))(#[^)\s]*)?\)", replace, markdown)


def configure(config):
    """on_config: give mkdocs-jupyter's render cache a folder per device kind and environment.

    Its cache key is the notebook's text and the plugin's options: without this, a lab rendered on
    a CPU would be served from the cache to a GPU build (the image copies .cache/ in), and a change
    to the examples' helper module, which the labs import, or to torch would not re-run them.
    """
    import hashlib

    from execdocs.environment import machine_device, machine_stamp

    plugin = config.plugins.get("mkdocs-jupyter")
    if plugin is None:
        return config
    stamp = machine_stamp()
    key = hashlib.sha256()
    key.update((EXAMPLES / "compile_tools.py").read_bytes())
    key.update(f"{stamp['python']}|{stamp['torch']}|{stamp['triton']}|{stamp['cuda']}".encode())
    plugin.config["cache_dir"] = str(CACHE / "mkdocs-jupyter" / f"{machine_device()}-{key.hexdigest()[:12]}")
    return config


def prepare_files(files, config):
    """on_files: publish each lab's reader notebook and the vendored MathJax; set up the kernels' environment."""
    # mkdocs-jupyter's kernels inherit this process's environment: let them import the examples'
    # helper module and share Inductor's cache with the examples.
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(INDUCTOR_CACHE))
    path = os.environ.get("PYTHONPATH", "")
    if str(EXAMPLES) not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(EXAMPLES), path]))
    for vendored_file in site_files(config, LAB_ASSETS):
        files.append(vendored_file)
    for lab in lab_paths():
        if files.get_file_from_path(f"labs/{lab.stem}.ipynb") is not None:
            raise PluginError(
                f"docs/labs/{lab.stem}.ipynb is in the way of the generated download: move it out of docs/"
            )
        content = reader_notebook(lab, config.site_url)
        files.append(File.generated(config, f"labs/{lab.stem}.ipynb", content=content))
    return files


_SOLUTION_CELL = re.compile(r'<div class="[^"]*\bcelltag_solution\b[^"]*"[^>]*>')
_DIV = re.compile(r"<div\b|</div>")
_LINK = re.compile(r'href="([^":#?]+\.(?:md|py))(#[^"]*)?"')
_MERMAID_LOADER = re.compile(
    r'<script type="module">(?:(?!</script>).)*?mermaid\.esm(?:(?!</script>).)*?</script>', re.S
)
_REMOTE = re.compile(r'<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)="(?:https?:)?//[^"]*"', re.I)


_OUTPUT_AREA = re.compile(r'<div class="jp-OutputArea jp-Cell-outputArea"[^>]*>')


def _div_end(html: str, start: int, what: str) -> int:
    """Where the <div> that opens at `start` closes (after its </div>)."""
    depth = 0
    for tag in _DIV.finditer(html, start):
        depth += 1 if tag.group() == "<div" else -1
        if depth == 0:
            return tag.end()
    raise PluginError(f"{what} of a lab has no closing </div>")


def _fold_solutions(html: str) -> tuple[str, int]:
    """Wrap each solution cell (its outermost div) in a closed <details> block."""
    out, position, count = [], 0, 0
    while match := _SOLUTION_CELL.search(html, position):
        end = _div_end(html, match.start(), "a solution cell")
        out += [
            html[position : match.start()],
            '<details class="success lab-solution"><summary>Show solution</summary>\n',
            html[match.start() : end],
            "\n</details>",
        ]
        position, count = end, count + 1
    return "".join(out) + html[position:], count


def _stamp_outputs(html: str) -> str:
    """Under each cell's output, the environment that printed it: this build's, which the render cache is keyed by
    (`configure`), so a cached page's outputs were printed by the same device, torch, triton and Python."""
    from execdocs.environment import machine_device, machine_host, machine_stamp
    from execdocs.render import environment_line

    environment = environment_line(machine_device(), {**machine_stamp(), "host": machine_host()})
    line = f'<p class="execdocs-stamp">Output of this lab\'s run · {environment}</p>'
    out, position = [], 0
    while match := _OUTPUT_AREA.search(html, position):
        end = _div_end(html, match.start(), "an output")
        out += [html[position:end], line]
        position = end
    return "".join(out) + html[position:]


def finish_page(html: str, page, config, files) -> str:
    """on_page_content for a lab: download button, folded solutions, stamped outputs, working links, pruned styles,
    nothing remote."""
    if not is_lab(page.file.src_uri):
        return html
    name = posixpath.basename(page.file.src_uri).removesuffix(".py")
    download = files.get_file_from_path(f"labs/{name}.ipynb")
    button = (
        f'<p class="lab-download"><a class="md-button md-button--primary" href="{download.url_relative_to(page.file)}" '
        f'download="{name}.ipynb">Download this lab (.ipynb, without solutions)</a></p>'
    )
    title_end = html.find("</h1>")
    at = title_end + len("</h1>") if title_end >= 0 else 0
    html = html[:at] + button + html[at:]

    html, folded = _fold_solutions(html)
    html = _stamp_outputs(html)
    if folded == 0:
        log.warning(f"lab {page.file.src_uri} has no cell tagged {SOLUTION!r}")

    def link(match: re.Match) -> str:
        target, anchor = match.group(1), match.group(2) or ""
        path = posixpath.normpath(posixpath.join(posixpath.dirname(page.file.src_uri), target))
        linked = files.get_file_from_path(path)
        if linked is None or not linked.is_documentation_page():
            log.warning(f"lab {page.file.src_uri} links to '{target}', which is not a page of the site")
            return match.group(0)
        return f'href="{linked.url_relative_to(page.file)}{anchor}"'

    html = _LINK.sub(link, html)
    # nbconvert's lab template imports mermaid from a CDN for mermaid *outputs*; the labs have none.
    html = _MERMAID_LOADER.sub("", html)
    html = prune_styles(html)
    for remote in _REMOTE.findall(html):
        log.warning(f"lab {page.file.src_uri} would load from the network: {remote}")
    return html


def execute(path: Path, solutions: bool) -> list[dict]:
    """Run the lab's code cells in order, in one namespace, as a kernel would; record each cell's outcome.

    A failing cell does not stop the run, so that every check of a skeleton is seen to fail.
    Each cell's source is registered with linecache, as IPython does, so tracebacks and Dynamo's
    stack traces show the lines.
    """
    import linecache
    import traceback

    namespace = {"__name__": "__main__"}
    outcomes = []
    for index, (source, cell_tags) in enumerate(code_cells(path, solutions)):
        filename = f"<{path.stem} cell {index}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
        outcome = {"cell": index, "tags": cell_tags, "first_line": source.strip().splitlines()[0], "error": None}
        try:
            exec(compile(source, filename, "exec"), namespace)
        except Exception as error:
            outcome["error"] = type(error).__name__
            outcome["message"] = str(error)
            outcome["traceback"] = traceback.format_exc()
        outcomes.append(outcome)
    return outcomes


if __name__ == "__main__":
    # python -m execdocs.labs <lab.py> with|without <result.json>: what tests/test_labs.py runs, one process each.
    import sys

    lab, variant, result = sys.argv[1:]
    Path(result).write_text(json.dumps(execute(Path(lab), solutions=variant == "with")))
