"""`record --twice`: each quoted number is found by its place in the first run and read at the same
place in the second, against the page's tolerance; the page shows every example's state."""

import dataclasses
import json

import pytest

from execdocs import examples, reproduction, runner, store
from execdocs.examples import Example
from execdocs.reproduction import ReproductionError, compare, quoting_page
from execdocs.reproduction_tables import show_reproduction
from execdocs.store import Result

EXAMPLE = Example("demo/timing")
STAMP = {"python": "3.12", "torch": "2.11", "triton": "3.6", "cuda": "13.0", "gpu": "NVIDIA H100", "date": "2026-01-01"}

FIRST = """\
eager     11.22 ms (round medians 8.98-16.90)
compiled   5.28 ms
speedup  2.12x
change  -19.67 launches"""

# Eager is 1.6% slower, the speedup line now prints no number, and the last line names another quantity.
SECOND = """\
eager     11.40 ms (round medians 9.01-16.20)
compiled   5.28 ms
speedup  n/a
change  -19.67 kernels"""

PAGE = """\
# Timing

```python exec="on"
from execdocs import show
show("demo/timing:timing", device="cuda")
```

Compiled, one call takes 5.28 ms against eager's 11.22 ms, a 2.12x speedup with 19.67 fewer
launches; a threshold of 1.50x lives in the source, and 3.14159 in no output at all.
"""


def result(timing: str, key: str = "key-of-the-second-run") -> Result:
    return Result(EXAMPLE.name, "cuda", key, [EXAMPLE.display_path], STAMP, {"setup": "ready", "timing": timing})


def rows_by_number(tmp_path, front_matter: str = "") -> dict:
    page = tmp_path / "timing.md"
    page.write_text(front_matter + PAGE)
    report = compare(result(FIRST), result(SECOND), [quoting_page(page, EXAMPLE)])
    return {row.quoted: row for row in report.rows}


def test_a_quoted_number_is_read_at_the_same_place_in_the_second_run(tmp_path):
    rows = rows_by_number(tmp_path)
    assert set(rows) == {"5.28", "11.22", "2.12", "19.67"}, "only numbers the first run printed"
    eager = rows["11.22"]
    assert (eager.section, eager.line, eager.token) == ("timing", 0, 0)
    assert (eager.first, eager.second, eager.tolerance) == (11.22, 11.40, 0.05)
    assert eager.relative_difference == pytest.approx(0.016043, abs=1e-6)
    assert eager.agrees and not eager.note
    assert rows["5.28"].agrees and rows["5.28"].relative_difference == 0


def test_a_line_without_a_number_at_that_place_says_so(tmp_path):
    speedup = rows_by_number(tmp_path)["2.12"]
    assert speedup.second is None and speedup.relative_difference is None and not speedup.agrees
    assert speedup.note == "no number at this place in the second run, whose line reads: speedup  n/a"


def test_a_line_whose_words_changed_never_agrees(tmp_path):
    change = rows_by_number(tmp_path)["19.67"]
    assert change.first == -19.67 and change.second == -19.67, "a sign is part of the number, a range's dash is not"
    assert not change.agrees and change.note.startswith("the line reads differently in the second run")


def test_the_page_states_its_tolerance_in_its_front_matter(tmp_path):
    eager = rows_by_number(tmp_path, front_matter="---\nreproduce_within: 1.5%\n---\n")["11.22"]
    assert eager.tolerance == 0.015 and not eager.agrees


def test_a_number_the_first_run_did_not_print_is_read_where_the_recording_before_printed_it(tmp_path):
    page = tmp_path / "timing.md"
    page.write_text(PAGE.replace("11.22 ms", "11.31 ms"))
    before = result(FIRST.replace("11.22", "11.31"), "key-of-the-recording-the-prose-quotes")
    report = compare(result(FIRST), result(SECOND), [quoting_page(page, EXAMPLE)], before)
    eager = {row.quoted: row for row in report.rows}["11.31"]
    assert (eager.first, eager.second, eager.agrees) == (11.22, 11.40, True)
    assert eager.note == "not printed by the first run; read where the recording before these runs printed it"
    assert "11.31" not in {
        row.quoted for row in compare(result(FIRST), result(SECOND), [quoting_page(page, EXAMPLE)]).rows
    }


