"""`record --twice` keeps what the first run printed; the page finds each number its prose quotes, as
it reads now, in the recording (the second run), reads the first run at the same place, and checks
the two against the page's tolerance; it shows every example's state."""

import dataclasses
import json

import pytest

from execdocs import examples, reproduction, runner, store
from execdocs.examples import Example
from execdocs.reproduction import Report, ReproductionError, make_report, quoting_page, report_text, rows
from execdocs.reproduction_tables import show_reproduction
from execdocs.store import Result

EXAMPLE = Example("demo/timing")
STAMP = {"python": "3.12", "torch": "2.11", "triton": "3.6", "cuda": "13.0", "gpu": "NVIDIA H100", "date": "2026-01-01"}

# Eager is 1.6% slower in the second run, the first printed no speedup, and its last line names another quantity.
FIRST = """\
eager     11.22 ms (round medians 8.98-16.90)
compiled   5.28 ms
speedup  n/a
change  -19.67 launches"""

SECOND = """\
eager     11.40 ms (round medians 9.01-16.20)
compiled   5.28 ms
speedup  2.16x
change  -19.67 kernels"""

# Quotes the second run, the recording: what an author writes after recording.
PAGE = """\
# Timing

```python exec="on"
from execdocs import show
show("demo/timing:timing", device="cuda")
```

Compiled, one call takes 5.28 ms against eager's 11.40 ms, a 2.16x speedup with 19.67 fewer
kernels; a threshold of 1.50x lives in the source, and 3.14159 in no output at all.
"""


def result(timing: str, key: str = "key-of-the-recording") -> Result:
    return Result(EXAMPLE.name, "cuda", key, [EXAMPLE.display_path], STAMP, {"setup": "ready", "timing": timing})


def page_at(tmp_path, text: str = PAGE):
    page = tmp_path / "timing.md"
    page.write_text(text)
    return quoting_page(page, EXAMPLE)


def rows_by_number(tmp_path, text: str = PAGE) -> dict:
    report = make_report(result(FIRST), result(SECOND))
    return {row.quoted: row for row in rows(report, result(SECOND), [page_at(tmp_path, text)])}


def test_a_quoted_number_is_found_in_the_recording_and_read_at_the_same_place_in_the_first_run(tmp_path):
    found = rows_by_number(tmp_path)
    assert set(found) == {"5.28", "11.40", "2.16", "19.67"}, "only numbers the recording printed"
    eager = found["11.40"]
    assert (eager.place, eager.places) == (("timing", 0, 0), 1)
    assert (eager.first, eager.second, eager.tolerance) == (11.22, 11.40, 0.05)
    assert eager.relative_difference == pytest.approx(0.016043, abs=1e-6)
    assert eager.agrees and eager.verdict == "yes"
    assert found["5.28"].agrees and found["5.28"].relative_difference == 0


def test_a_line_without_a_number_at_that_place_in_the_first_run_says_so(tmp_path):
    speedup = rows_by_number(tmp_path)["2.16"]
    assert speedup.first is None and speedup.relative_difference is None and not speedup.agrees
    assert speedup.verdict == "no: no number at this place in the first run, whose line reads: speedup  n/a"


def test_a_line_whose_words_changed_never_agrees(tmp_path):
    change = rows_by_number(tmp_path)["19.67"]
    assert change.first == -19.67 and change.second == -19.67, "a sign is part of the number, a range's dash is not"
    assert not change.agrees and change.note == "the line reads differently in the first run: change  -19.67 launches"


def test_a_row_that_moved_in_a_sorted_table_is_read_where_the_first_run_printed_it(tmp_path):
    """A table sorted by a measured column lists its rows in another order in each run."""
    second = dataclasses.replace(result(SECOND), sections={"timing": "GPT-2  11.40 ms\nBERT    5.28 ms"})
    first = dataclasses.replace(result(FIRST), sections={"timing": "BERT    5.10 ms\nGPT-2  11.22 ms"})
    found = {row.quoted: row for row in rows(make_report(first, second), second, [page_at(tmp_path)])}
    assert (found["11.40"].first, found["11.40"].note) == (11.22, "")
    assert (found["5.28"].first, found["5.28"].note) == (5.10, "")


