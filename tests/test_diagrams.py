"""Every diagram of the site is a committed drawing (execdocs/diagrams.py): none missing, none left over, and a
missing one stops the build with the command that draws it."""

import pytest

from execdocs import diagrams


def test_every_diagram_has_its_drawings():
    assert not diagrams.undrawn(), "\n".join(diagrams.undrawn())


def test_no_drawing_is_left_over():
    wanted = {diagrams.drawing_key(text) for _, text in diagrams.diagrams_in_docs()}
    unused = sorted(path.name for path in diagrams.DRAWINGS.glob("*.svg") if path.name.split(".")[0] not in wanted)
    assert not unused, f"no diagram uses {', '.join(unused)}: run `{diagrams.DRAW_COMMAND}`, which deletes them"


def test_a_diagram_with_no_drawing_stops_the_build_saying_what_to_do():
    with pytest.raises(diagrams.DiagramError, match=r"'flowchart LR' has no drawing .* run `nox -s diagrams`"):
        diagrams.fence("flowchart LR\n  planted --> nowhere\n", "mermaid", "mermaid", {}, None)


def test_a_drawn_diagram_holds_both_palettes():
    where, text = diagrams.diagrams_in_docs()[0]
    html = diagrams.fence(text, "mermaid", "mermaid", {}, None)
    assert html.count("<svg") == 2, where
    assert 'class="execdocs-diagram__light"' in html and 'class="execdocs-diagram__dark"' in html