def test_a_tolerance_that_is_not_a_percentage_names_the_page(tmp_path):
    page = tmp_path / "timing.md"
    page.write_text("---\nreproduce_within: 0.05\n---\n" + PAGE)
    with pytest.raises(ReproductionError, match=r"timing\.md: reproduce_within: '0\.05' is not a percentage"):
        quoting_page(page, EXAMPLE)


def test_the_second_run_is_kept_only_when_both_succeed(monkeypatch):
    failed = Result(EXAMPLE.name, "cuda", "k", [], STAMP, error={"summary": "boom", "location": "x.py:1"})
    outcomes = iter([result(FIRST, "first"), result(SECOND, "second"), failed])
    monkeypatch.setattr(runner, "run_now", lambda example, device, keep: next(outcomes))
    saved = []
    monkeypatch.setattr(store, "save", saved.append)
    assert [run.key for run in runner.run_twice(EXAMPLE, "cuda")] == ["first", "second"]
    assert [run.key for run in saved] == ["second"]
    assert runner.run_twice(EXAMPLE, "cuda") == [failed], "a failed first run is not run again"
    assert len(saved) == 1


@pytest.fixture
def chapter(tmp_path, monkeypatch):
    """A chapter `demo` whose GPU example has a committed recording, in a folder of the test's own."""
    monkeypatch.setattr(examples, "EXAMPLES", tmp_path / "examples")
    monkeypatch.setattr(store, "OUTPUTS", tmp_path / "outputs")
    monkeypatch.setattr(reproduction, "REPRODUCTION", tmp_path / "reproduction")
    (tmp_path / "examples/demo").mkdir(parents=True)
    (tmp_path / "examples/demo/timing.py").write_text("# execdocs: devices=cuda\n")
    committed = tmp_path / "outputs/cuda/demo/timing.json"
    committed.parent.mkdir(parents=True)
    committed.write_text(store.as_json(result(SECOND, "key-of-the-recording")))
    return tmp_path


def test_an_example_never_checked_twice_says_so(chapter, capsys):
    show_reproduction("demo")
    shown = capsys.readouterr().out
    assert "<code>examples/demo/timing.py</code>" in shown
    assert "Not checked twice yet: run <code>nox --no-venv -s record -- --twice demo/timing</code>" in shown


@pytest.mark.parametrize(
    "kept",
    [
        result(SECOND, "key-of-an-older-source"),
        result(SECOND.replace("11.40", "11.50"), "key-of-the-recording"),  # recorded again, same source
    ],
    ids=["source-changed", "source-unchanged"],
)
def test_an_example_re_recorded_since_its_check_says_so(chapter, capsys, tmp_path, kept):
    page = tmp_path / "timing.md"
    page.write_text(PAGE)
    reproduction.save(compare(result(FIRST), kept, [quoting_page(page, EXAMPLE)]))
    show_reproduction("demo")
    shown = capsys.readouterr().out
    assert (
        "Re-recorded since this check: run <code>nox --no-venv -s record -- --twice demo/timing</code> again" in shown
    )
    assert "<table>" not in shown


def test_a_current_check_shows_each_number_and_a_summary(chapter, capsys, tmp_path):
    page = tmp_path / "timing.md"
    page.write_text(PAGE)
    report = compare(result(FIRST), result(SECOND, "key-of-the-recording"), [quoting_page(page, EXAMPLE)])
    saved = reproduction.save(report)
    assert json.loads(saved.read_text()) == dataclasses.asdict(reproduction.load(EXAMPLE, "cuda"))
    show_reproduction("demo")
    shown = capsys.readouterr().out
    assert "4 numbers quoted, 2 agree within their page's tolerance." in shown
    assert "<td>11.22</td><td>timing</td><td>11.22</td><td>11.4</td><td>+1.6%</td><td>yes, within 5%</td>" in shown
    assert "<td>2.12</td><td>timing</td><td>2.12</td><td>–</td><td>–</td><td>no; no number at this place" in shown
    assert "First run 2026-01-01, torch 2.11, 0 s · second run 2026-01-01, torch 2.11, 0 s · H100" in shown
