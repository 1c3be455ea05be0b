"""Each kind of page, in both palettes and in a laptop's and a phone's window, as a reader's Chromium
shows it (the site `nox -s tests` built).

Every page passes the checks of page_checks.check_page; each kind also shows what makes it that
kind. A screenshot of each page in each palette and window is kept in the test run's folder.
"""

import re

import pytest
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from execdocs.layout import CACHE, run_dir
from execdocs.reader_pages import PAGES
from tests.browser.page_checks import (
    RENDER_WAIT_S,
    SCHEMES,
    WINDOWS,
    check_page,
    console_errors,
    diagram_problems,
    diagrams_shown,
    open_page,
    scheme,
)


def count(driver, selector: str) -> int:
    return len(driver.find_elements(By.CSS_SELECTOR, selector))


def shown(driver, selector: str):
    """The first element matching `selector` that the reader can see (Material keeps hidden twins for small screens)."""
    return next(element for element in driver.find_elements(By.CSS_SELECTOR, selector) if element.is_displayed())


def a_drawn_diagram(driver) -> list[str]:
    return [] if diagrams_shown(driver) else ["no diagram"]


def tabs_and_a_recording(driver) -> list[str]:
    problems = [] if count(driver, ".tabbed-set") else ["no content tabs"]
    return problems + ([] if count(driver, ".admonition.recorded") else ["no recorded GPU output"])


def plots(driver) -> list[str]:
    return [] if count(driver, "figure.execdocs-plot svg") else ["no plot"]


def rendered_formulas(driver) -> list[str]:
    try:
        WebDriverWait(driver, RENDER_WAIT_S).until(lambda d: count(d, "mjx-container svg"))
    except TimeoutException:
        return ["MathJax typeset no formula"]
    return [] if not count(driver, "mjx-merror") else ["MathJax could not typeset a formula"]


def reproduction_tables(driver) -> list[str]:
    section = "#how-reproducible-are-these-numbers ~ * table"
    return [] if count(driver, section) else ["no table of the two recordings under 'How reproducible'"]


def copy_buttons(driver) -> list[str]:
    if not count(driver, "pre > code"):
        return []
    return [] if count(driver, "button.md-code__button[data-md-type='copy']") else ["code blocks have no copy button"]


# kind of page -> (page, what that kind must show besides the checks every page passes)
KINDS = {
    "overview": ("overview", [a_drawn_diagram]),
    "chapter": ("graph breaks", [tabs_and_a_recording]),
    "plot": ("model zoo", [plots]),
    "reproduction": ("measuring", [reproduction_tables]),
    "lab": ("lab", [rendered_formulas]),
    "contributing": ("contributing", []),
}


@pytest.mark.parametrize("palette", SCHEMES)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("window", WINDOWS)  # the `window` fixture: which window `driver` opens
def test_page_reads_well(driver, site_url, window, kind, palette):
    page, own_checks = KINDS[kind]
    screenshots = (run_dir() or CACHE / "test-run") / "screenshots"
    problems = check_page(driver, site_url, PAGES[page], palette, screenshots / f"{kind}-{palette}-{window}.png")
    wanted_width = WINDOWS[window][0]
    if (width := driver.execute_script("return window.innerWidth")) != wanted_width:
        problems.append(f"/{PAGES[page]} ({palette}): {width} px wide in the {window} window, not {wanted_width}")
    for check in [*own_checks, copy_buttons]:
        problems += [f"/{PAGES[page]} ({palette}): {problem}" for problem in check(driver)]
    assert not problems, "\n".join(problems)


# mkdocs-jupyter inlines JupyterLab's whole stylesheet, about 575 KB, into every lab page; execdocs/labs.py
# cuts it to the rules a page's markup can match, about 22 KB. Should the whole sheet come back (another
# template, a pruning that stops working), each lab page would weigh about 690 KB again.
LAB_PAGE_MAX_BYTES = 300_000
LAB_STYLES_MAX_BYTES = 64_000


