"""Headless Chromium from the system's packages, for the browser tests and the audit.

Nothing here downloads a browser: Debian's `chromium` and `chromium-driver` are used, or nothing.
The flags keep Chromium from reaching the internet on its own (updates, sync, field trials), so
every request a page makes is one the page asked for.
"""

import shutil
from pathlib import Path

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def chromedriver() -> str | None:
    return shutil.which("chromedriver")


def missing() -> str | None:
    """Why the browser checks cannot run here, or None when they can."""
    if chromium() is None or chromedriver() is None:
        return "no chromium or no chromedriver on PATH: `apt-get install chromium chromium-driver` (CI installs them)"
    return None


def profile_flag(empty_folder: Path) -> str:
    """A new, empty profile per browser: a used one would bring cookies, a cache and a stored palette."""
    return f"--user-data-dir={empty_folder}"
