"""Mermaid, vendored, and loaded only by the pages that draw a diagram.

Material draws every `<pre class="mermaid">` with the global `mermaid` when one is defined, and
fetches it from a CDN when none is. A page with a diagram therefore loads the vendored copy
itself, from a module script inside its content that defines that global:

- as a module, it runs before Material draws (modules run before DOMContentLoaded), and it runs
  once per visit: under Material's instant navigation, which re-inserts a new page's scripts and
  waits for them, a second diagram page keeps the mermaid Material already configured;
- mermaid's ES-module build imports the code of a kind of diagram only when it draws one.
"""

from mkdocs.structure.files import File

from execdocs.vendor import ASSETS, site_files

LOADER = "assets/javascripts/mermaid.mjs"
_LOADER_SOURCE = 'import mermaid from "../vendor/mermaid/mermaid.esm.min.mjs";\nwindow.mermaid = mermaid;\n'


def site_files_for_diagrams(config) -> list[File]:
    """The vendored mermaid and the module that hands it to Material."""
    return [*site_files(config, ASSETS), File.generated(config, LOADER, content=_LOADER_SOURCE)]


def load_where_drawn(html: str, page, files) -> str:
    """on_page_content: a page whose content holds a diagram gets the script that draws it."""
    if '<pre class="mermaid">' not in html:
        return html
    src = files.get_file_from_path(LOADER).url_relative_to(page.file)
    return html + f'\n<script type="module" src="{src}"></script>\n'