def test_lab_pages_carry_only_the_styles_they_use(built_site):
    """Read from the built HTML of every lab page: its inline styles and its weight."""
    pages = sorted(built_site.glob("labs/*/index.html"))
    assert pages, f"no lab page in {built_site}"
    problems = []
    for page in pages:
        html = page.read_bytes()
        styles = sum(len(css) for css in re.findall(rb"<style\b[^>]*>(.*?)</style>", html, re.S))
        name = page.parent.relative_to(built_site).as_posix()
        if styles > LAB_STYLES_MAX_BYTES:
            problems.append(f"/{name}/: {styles} bytes of inline styles (at most {LAB_STYLES_MAX_BYTES})")
        if b"--jp-icon-" in html:  # JupyterLab's icons, which no rendered notebook shows
            problems.append(f"/{name}/: carries JupyterLab's application stylesheet (its --jp-icon-* properties)")
        if len(html) > LAB_PAGE_MAX_BYTES:
            problems.append(f"/{name}/: {len(html)} bytes of HTML (at most {LAB_PAGE_MAX_BYTES})")
    assert not problems, "\n".join(problems)


def contrast(foreground: str, background: str) -> float:
    """WCAG contrast ratio of two computed CSS colours (rgb()/rgba() strings)."""

    def luminance(color: str) -> float:
        red, green, blue = (int(float(value)) / 255 for value in color[color.index("(") + 1 : -1].split(",")[:3])
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (red, green, blue)]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    lighter, darker = sorted([luminance(foreground), luminance(background)], reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def plot_contrast(driver) -> float:
    """How the plots' lines and labels (drawn in the text colour) stand out from the page."""
    plot = driver.find_element(By.CSS_SELECTOR, "figure.execdocs-plot svg")
    foreground = driver.execute_script("return getComputedStyle(arguments[0]).color", plot)
    background = driver.execute_script("return getComputedStyle(document.body).backgroundColor")
    return contrast(foreground, background)


def test_the_dark_mode_toggle_switches_palette_and_plots_stay_visible(driver, site_url):
    open_page(driver, site_url + PAGES["model zoo"], "light")
    for expected in ("slate", "default"):
        shown(driver, "form[data-md-component=palette] label").click()
        WebDriverWait(driver, RENDER_WAIT_S).until(lambda d, wanted=expected: scheme(d) == wanted)
        assert plot_contrast(driver) >= 4.5, f"plots are hard to see in the {expected} scheme"


def test_a_page_opens_as_a_first_visit_after_a_reader_picked_a_palette(driver, site_url):
    """The browser serves test after test: a palette one test picks must not reach the next test's page."""
    open_page(driver, site_url + PAGES["overview"], "light")
    shown(driver, "form[data-md-component=palette] label").click()  # Material stores the pick for the site
    WebDriverWait(driver, RENDER_WAIT_S).until(lambda d: scheme(d) == "slate")
    open_page(driver, site_url + PAGES["overview"], "light")
    assert scheme(driver) == "default", "the palette picked on an earlier visit came back"


def test_search_finds_graph_breaks(driver, site_url):
    open_page(driver, site_url + PAGES["overview"], "light")
    shown(driver, "label.md-header__button[for=__search], .md-search__input").click()
    driver.find_element(By.CSS_SELECTOR, ".md-search__input").send_keys("graph break")
    WebDriverWait(driver, RENDER_WAIT_S).until(lambda d: count(d, ".md-search-result__item"))
    links = [link.get_attribute("href") for link in driver.find_elements(By.CSS_SELECTOR, ".md-search-result__item a")]
    assert any("dynamo/graph_breaks/" in link for link in links), links


def test_every_diagram_of_the_site_shows_its_drawing_in_both_palettes(driver, site_url, built_site):
    pages = [path.parent.relative_to(built_site).as_posix() + "/" for path in sorted(built_site.rglob("index.html"))]
    problems = []
    for page in (page.removeprefix("./") for page in pages):
        if 'class="execdocs-diagram"' in (built_site / page / "index.html").read_text():
            for palette in SCHEMES:
                open_page(driver, site_url + page, palette)
                problems += [f"/{page}: {problem}" for problem in diagram_problems(driver) + console_errors(driver)]
    assert not problems, "\n".join(problems)


def test_instant_navigation_shows_the_next_pages_diagram(driver, site_url):
    open_page(driver, site_url + PAGES["overview"], "light")
    driver.execute_script("document.querySelector('.md-nav a[href$=\"dynamo/\"]').click()")
    WebDriverWait(driver, RENDER_WAIT_S).until(lambda d: d.current_url.endswith("/dynamo/"))
    assert diagrams_shown(driver), "the TorchDynamo page shows no diagram after instant navigation"
    assert not diagram_problems(driver) + console_errors(driver)
