"""The drift run's verdicts: what counts as a release's change to a section, and what the control run
(the recorded release, run again) shows to vary anyway; the Versions page marks an example edited
since its drift run instead of showing its old verdict."""

import pytest

from execdocs import drift, drift_page
from execdocs.examples import Example
from execdocs.store import Result

STAMP = {"python": "3.11", "torch": "2.15.0", "triton": "3.7", "date": "2026-01-01"}


@pytest.mark.parametrize(
    ("old", "new", "change"),
    [
        ("3 graphs", "3 graphs", "same"),
        ("compiled in 1.20 s", "compiled in 3.41 s", "numbers"),
        ("cache key fdvlfshp7zpd5ggttieyrivuitob", "cache key a2c4e6g8i0k2m4o6q8s0u2w4y6", "numbers"),
        ("kernels: triton_poi_fused_gelu_0", "kernels: triton_poi_fused_gelu_erf_0", "text"),
        (None, "a section the release prints", "new"),
        ("a section the release no longer prints", None, "missing"),
    ],
)
def test_a_section_changes_in_numbers_only_or_in_its_text(old, new, change):
    assert drift.section_change(old, new)["change"] == change


def test_a_count_that_never_moves_counts_and_a_timing_does_not():
    assert drift.counts("numbers", control="same")  # "3 graphs" became "4 graphs"
    assert not drift.counts("numbers", control="numbers")  # a time, which moves from run to run anyway
    assert drift.counts("text", control="numbers")
    assert not drift.counts("text", control="text")  # differs from run to run under the recorded release too


def fake_result(sections: dict[str, str], error: dict | None = None) -> Result:
    return Result("dynamo/guards", "cpu", "key", ["examples/dynamo/guards.py"], STAMP, sections, error)


def test_an_example_that_raised_failed_whatever_its_sections(monkeypatch):
    monkeypatch.setattr(drift, "load_committed", lambda example, device: fake_result({"a": "1 graph"}))
    error = {"summary": "AssertionError: one graph", "location": "examples/dynamo/guards.py:12", "traceback": ""}
    record = drift.compare(Example("dynamo/guards"), fake_result({"a": "1 graph"}, error), {"a": "same"})
    assert record["status"] == "failed" and record["error"]["location"] == "examples/dynamo/guards.py:12"


def test_a_changed_section_keeps_its_new_output_for_the_page(monkeypatch):
    monkeypatch.setattr(drift, "load_committed", lambda example, device: fake_result({"a": "1 graph", "t": "1.0 s"}))
    record = drift.compare(Example("dynamo/guards"), fake_result({"a": "2 graphs", "t": "2.0 s"}), {"t": "numbers"})
    assert record["status"] == "changed" and record["new_output"] == {"a": "2 graphs", "t": "2.0 s"}


def test_an_example_edited_since_the_drift_run_is_not_re_checked():
    record = {"example": "dynamo/guards", "key": "an old key", "inputs": ["examples/dynamo/guards.py"]}
    record["status"] = "held"
    assert drift_page.cell(record) == "not re-checked"


def test_a_column_padded_to_its_numbers_changes_in_numbers_only():
    assert (
        drift.section_change("guards     6.6 us\nregion   171.9 us", "guards    16.6 us\nregion  1016.6 us")["change"]
        == "numbers"
    )


def test_rows_a_table_sorted_by_time_reorders_change_in_numbers_only():
    old = " 53%  aten::addmm\n 20%  aten::gelu\n 11%  aten::native_layer_norm"
    new = " 42%  aten::addmm\n 11%  aten::native_layer_norm\n 23%  aten::gelu"
    assert drift.section_change(old, new)["change"] == "numbers"


def test_reclassifying_a_report_reads_what_it_kept(monkeypatch):
    monkeypatch.setattr(drift, "load_committed", lambda example, device: fake_result({"a": "1 graph", "b": "x"}))
    record = drift.compare(Example("dynamo/guards"), fake_result({"a": "2 graphs", "b": "x"}), {})
    report = drift.reclassified({"release": "2.15.0", "examples": [record]}, {"a": "same", "b": "same"})
    assert report["examples"][0]["status"] == "changed" and report["examples"][0]["new_output"] == {"a": "2 graphs"}
