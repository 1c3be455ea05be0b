"""Drawing a diagram (`nox -s diagrams`) with the vendored mermaid in headless Chromium: a diagram mermaid cannot
draw fails with its page and line, and a good one comes back as SVG in both palettes."""

import pytest

from execdocs import diagrams


def test_a_diagram_mermaid_cannot_draw_fails_naming_its_page_and_line(chromium_here):
    with pytest.raises(diagrams.DiagramError, match=r"^docs/broken\.md:3: mermaid cannot draw this diagram"):
        diagrams.draw([("docs/broken.md:3", "graph LR\n  A -->> ((( B\n")])


def test_a_diagram_is_drawn_in_both_palettes(chromium_here):
    drawings = diagrams.draw([("docs/good.md:3", "graph LR\n  A --> B\n")])
    (by_palette,) = drawings.values()
    assert sorted(by_palette) == sorted(diagrams.THEMES)
    assert all(svg.startswith("<svg") for svg in by_palette.values())
