"""A summary quotes: each figure in a "What to remember" list, or anywhere on a summary page (distributed/remember,
deploying/levers, benchmarking/decision_guide), must be printed in an output line the page itself shows; on a
summary page, in the lines it quotes with show_quote. A figure a reader cannot find on the page fails here, naming
the page and the figure.
"""

import pytest

from execdocs import store
from execdocs.layout import DOCS
from execdocs.moved_numbers import first_run_numbers
from execdocs.pages import page_references
from execdocs.prose_numbers import figures, printed, summary_prose
from execdocs.render import ShowError, quoted_lines

PAGES = sorted(
    path for path in DOCS.rglob("*.md") if summary_prose(path.relative_to(DOCS).as_posix(), path.read_text())
)


def shown_lines(path) -> str:
    """The output lines the page shows: whole sections, or only the quoted lines of a show_quote; and the first
    runs' numbers of the reproduction tables it shows, the other end of a range of both runs."""
    shown = sorted(first_run_numbers(path.read_text()))
    for reference in page_references(path):
        for device in ("cpu", "cuda"):
            result = store.load_committed(reference.example, device) if reference.shows_output else None
            text = result.sections.get(reference.section) if result else None
            if text is None:
                continue
            try:
                shown.append(quoted_lines(reference.section, text, reference.quotes) if reference.quotes else text)
            except ShowError:
                continue  # the quote matches the other device's output
    return "\n".join(shown)


@pytest.mark.parametrize("path", PAGES, ids=[path.relative_to(DOCS).as_posix() for path in PAGES])
def test_each_summary_figure_is_in_an_output_the_page_shows(path):
    page = path.relative_to(DOCS).as_posix()
    shown = shown_lines(path)
    missing = [figure for figure in figures(summary_prose(page, path.read_text())) if not printed(figure, shown)]
    assert not missing, (
        f"docs/{page} sums up with {', '.join(missing)}, which no output line the page shows prints: quote the "
        "line it rests on (show_quote) and the figure as printed, or drop the figure"
    )


def test_a_planted_figure_that_no_output_prints_is_found():
    planted = "# A page\n\n## What to remember\n\n- It took 31 ms, about 4x faster.\n\n## Next\n\n- 7 ms here.\n"
    assert figures(summary_prose("chapter/page.md", planted)) == ["31", "4"]
    assert figures(summary_prose("distributed/remember.md", planted)) == ["31", "4", "7"]


def test_a_figure_counts_as_printed_only_as_a_number_of_its_own():
    assert printed("27", "11.578 ms, 27 times") and printed("0.42", "(0.42-0.43)")
    assert not printed("27", "0.423 (0.418-0.427)") and not printed("27", "27.4x") and not printed("0.42", "0.422")


def test_a_quote_that_begins_with_a_caret_picks_the_rows_that_begin_with_it_and_not_a_header():
    table = "hook, at ranks:      2       8\npre_forward       24.5    26.6\n    2     62.8    66%\n"
    row = "    2     62.8    66%"
    assert quoted_lines("demo:table", table, ("    2 ",)).splitlines() == [table.splitlines()[0], row]
    assert quoted_lines("demo:table", table, ("^    2 ",)) == row
    with pytest.raises(ShowError, match="no line of demo:table's output begins with '2 '"):
        quoted_lines("demo:table", table, ("^2 ",))
