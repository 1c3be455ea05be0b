"""Mermaid, vendored, and loaded only by the pages that draw a diagram (3.5 MB that other pages skip).

Material draws every `<pre class="mermaid">` with the global `mermaid` when one is defined, and
fetches it from a CDN when none is. A page with a diagram therefore loads the vendored copy
itself, from a script inside its content: Material's instant navigation runs such scripts, and
waits for them, before it draws the new page's diagrams. Material configures mermaid once, on the
first diagram; the served copy keeps the first instance, so a second diagram page reached by
instant navigation does not replace it with an unconfigured one.
"""

from mkdocs.structure.files import File

from execdocs.vendor import ASSETS, site_files

MERMAID = "assets/vendor/mermaid.min.js"
_KEEP_FIRST = '"use strict";if(typeof globalThis.mermaid?.render!=="function"){\n'


def site_file(config) -> File:
    """mermaid.min.js as the site serves it: the vendored file, run only where no mermaid is defined yet."""
    (vendored,) = site_files(config, ASSETS)
    with open(vendored.abs_src_path, encoding="utf-8") as source:
        return File.generated(config, MERMAID, content=_KEEP_FIRST + source.read() + "\n}\n")


def load_where_drawn(html: str, page, files) -> str:
    """on_page_content: a page whose content holds a diagram gets the script that draws it."""
    if '<pre class="mermaid">' not in html:
        return html
    src = files.get_file_from_path(MERMAID).url_relative_to(page.file)
    return html + f'\n<script src="{src}" defer></script>\n'
