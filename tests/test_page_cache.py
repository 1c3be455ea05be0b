"""The page cache (execdocs/page_cache.py) on a small site of its own: what a warm build reuses, and what it
still checks."""

import logging

import pytest
from material.plugins.search.plugin import SearchIndex
from mkdocs.commands.build import build
from mkdocs.config import load_config
from mkdocs.exceptions import Abort
from mkdocs.structure.pages import Page

from execdocs import page_cache

HOOK = "from execdocs import page_cache\n\ndef on_files(files, config):\n    page_cache.start_build(config, files)\n"
PAGES = {
    "index.md": "# Home\n\nSee [the other page](other.md#a-section).\n",
    "other.md": "# Other\n\n## A section\n\nText.\n",
}


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A two-page site with the search plugin and a hook that starts the cache; returns build(strict) -> renders."""
    monkeypatch.setattr(page_cache, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(Page, "render", Page.render)  # restored after the test: start_build replaces both
    monkeypatch.setattr(SearchIndex, "add_entry_from_context", SearchIndex.add_entry_from_context)
    rendered = []

    def counting_render(page, config, files):
        rendered.append(page.file.src_uri)
        return original(page, config, files)

    original = page_cache._original_render
    monkeypatch.setattr(page_cache, "_original_render", counting_render)
    (tmp_path / "docs").mkdir()
    for name, text in PAGES.items():
        (tmp_path / "docs" / name).write_text(text)
    (tmp_path / "hook.py").write_text(HOOK)
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: test\ntheme: material\nhooks: [hook.py]\nplugins: [search]\nvalidation:\n  anchors: warn\n"
    )

    def build_site(strict: bool = True) -> list[str]:
        rendered.clear()
        config = load_config(str(tmp_path / "mkdocs.yml"), site_dir=str(tmp_path / "site"), strict=strict)
        build(config)
        return sorted(rendered)

    build_site.docs = tmp_path / "docs"
    build_site.site = tmp_path / "site"
    return build_site


def test_a_warm_build_renders_nothing_and_writes_the_same_site(site):
    assert site() == ["index.md", "other.md"]
    first = {path.relative_to(site.site): path.read_bytes() for path in site.site.rglob("*.html")}
    search = (site.site / "search" / "search_index.json").read_text()
    assert site() == []
    assert first == {path.relative_to(site.site): path.read_bytes() for path in site.site.rglob("*.html")}
    assert (site.site / "search" / "search_index.json").read_text() == search


def test_an_edited_page_is_rendered_alone(site):
    site()
    (site.docs / "other.md").write_text(PAGES["other.md"] + "\nMore text.\n")
    assert site() == ["other.md"]
    assert "More text." in (site.site / "search" / "search_index.json").read_text()


def test_a_link_to_an_anchor_that_went_away_still_fails_from_a_cached_page(site, caplog):
    site()
    (site.docs / "other.md").write_text("# Other\n\nText.\n")
    with caplog.at_level(logging.WARNING), pytest.raises(Abort):
        site()  # index.md, unchanged, comes from the cache: its link is checked all the same
    assert "does not contain an anchor '#a-section'" in caplog.text


def test_a_render_that_warned_is_not_kept(site):
    (site.docs / "index.md").write_text("# Home\n\nSee [a missing page](missing.md).\n")
    site(strict=False)
    assert site(strict=False) == ["index.md"]  # rendered again, so its warning comes back
