"""Pages rendered once: a warm build reuses each page's HTML, and its search entries, until an input changes.

MkDocs converts every page's Markdown on every build, executed blocks included, and Material's search
plugin parses every page's HTML again; with nothing changed, that is most of a rebuild. Here
`Page.render` and the search index's `add_entry_from_context` keep their results in `.cache/pages/`,
one file per page, under a key of everything that goes into them:

- the page's Markdown, after the plugins' `on_page_markdown` (the GPU-only notes included), and its path;
- the build's inputs, hashed once per build: every file of `execdocs/`, `examples/` and `snippets/`
  (the code pages show, the outputs and recordings they read), this test run's results when
  EXECDOCS_RUN_DIR is set, `mkdocs.yml`, the list of pages and files (links resolve against it),
  the packages that render Markdown, the machine's device and whether this is a preview.

So editing one page renders that page alone, and anything that could change what a page shows (an
example, an output, a recording, the tooling) renders them all. A render that logged a warning is not
kept: its warning, which fails a strict build, comes back on the next build too.
"""

import hashlib
import json
import logging
import sys
from importlib import metadata
from pathlib import Path

from material.plugins.search.plugin import SearchIndex
from mkdocs.structure.pages import Page
from mkdocs.structure.toc import get_toc

from execdocs.environment import machine_device, preview
from execdocs.layout import ROOT, run_dir

CACHE = ROOT / ".cache" / "pages"
INPUT_FOLDERS = ("execdocs", "examples", "snippets")
RENDERING_PACKAGES = ("mkdocs", "mkdocs-material", "markdown", "pymdown-extensions", "markdown-exec", "pygments")

_original_render = Page.render
_original_add_entry = SearchIndex.add_entry_from_context
_build_key: str | None = None  # None: no build has started, so nothing is cached


def start_build(config, files) -> None:
    """on_files: hash the build's inputs, and route pages through the cache for this build."""
    global _build_key
    digest = hashlib.sha256()
    for folder in [*(ROOT / name for name in INPUT_FOLDERS), *([run_dir()] if run_dir() else [])]:
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            digest.update(str(path.relative_to(folder.parent)).encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(Path(config.config_file_path).read_bytes())
    digest.update("\n".join(sorted(file.src_uri for file in files)).encode())
    versions = [f"{name} {metadata.version(name)}" for name in RENDERING_PACKAGES]
    digest.update(json.dumps([sys.version, versions, machine_device(), preview()]).encode())
    _build_key = digest.hexdigest()
    Page.render = _cached_render
    SearchIndex.add_entry_from_context = _cached_add_entry


def _entry_path(kind: str, src_uri: str) -> Path:
    return CACHE / kind / f"{hashlib.sha256(src_uri.encode()).hexdigest()[:24]}.json"


def _read(path: Path, key: str) -> dict | None:
    try:
        stored = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return stored if stored.get("key") == key else None


def _write(path: Path, stored: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f"{path.name}.tmp")
    scratch.write_text(json.dumps(stored))
    scratch.replace(path)  # atomic: a build stopped halfway leaves no half-written entry


class _WarningCounter(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record):
        self.count += 1


def _toc_tokens(items) -> list[dict]:
    return [{"level": a.level, "id": a.id, "name": a.title, "children": _toc_tokens(a.children)} for a in items]


def _cached_render(page: Page, config, files) -> None:
    if _build_key is None or not page.file.src_uri.endswith(".md"):  # the labs render through their own cache
        return _original_render(page, config, files)
    key = hashlib.sha256(f"{_build_key}\0{page.file.src_uri}\0{page.markdown}".encode()).hexdigest()
    path = _entry_path("render", page.file.src_uri)
    stored = _read(path, key)
    if stored is not None:
        page.content, page.toc = stored["content"], get_toc(stored["toc"])
        page._title_from_render = stored["title"]
        page.present_anchor_ids = set(stored["anchors"])
        page.links_to_anchors = {files.get_file_from_path(uri): links for uri, links in stored["links"].items()}
        return None
    counter = _WarningCounter()
    logging.getLogger().addHandler(counter)
    try:
        _original_render(page, config, files)
    finally:
        logging.getLogger().removeHandler(counter)
    if counter.count == 0:
        links = {file.src_uri: links for file, links in (page.links_to_anchors or {}).items()}
        _write(path, {"key": key, "content": page.content, "toc": _toc_tokens(page.toc), "links": links,
                      "title": page._title_from_render, "anchors": sorted(page.present_anchor_ids)})  # fmt: skip
    return None


def _cached_add_entry(index: SearchIndex, page: Page) -> None:
    """The search entries of a page whose HTML, title, address, metadata and contents are unchanged."""
    described = json.dumps([page.url, page.title, page.meta, _toc_tokens(page.toc), index.config], default=str)
    key = hashlib.sha256(f"{described}\0{page.content}".encode()).hexdigest()
    path = _entry_path("search", page.file.src_uri)
    stored = _read(path, key)
    if stored is not None:
        index.entries.extend(stored["entries"])
        return
    before = len(index.entries)
    _original_add_entry(index, page)
    _write(path, {"key": key, "entries": index.entries[before:]})
