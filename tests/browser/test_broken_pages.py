"""A page a reader would find broken fails the browser checks, and the failure names the page.

One small site of the tests' own making, built once, with one fault per page.
"""

import pytest

from execdocs.local_site import serve
from tests.browser.page_checks import check_page
from tests.sandbox import Sandbox

PAGES = {
    "index.md": "# A page with nothing wrong\n\nSome prose.\n",
    "empty_tab.md": '# Tabs\n\n=== "Filled"\n\n    To read.\n\n=== "Empty"\n\n=== "Filled too"\n\n    More.\n',
    "low_contrast.md": '# Faint\n\n<p style="color: #c8c8c8">Text too light to read on white.</p>\n',
    "remote_image.md": '# Remote\n\n<img src="https://cdn.example.com/pixel.png" alt="a pixel from elsewhere">\n',
}


@pytest.fixture(scope="module")
def broken_site(chromium_here, tmp_path_factory):
    sandbox = Sandbox(tmp_path_factory.mktemp("broken"), pages=tuple(PAGES))
    for name, text in PAGES.items():
        sandbox.write(f"docs/{name}", text)
    build = sandbox.build()
    assert build.returncode == 0, build.stderr
    with serve(sandbox.root / "site") as url:
        yield url


def problems_of(driver, site, page: str) -> str:
    return "\n".join(check_page(driver, site, page, "light"))


def test_a_page_with_nothing_wrong_passes(driver, broken_site):
    assert problems_of(driver, broken_site, "") == ""


# Each broken page, and the problem its check must report, naming the page.
FAULTS = {
    "a tab with no content": ("empty_tab/", "/empty_tab/ (light): tab 'Empty' of tab set 1 shows nothing"),
    "a low-contrast colour": ("low_contrast/", "/low_contrast/ (light): axe color-contrast (serious)"),
    "a request that leaves the site": (
        "remote_image/",
        "/remote_image/ (light): request leaves the site: https://cdn.example.com/pixel.png",
    ),
}


@pytest.mark.parametrize(("page", "expected"), FAULTS.values(), ids=FAULTS.keys())
def test_a_broken_page_fails_naming_the_page(driver, broken_site, page, expected):
    assert expected in problems_of(driver, broken_site, page)
