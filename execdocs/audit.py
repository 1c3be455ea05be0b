"""Lighthouse over the built site, one row per kind of page: `nox -s audit` (for authors, not a test).

    python -m execdocs.audit <site folder>

Lighthouse comes from npm (installed with --ignore-scripts, so it downloads no browser) and drives
the system's Chromium. Scores are for the desktop preset; bytes are what the page transferred
while it loaded, and any request that left the site is counted.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

from execdocs.chromium import FLAGS, chromium, missing, profile_flag
from execdocs.layout import CACHE
from execdocs.local_site import serve
from execdocs.reader_pages import PAGES

LIGHTHOUSE_VERSION = "12.8.2"
LIGHTHOUSE = CACHE / "audit" / "node_modules" / "lighthouse" / "cli" / "index.js"
CATEGORIES = ["performance", "accessibility", "best-practices", "seo"]


def install_lighthouse() -> None:
    if LIGHTHOUSE.is_file():
        return
    subprocess.run(
        [
            "npm",
            "install",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--prefix",
            str(LIGHTHOUSE.parents[3]),  # the folder that holds node_modules/
            f"lighthouse@{LIGHTHOUSE_VERSION}",
        ],
        check=True,
    )


def lighthouse(url: str) -> dict:
    """Lighthouse's report on one page, from a Chromium with a profile of its own."""
    with tempfile.TemporaryDirectory() as profile:
        process = subprocess.run(
            [
                "node",
                str(LIGHTHOUSE),
                url,
                "--preset=desktop",
                "--output=json",
                "--output-path=stdout",
                "--quiet",
                f"--only-categories={','.join(CATEGORIES)}",
                f"--chrome-flags={' '.join([*FLAGS, profile_flag(Path(profile))])}",
            ],
            env={**os.environ, "CHROME_PATH": chromium()},
            capture_output=True,
            text=True,
            check=True,
        )
    return json.loads(process.stdout)


def row(name: str, url: str, report: dict) -> dict:
    audits = report["audits"]
    requests = audits["network-requests"]["details"]["items"]
    site = urlsplit(url).netloc
    external = [
        item["url"]
        for item in requests
        if urlsplit(item["url"]).netloc not in ("", site) and not item["url"].startswith(("data:", "blob:"))
    ]
    failed_rules = [
        ref["id"]
        for ref in report["categories"]["accessibility"]["auditRefs"]
        if ref["weight"] and audits[ref["id"]]["score"] == 0
    ]
    return {
        "page": name,
        **{category: round(report["categories"][category]["score"] * 100) for category in CATEGORIES},
        "TBT ms": round(audits["total-blocking-time"]["numericValue"]),
        "kB": round(audits["total-byte-weight"]["numericValue"] / 1000),
        "external": len(external),
        "failed a11y rules": ", ".join(failed_rules) or "-",
    }


def main() -> None:
    if reason := missing():
        raise SystemExit(f"cannot audit: {reason}")
    site = Path(sys.argv[1])
    install_lighthouse()
    rows = []
    with serve(site) as base:
        for name, path in PAGES.items():
            rows.append(row(name, base + path, lighthouse(base + path)))
            print(f"audited {name}", file=sys.stderr)
    columns = list(rows[0])
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for values in rows:
        print("| " + " | ".join(str(values[column]) for column in columns) + " |")


if __name__ == "__main__":
    main()