def test_the_page_states_its_tolerance_in_its_front_matter(tmp_path):
    eager = rows_by_number(tmp_path, "---\nreproduce_within: 1.5%\n---\n" + PAGE)["11.40"]
    assert eager.tolerance == 0.015 and not eager.agrees and eager.verdict == "no"


def test_the_rows_follow_the_prose_as_it_reads_now(tmp_path):
    """Prose that still quotes the run before has nothing to check; once it quotes the recording, it has."""
    before = rows_by_number(tmp_path, PAGE.replace("11.40 ms", "11.31 ms"))
    assert "11.31" not in before and "11.40" not in before, "a number the recording does not print has no row"
    assert "11.40" in rows_by_number(tmp_path)


def test_a_number_printed_at_several_places_is_read_at_the_first_in_a_section_the_page_shows(tmp_path):
    second = dataclasses.replace(result(SECOND), sections={"setup": "warm-up 5.28 ms", "timing": SECOND})
    first = dataclasses.replace(result(FIRST), sections={"setup": "warm-up 5.00 ms", "timing": FIRST})
    compiled = {row.quoted: row for row in rows(make_report(first, second), second, [page_at(tmp_path)])}["5.28"]
    assert (compiled.place, compiled.places, compiled.first) == (("timing", 1, 0), 2, 5.28)
    assert compiled.verdict == "yes (printed at 2 places; this is the first)"


def test_a_report_of_the_old_form_compares_the_places_it_kept(tmp_path):
    report = make_report(result(FIRST), result(SECOND))
    report.first_sections, report.first_values = None, {"timing:0:0": 11.22}
    found = {row.quoted: row for row in rows(report, result(SECOND), [page_at(tmp_path)])}
    assert found["11.40"].agrees and found["11.40"].compared
    compiled = found["5.28"]
    assert compiled.first is None and not compiled.compared and not compiled.agrees
    assert compiled.verdict == "not compared: the first run's number at this place was not kept"
    assert reproduction.summary(list(found.values())) == (
        "4 quoted numbers, 1 agree within the page's tolerance (5%), 3 not compared"
    )


def test_a_tolerance_that_is_not_a_percentage_names_the_page(tmp_path):
    with pytest.raises(ReproductionError, match=r"timing\.md: reproduce_within: '0\.05' is not a percentage"):
        page_at(tmp_path, "---\nreproduce_within: 0.05\n---\n" + PAGE)


def test_the_report_made_when_recording_says_what_moved(tmp_path):
    report = make_report(result(FIRST), result(SECOND))
    text = report_text(report, result(SECOND), [page_at(tmp_path)], tmp_path / "timing.json")
    assert "4 quoted numbers, 2 agree within the page's tolerance (5%)" in text.splitlines()[0]
    assert "      11.40      11.22      11.40     +1.6  yes" in text
    # Eager moved by 1.6% and its range's upper end by 4%; the lines that read differently don't count.
    assert text.splitlines()[-1] == "  numbers beyond 5% between the runs, per section: none"
    tight = report_text(
        report, result(SECOND), [page_at(tmp_path, "---\nreproduce_within: 1%\n---\n" + PAGE)], tmp_path
    )
    assert tight.splitlines()[-1] == "  numbers beyond 1% between the runs, per section: timing 2 of 4"


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
    """A chapter `demo` whose GPU example has a committed recording and a page, in a folder of the test's own."""
    monkeypatch.setattr(examples, "EXAMPLES", tmp_path / "examples")
    monkeypatch.setattr(store, "OUTPUTS", tmp_path / "outputs")
    monkeypatch.setattr(reproduction, "REPRODUCTION", tmp_path / "reproduction")
    monkeypatch.setattr(reproduction, "DOCS", tmp_path / "docs")
    (tmp_path / "examples/demo").mkdir(parents=True)
    (tmp_path / "examples/demo/timing.py").write_text("# execdocs: devices=cuda\n")
    (tmp_path / "docs/demo").mkdir(parents=True)
    (tmp_path / "docs/demo/timing.md").write_text(PAGE)
    committed = store.committed_path(EXAMPLE, "cuda")
    committed.parent.mkdir(parents=True)
    committed.write_text(store.as_json(result(SECOND)))
    return tmp_path


