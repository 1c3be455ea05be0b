"""Mermaid diagrams drawn once, into committed SVG: a page with a diagram loads no diagram code.

A page writes a diagram as a ```mermaid block. `nox -s diagrams` (`python -m execdocs.diagrams`) draws
each block that has no drawing yet with mermaid itself, the vendored copy, in headless Chromium: once in
mermaid's light theme and once in its dark one. The drawings are committed in snippets/diagrams/, named
by a hash of the block's text and mermaid's version, and drawings no block uses any more are deleted.

The build puts both drawings in the page, inline (`fence`, superfences' formatter for mermaid blocks),
and the stylesheet shows the one of the reader's palette. A block with no drawing fails the build and
the tests, with its page and line and the command that draws it.
"""

import hashlib
import sys
import tempfile
from pathlib import Path

from execdocs.layout import DOCS, SNIPPETS, relative
from execdocs.markdown_blocks import blocks
from execdocs.vendor import ASSETS, vendored

DRAWINGS = SNIPPETS / "diagrams"
MERMAID_VERSION = next(version for package, version, *_ in ASSETS if package == "mermaid")
THEMES = {"light": "default", "dark": "dark"}  # the reader's palette -> mermaid's theme for it
DRAW_COMMAND = "nox -s diagrams"
DRAW_WAIT_S = 30
# A page that hands the vendored mermaid to the browser's driver: draw(id, theme, text) -> the SVG
_DRAWING_PAGE = """<!doctype html><meta charset="utf-8"><body><script type="module">
import mermaid from "./mermaid/mermaid.esm.min.mjs";
window.draw = async (id, theme, text) => {
  mermaid.initialize({startOnLoad: false, theme, securityLevel: "strict"});
  return (await mermaid.render(id, text)).svg;
};
</script>"""


class DiagramError(Exception):
    """A diagram with no drawing, or one mermaid cannot draw; the message says where and what to do."""


def drawing_key(text: str) -> str:
    return hashlib.sha256(f"mermaid {MERMAID_VERSION}\0{text.strip()}".encode()).hexdigest()[:16]


def drawing_path(key: str, palette: str) -> Path:
    return DRAWINGS / f"{key}.{palette}.svg"


def is_drawn(text: str) -> bool:
    return all(drawing_path(drawing_key(text), palette).is_file() for palette in THEMES)


def fence(source, language, class_name, options, md, **kwargs) -> str:
    """superfences' formatter for ```mermaid: both committed drawings, each shown in its palette."""
    paths = {palette: drawing_path(drawing_key(source), palette) for palette in THEMES}
    if not is_drawn(source):
        first_line = source.strip().splitlines()[0] if source.strip() else ""
        raise DiagramError(
            f"the mermaid diagram starting {first_line!r} has no drawing in {relative(DRAWINGS)}/: "
            f"run `{DRAW_COMMAND}` and commit {relative(DRAWINGS)}/"
        )
    drawn = "".join(
        f'<div class="execdocs-diagram__{palette}">{path.read_text()}</div>' for palette, path in paths.items()
    )
    return f'<figure class="execdocs-diagram">{drawn}</figure>'


def diagrams_in_docs() -> list[tuple[str, str]]:
    """(page:line, text) of every mermaid block of the site's pages."""
    found = []
    for path in sorted(DOCS.rglob("*.md")):
        for block in blocks(path.read_text()):
            if block.lang == "mermaid":
                found.append((f"{relative(path)}:{block.line}", block.body))
    return found


def undrawn() -> list[str]:
    """One sentence per mermaid block with no committed drawing, naming its page and line."""
    return [
        f"{where}: this mermaid diagram has no drawing in {relative(DRAWINGS)}/; run `{DRAW_COMMAND}` and commit it"
        for where, text in diagrams_in_docs()
        if not is_drawn(text)
    ]


def draw(diagrams: list[tuple[str, str]]) -> dict[str, dict[str, str]]:
    """Each diagram's SVG in each palette, drawn by the vendored mermaid in headless Chromium: key -> palette ->
    SVG. A diagram mermaid cannot draw raises DiagramError naming its page and line."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    from execdocs.chromium import FLAGS, chromedriver, chromium, missing, profile_flag
    from execdocs.local_site import serve

    if missing():
        raise DiagramError(f"drawing diagrams needs Chromium: {missing()}")
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory() as profile:
        (Path(folder) / "index.html").write_text(_DRAWING_PAGE)
        (Path(folder) / "mermaid").symlink_to(vendored("mermaid"))
        options = webdriver.ChromeOptions()
        options.binary_location = chromium()
        for flag in [*FLAGS, profile_flag(Path(profile))]:
            options.add_argument(flag)
        driver = webdriver.Chrome(options=options, service=Service(chromedriver()))
        driver.set_script_timeout(DRAW_WAIT_S)
        try:
            with serve(Path(folder)) as url:
                driver.get(url)
                drawings = {}
                for where, text in diagrams:
                    key = drawing_key(text)
                    drawings[key] = {}
                    for palette, theme in THEMES.items():
                        svg = driver.execute_async_script(
                            "const done = arguments[arguments.length - 1];"
                            "window.draw(arguments[0], arguments[1], arguments[2])"
                            ".then(done, error => done('error: ' + (error.message || error)));",
                            f"diagram-{key}-{palette}",
                            theme,
                            text,
                        )
                        if not svg or not svg.startswith("<svg"):
                            raise DiagramError(f"{where}: mermaid cannot draw this diagram: {svg}")
                        drawings[key][palette] = svg
                return drawings
        finally:
            driver.quit()


def main() -> int:
    """Draw what has no drawing, and delete the drawings no diagram uses any more."""
    diagrams = diagrams_in_docs()
    wanted = {drawing_key(text) for _, text in diagrams}
    to_draw = [(where, text) for where, text in diagrams if not is_drawn(text)]
    try:
        drawings = draw(to_draw) if to_draw else {}
    except DiagramError as error:
        print(error, file=sys.stderr)
        return 1
    DRAWINGS.mkdir(parents=True, exist_ok=True)
    for key, by_palette in drawings.items():
        for palette, svg in by_palette.items():
            drawing_path(key, palette).write_text(svg + "\n")
    unused = [path for path in DRAWINGS.glob("*.svg") if path.name.split(".")[0] not in wanted]
    for path in unused:
        path.unlink()
    print(f"drew {len(drawings)} of {len(diagrams)} diagrams; deleted {len(unused)} unused drawings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
