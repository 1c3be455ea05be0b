"""A headless Chromium for each window a test reads in, and the built site served from localhost.

`nox -s tests` runs these after its strict build and names that build's folder in EXECDOCS_SITE.
Without Chromium, or without a built site, the tests skip and say why.
"""

import os
from pathlib import Path

import pytest

from execdocs.chromium import FLAGS, chromedriver, chromium, missing, profile_flag
from execdocs.local_site import serve
from tests.browser.page_checks import WINDOWS

SITE_ENV = "EXECDOCS_SITE"
HEADLESS_MIN_WIDTH = 500  # headless Chromium makes no window narrower: a phone's screen is emulated instead
# A page's request for any other host fails at once instead of leaving the machine; the checks still see it.
ONLY_LOCALHOST = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"


@pytest.fixture(scope="session")
def chromium_here():
    """Skip, saying why, where there is no Chromium: before any fixture builds or serves a site for it."""
    if reason := missing():
        pytest.skip(f"browser tests: {reason}")


@pytest.fixture
def window() -> str:
    """The window `driver` opens, by its name in WINDOWS: the laptop's, unless a test parametrizes `window`."""
    return "laptop"


def start_chromium(window: str, profile: Path):
    os.environ["SE_OFFLINE"] = "true"  # selenium must not look for a browser or driver to download
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    width, height = WINDOWS[window]
    options = webdriver.ChromeOptions()
    options.binary_location = chromium()
    for flag in [*FLAGS, profile_flag(profile), f"--window-size={width},{height}", ONLY_LOCALHOST]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    browser = webdriver.Chrome(options=options, service=Service(executable_path=chromedriver()))
    browser.set_script_timeout(60)
    if width < HEADLESS_MIN_WIDTH:
        screen = {"width": width, "height": height, "deviceScaleFactor": 0, "mobile": True}
        browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", screen)  # kept across page loads
    return browser


@pytest.fixture(scope="session")
def browsers(chromium_here, tmp_path_factory):
    """One Chromium per window for this worker's tests, started when a test first needs that window:
    a start costs about a second and a half of a 2-core machine. page_checks.open_page clears what a
    page stored, so each test still opens its page as a first visit."""
    started = {}

    def browser(window: str):
        if window not in started:
            started[window] = start_chromium(window, tmp_path_factory.mktemp(f"profile-{window}"))
        return started[window]

    yield browser
    for each in started.values():
        each.quit()


@pytest.fixture
def driver(browsers, window):
    return browsers(window)


@pytest.fixture(scope="session")
def built_site() -> Path:
    folder = os.environ.get(SITE_ENV)
    if not folder or not (Path(folder) / "index.html").is_file():
        pytest.skip(f"no built site: set {SITE_ENV} to a built site folder (`nox -s tests` does, after its build)")
    return Path(folder)


@pytest.fixture(scope="session")
def site_url(built_site):
    with serve(built_site) as url:
        yield url
