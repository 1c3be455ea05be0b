"""A number the prose quotes that moved between the two recordings beyond the page's tolerance is written as the
range of both runs, on a page that shows both runs, or it is not quoted (execdocs/moved_numbers.py says how)."""

from execdocs.examples import Example
from execdocs.moved_numbers import moved_quotes, quoted_as_range, shown_reproductions, shows_both_runs


def test_a_range_of_both_runs_is_found_in_either_order_and_with_units():
    assert quoted_as_range("eager took 0.190–0.394 ms per call", "0.394", "0.190")
    assert quoted_as_range("from 1.45x to 1.12x in two recordings", "1.45", "1.12")
    assert quoted_as_range("between 8.31 s and 6.50 s", "6.50", "8.31")


def test_a_point_or_a_longer_number_is_not_a_range():
    assert not quoted_as_range("eager took 0.394 ms per call", "0.394", "0.190")
    assert not quoted_as_range("0.190–0.3945 ms", "0.394", "0.190"), "0.3945 is another number"
    assert not quoted_as_range("0.190 ms, and later 0.394 ms", "0.394", "0.190"), "two numbers apart are no range"


def test_a_page_shows_both_runs_of_an_example_or_of_its_chapter():
    page = '```python exec="on"\nfrom execdocs import show_reproduction\nshow_reproduction("benchmarking")\n```\n'
    assert shown_reproductions(page) == {"benchmarking"}
    assert shows_both_runs(page, Example("benchmarking/zoo_inference"))
    assert not shows_both_runs(page, Example("deploying/regional"))
    assert shows_both_runs(page.replace('"benchmarking"', '"deploying/regional"'), Example("deploying/regional"))


def test_every_quoted_number_that_moved_is_a_range_of_both_runs():
    found = moved_quotes()
    assert not found, f"{len(found)} quoted numbers moved between the two recordings:\n" + "\n".join(map(str, found))