def test_an_example_never_checked_twice_says_so(chapter, capsys):
    show_reproduction("demo")
    shown = capsys.readouterr().out
    assert "<code>examples/demo/timing.py</code>" in shown
    assert "Not checked twice yet: run <code>nox --no-venv -s record -- --twice demo/timing</code>" in shown


@pytest.mark.parametrize(
    "compared",
    [
        result(SECOND, "key-of-an-older-source"),
        result(SECOND.replace("11.40", "11.50")),  # recorded again, same source
    ],
    ids=["source-changed", "source-unchanged"],
)
def test_an_example_re_recorded_since_its_check_says_so(chapter, capsys, compared):
    reproduction.save(make_report(result(FIRST), compared))
    show_reproduction("demo")
    shown = capsys.readouterr().out
    assert (
        "Re-recorded since this check: run <code>nox --no-venv -s record -- --twice demo/timing</code> again" in shown
    )
    assert "<table>" not in shown


def test_a_current_check_shows_each_quoted_number_and_a_summary(chapter, capsys):
    saved = reproduction.save(make_report(result(FIRST), result(SECOND)))
    assert "first_values" not in json.loads(saved.read_text()), "only a report of the old form has them"
    assert reproduction.load(EXAMPLE, "cuda").first_sections == result(FIRST).sections
    show_reproduction("demo")
    shown = capsys.readouterr().out
    assert "4 quoted numbers, 2 agree within the page's tolerance (5%)." in shown
    assert '<span title="section timing, line 1, number 1">11.40</span></td><td>11.22</td><td>11.40</td>' in shown
    assert "<td>+1.6%</td><td>yes</td>" in shown
    assert "<td>–</td><td>2.16</td><td>–</td><td>no: no number at this place in the first run" in shown
    assert "First run 2026-01-01, torch 2.11, 0 s · second run 2026-01-01, torch 2.11, 0 s · H100" in shown


def test_each_run_of_a_check_names_its_host_yardstick(chapter, capsys):
    def on_a_host(timing: str, op: str, call: str) -> Result:
        stamp = {**STAMP, "host_small_op_us": op, "host_small_compiled_call_us": call}
        return dataclasses.replace(result(timing), stamp=stamp)

    reproduction.save(make_report(on_a_host(FIRST, "6.8", "27.6"), on_a_host(SECOND, "9.4", "49.2")))
    show_reproduction("demo")
    shown = capsys.readouterr().out
    assert "First run 2026-01-01, torch 2.11, 0 s (launches a small op in 6.8 µs, a small compiled call in 27.6 µs" in (
        shown
    )
    assert "second run 2026-01-01, torch 2.11, 0 s (launches a small op in 9.4 µs" in shown


def test_a_report_is_made_from_a_first_run_recorded_elsewhere(chapter):
    first = chapter / "first.json"
    first.write_text(store.as_json(dataclasses.replace(result(FIRST), seconds=12.5)))
    reproduction.report_of_separate_runs(EXAMPLE, first)
    report = reproduction.load(EXAMPLE, "cuda")
    assert report == Report(
        EXAMPLE.name,
        "cuda",
        "key-of-the-recording",
        reproduction.sections_digest(result(SECOND)),
        [STAMP, STAMP],
        [12.5, 0.0],
        first_sections=result(FIRST).sections,
    )
    first.write_text(store.as_json(result(FIRST, "key-of-an-older-source")))
    with pytest.raises(ReproductionError, match="ran other source than the committed recording"):
        reproduction.report_of_separate_runs(EXAMPLE, first)
