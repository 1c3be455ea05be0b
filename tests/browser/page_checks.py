"""What a reader's browser sees on one page, as a list of problems that each name the page.

Every check here holds on every page: no console error, no failed request, no request that
leaves the site, every diagram showing its drawing for the palette, every content tab showing something, and no
serious or critical axe-core violation. The tests add what only some pages have.
"""

import json
from pathlib import Path
from urllib.parse import urlsplit

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from execdocs.vendor import vendored

SCHEMES = {"light": "default", "dark": "slate"}  # the palette a reader picks -> Material's scheme name
# The windows a reader reads in -> their size in CSS pixels: a common laptop screen, where wide outputs
# used to need scrolling, and a phone held upright, where Material moves the navigation into a drawer.
WINDOWS = {"laptop": (1400, 900), "phone": (390, 844)}
BLOCKING_IMPACTS = ("serious", "critical")
RENDER_WAIT_S = 20  # how long a diagram may take to draw before it counts as not drawn


def open_page(driver, url: str, palette: str) -> None:
    """Load the page as a reader whose system asks for `palette`, with nothing stored from an earlier visit
    (the browser serves one test after another: its cache and the site's stored palette are cleared)."""
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(url))
    driver.get("about:blank")  # a page of the site left open would write its storage back after the clearing
    driver.execute_cdp_cmd("Network.clearBrowserCache", {})
    driver.execute_cdp_cmd("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"})
    driver.execute_cdp_cmd(
        "Emulation.setEmulatedMedia",
        {"features": [{"name": "prefers-color-scheme", "value": "dark" if palette == "dark" else "light"}]},
    )
    for log in ("browser", "performance"):
        driver.get_log(log)  # reading a log empties it: drop what the pages opened before left there
    driver.get(url)
    WebDriverWait(driver, RENDER_WAIT_S).until(lambda d: d.execute_script("return document.readyState") == "complete")


def scheme(driver) -> str:
    return driver.execute_script("return document.body.getAttribute('data-md-color-scheme')")


MIN_DIAGRAM_WIDTH_PX = 300  # narrower, a drawing has collapsed to its content's width: its labels are unreadable


def diagrams_shown(driver) -> list[list[str]]:
    """For each diagram of the page, the class of each drawing the reader sees (one with a size), and "narrow"
    for a drawing narrower than MIN_DIAGRAM_WIDTH_PX in a column wide enough for it."""
    return driver.execute_script(
        "const least = arguments[0];"
        "return [...document.querySelectorAll('figure.execdocs-diagram')].map(figure =>"
        " [...figure.querySelectorAll(':scope > div')]"
        " .filter(drawing => drawing.getBoundingClientRect().height > 0 && drawing.querySelector('svg'))"
        " .map(drawing => drawing.querySelector('svg').getBoundingClientRect().width"
        "   < Math.min(least, figure.getBoundingClientRect().width) ? 'narrow' : drawing.className));",
        MIN_DIAGRAM_WIDTH_PX,
    )


def diagram_problems(driver) -> list[str]:
    """Each diagram shows one drawing, the one of the palette the page is in."""
    palette = next(name for name, material in SCHEMES.items() if material == scheme(driver))
    problems = []
    for number, shown in enumerate(diagrams_shown(driver), start=1):
        if shown != [f"execdocs-diagram__{palette}"]:
            problems.append(f"diagram {number} shows {shown or 'no drawing'} in the {palette} palette")
    return problems


def tab_problems(driver) -> list[str]:
    """Click every content tab; each must show its block, and the block must show something."""
    problems = []
    for number, tab_set in enumerate(driver.find_elements(By.CSS_SELECTOR, ".tabbed-set"), start=1):
        labels = tab_set.find_elements(By.CSS_SELECTOR, ":scope > .tabbed-labels > label")
        blocks = tab_set.find_elements(By.CSS_SELECTOR, ":scope > .tabbed-content > .tabbed-block")
        if len(blocks) != len(labels):
            problems.append(f"tab set {number} has {len(labels)} tabs but {len(blocks)} blocks of content")
        for label, block in zip(labels, blocks, strict=False):
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].click()", label)
            shown = driver.execute_script(
                "const block = arguments[0];"
                "return block.getBoundingClientRect().height > 0"
                " && (block.innerText.trim() !== '' || block.querySelector('svg, img') !== null)",
                block,
            )
            if not shown:
                problems.append(f"tab {label.text.strip()!r} of tab set {number} shows nothing")
    return problems


def console_errors(driver) -> list[str]:
    return [f"console error: {entry['message']}" for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def request_problems(driver, base_url: str) -> list[str]:
    """Failed requests, and requests to anywhere but the site, from the DevTools network events."""
    site = urlsplit(base_url).netloc
    urls, problems = {}, []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        params = message.get("params", {})
        if message["method"] == "Network.requestWillBeSent":
            url = params["request"]["url"]
            urls[params["requestId"]] = url
            if urlsplit(url).scheme in ("http", "https", "ws", "wss") and urlsplit(url).netloc != site:
                problems.append(f"request leaves the site: {url}")
        elif message["method"] == "Network.responseReceived" and params["response"]["status"] >= 400:
            problems.append(f"request failed with {params['response']['status']}: {params['response']['url']}")
        elif message["method"] == "Network.loadingFailed" and not params.get("canceled"):
            problems.append(f"request failed ({params['errorText']}): {urls.get(params['requestId'], '?')}")
    return problems


def axe_problems(driver) -> list[str]:
    """Serious and critical violations that axe-core (vendored from npm) finds on the page as it is now."""
    driver.execute_script(vendored("axe-core/axe.min.js").read_text())
    violations = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "const options = {resultTypes: ['violations'], rules: {'target-size': {enabled: true}}};"
        "axe.run(document, options).then(r => done(r.violations), e => done(String(e)));"
    )
    if isinstance(violations, str):
        return [f"axe-core failed: {violations}"]
    return [
        f"axe {violation['id']} ({violation['impact']}) on {len(violation['nodes'])} element(s): {violation['help']}; "
        f"first {violation['nodes'][0]['target']}: {' '.join(violation['nodes'][0]['failureSummary'].split())}"
        for violation in violations
        if violation["impact"] in BLOCKING_IMPACTS
    ]


def check_page(driver, base_url: str, path: str, palette: str, screenshot: Path | None = None) -> list[str]:
    """Open the page in `palette` and run every check that holds on all pages; each problem names the page."""
    open_page(driver, base_url + path, palette)
    problems = []
    if scheme(driver) != SCHEMES[palette]:
        problems.append(f"opened in the {scheme(driver)!r} scheme instead of {SCHEMES[palette]!r}")
    problems += diagram_problems(driver)
    problems += tab_problems(driver)
    problems += axe_problems(driver)
    problems += console_errors(driver)
    problems += request_problems(driver, base_url)
    if screenshot is not None:
        driver.execute_script("window.scrollTo(0, 0)")
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(screenshot))
    return [f"/{path} ({palette}): {problem}" for problem in problems]
