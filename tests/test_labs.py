"""Every lab works as a lab: with its solutions every cell runs and every check passes; as the
reader downloads it (solutions stripped) every other cell still runs and every check fails with
an AssertionError, the message the reader sees.

Each lab runs in a process of its own, once with and once without solutions: Dynamo's caches and
Inductor's configuration are process-global, and a lab must not see another's state.
"""

import json
import os
import subprocess
import sys

import jupytext
import pytest

from execdocs import lab_styles, labs
from execdocs.environment import child_env

LABS = labs.lab_paths()


def run(lab, variant, tmp_path):
    result = tmp_path / f"{lab.stem}-{variant}.json"
    process = subprocess.run(
        [sys.executable, "-m", "execdocs.labs", str(lab), variant, str(result)],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert process.returncode == 0, f"the lab runner itself failed:\n{process.stderr[-3000:]}"
    return json.loads(result.read_text())


def describe(outcome):
    return f"cell {outcome['cell']} ({outcome['first_line']!r}, tags {outcome['tags']})"


def test_there_are_seven_labs():
    assert [lab.stem for lab in LABS] == [
        "backends",
        "benchmark_suite",
        "capture",
        "custom_op",
        "export",
        "graph_breaks",
        "inductor",
    ]


@pytest.mark.parametrize("lab", LABS, ids=lambda lab: lab.stem)
def test_every_task_has_a_solution_and_a_check(lab):
    cells = labs.code_cells(lab)
    solutions = [i for i, (_, tags) in enumerate(cells) if labs.SOLUTION in tags]
    checks = [i for i, (_, tags) in enumerate(cells) if labs.CHECK in tags]
    assert solutions and len(solutions) == len(checks), f"{lab.name}: {len(solutions)} solutions, {len(checks)} checks"
    for solution, check in zip(solutions, checks, strict=True):
        assert solution < check, f"{lab.name}: the check of the solution in code cell {solution} comes before it"
        assert "TODO" in cells[solution - 1][0], f"{lab.name}: the cell before solution {solution} has no TODO"


# `nox -s tests` builds the site strictly after this run, and the build executes every lab with its solutions
# (mkdocs-jupyter, `allow_errors: false`), failing on the first cell that raises: running them here as well
# would run each lab twice in one session.
BUILD_RUNS_LABS = labs.BUILD_RUNS_LABS_ENV in os.environ


@pytest.mark.skipif(BUILD_RUNS_LABS, reason="the strict build of this session runs every lab with its solutions")
@pytest.mark.parametrize("lab", LABS, ids=lambda lab: lab.stem)
def test_with_solutions_every_check_passes(lab, tmp_path):
    failures = [outcome for outcome in run(lab, "with", tmp_path) if outcome["error"]]
    assert not failures, "\n".join(f"{describe(o)} raised:\n{o['traceback']}" for o in failures)


@pytest.mark.parametrize("lab", LABS, ids=lambda lab: lab.stem)
def test_without_solutions_every_check_fails(lab, tmp_path):
    outcomes = run(lab, "without", tmp_path)
    assert all(labs.SOLUTION not in outcome["tags"] for outcome in outcomes)
    problems = []
    for outcome in outcomes:
        if labs.CHECK in outcome["tags"] and outcome["error"] != "AssertionError":
            problems.append(f"{describe(outcome)} should fail with AssertionError, got {outcome['error']}")
        elif labs.CHECK in outcome["tags"] and not outcome["message"]:
            problems.append(f"{describe(outcome)} fails without telling the reader why")
        elif labs.CHECK not in outcome["tags"] and outcome["error"]:
            problems.append(f"{describe(outcome)} must run on the skeleton, raised:\n{outcome['traceback']}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("lab", LABS, ids=lambda lab: lab.stem)
def test_the_download_has_no_solution_and_no_output(lab):
    nb = jupytext.reads(labs.reader_notebook(lab, site_url="https://example.org/site/"), fmt="ipynb")
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert not [cell for cell in nb.cells if labs.SOLUTION in labs.tags(cell)]
    assert all(not cell.outputs for cell in nb.cells if cell.cell_type == "code")
    markdown = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    assert ".md)" not in markdown and ".md#" not in markdown, "links to pages must point at the published site"


def test_a_lab_page_keeps_only_the_styles_its_markup_uses():
    css = (
        "@charset 'UTF-8';"
        ".jupyter-wrapper{--used: var(--chained);--chained: red;--unused: blue}"
        ".jupyter-wrapper .jp-Cell{color: var(--used)}"
        ".jupyter-wrapper .jp-Launcher{color: var(--unused)}"
        ".jp-Launcher,.jp-Cell:not(.jp-mod-dirty) pre{margin: 0}"
        ".md-typeset__scrollwrap .jp-Cell{padding: 0}"
        "#absent{color: blue}"
        "@media print{.jp-Launcher{display: none}}"
        "@media screen{.jp-Cell{display: block}}"
    )
    html = f'<style type="text/css">{css}</style><div class="jupyter-wrapper"><div class="jp-Cell">x</div></div>'
    pruned = lab_styles.prune_styles(html)
    assert pruned == (
        '<style type="text/css">'
        ".jupyter-wrapper{--used: var(--chained);--chained: red}"
        ".jupyter-wrapper .jp-Cell{color: var(--used)}"
        ".jp-Cell:not(.jp-mod-dirty) pre{margin: 0}"
        ".md-typeset__scrollwrap .jp-Cell{padding: 0}"  # Material's classes are added around the content
        "@media screen{.jp-Cell{display: block}}"
        '</style><div class="jupyter-wrapper"><div class="jp-Cell">x</div></div>'
    )
    assert lab_styles.prune_styles('<style>.jp-Launcher{margin: 0}</style><p class="x">y</p>') == '<p class="x">y</p>'


def test_every_output_of_a_lab_is_stamped_with_the_environment_that_printed_it():
    area = '<div class="jp-OutputArea jp-Cell-outputArea"><div class="jp-OutputArea-child"><pre>{}</pre></div></div>'
    html = "<h1>Lab</h1>" + area.format("first") + "<p>prose</p>" + area.format("second")
    stamped = labs._stamp_outputs(html)
    assert stamped.count('<p class="execdocs-stamp">Output of this lab\'s run · ') == 2
    assert stamped.index("first") < stamped.index("execdocs-stamp") < stamped.index("<p>prose</p>")
    assert "torch " in stamped and "Python " in stamped
