"""What a reader's browser sees on one page, as a list of problems that each name the page.

Every check here holds on every page: no console error, no failed request, no request that
leaves the site, every mermaid diagram drawn as SVG, every content tab showing something, and no
serious or critical axe-core violation. The tests add what only some pages have.
"""

import json
from pathlib import Path
from urllib.parse import urlsplit

from selenium.common.exceptions import TimeoutException
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
    """Load the page as a reader whose system asks for `palette`, with nothing stored from an earlier visit."""
    driver.execute_cdp_cmd(
        "Emulation.setEmulatedMedia",
        {"features": [{"name": "prefers-color-scheme", "value": "dark" if palette == "dark" else "light"}]},
    )
    for log in ("browser", "performance"):
        driver.get_log(log)  # reading a log empties it: drop what the browser's start-up page left there
    driver.get(url)
    WebDriverWait(driver, RENDER_WAIT_S).until(lambda d: d.execute_script("return document.readyState") == "complete")


def scheme(driver) -> str:
    return driver.execute_script("return document.body.getAttribute('data-md-color-scheme')")


def wait_for_diagrams(driver) -> None:
    """Material swaps each <pre class="mermaid"> for a drawn diagram; wait until none is left, or give up."""
    try:
        WebDriverWait(driver, RENDER_WAIT_S).until(
            lambda d: (
                not d.find_elements(By.CSS_SELECTOR, "pre.mermaid")
                and len(drawn_diagrams(d)) == len(d.find_elements(By.CSS_SELECTOR, "div.mermaid"))
            )
        )
    except TimeoutException:
        pass  # diagram_problems says which


def _nodes(node: dict):
    yield node
    for child in node.get("children", []) + node.get("shadowRoots", []) + [node.get("contentDocument") or {}]:
        if child:
            yield from _nodes(child)


def drawn_diagrams(driver) -> list[dict]:
    """Diagram hosts whose (closed) shadow root holds an <svg>: only the DevTools protocol can look inside."""
    root = driver.execute_cdp_cmd("DOM.getDocument", {"depth": -1, "pierce": True})["root"]
    hosts = []
    for node in _nodes(root):
        attributes = dict(zip(node.get("attributes", [])[::2], node.get("attributes", [])[1::2], strict=True))
        if node.get("nodeName") == "DIV" and "mermaid" in attributes.get("class", "").split():
            shadow = node.get("shadowRoots", [])
            if any(inner.get("nodeName", "").lower() == "svg" for root in shadow for inner in _nodes(root)):
                hosts.append(node)
    return hosts


def diagram_problems(driver) -> list[str]:
    undrawn = driver.find_elements(By.CSS_SELECTOR, "pre.mermaid")
    return [f"a mermaid diagram was not drawn: {pre.text.strip()[:60]!r}" for pre in undrawn]


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
    wait_for_diagrams(driver)
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
