"""Fetch the JavaScript that Material would otherwise load from a CDN when a page is viewed.

Run once per machine (the nox sessions do it): `python -m execdocs.vendor`. The build then
needs no network, and neither does viewing the site.
"""

import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from execdocs.layout import VENDOR

# (npm package, version, file inside the package, name in the site under assets/vendor/)
ASSETS = [("mermaid", "11.17.2", "package/dist/mermaid.min.js", "mermaid.min.js")]
# Loaded only by the labs' notebook pages (execdocs/labs.py publishes them, through a small loader that
# configures MathJax first), so not part of every page's scripts. tex-svg-full is one self-contained
# file: SVG output needs no web fonts, and every TeX extension is inside, so nothing is fetched later.
LAB_ASSETS = [("mathjax", "3.2.2", "package/es5/tex-svg-full.js", "mathjax/tex-svg-full.js")]
# Not part of the site: the browser tests inject axe-core into each page they check.
TEST_ASSETS = [("axe-core", "4.13.0", "package/axe.min.js", "axe.min.js")]


def vendored(site_name: str) -> Path:
    return VENDOR / site_name


def site_files(config, assets) -> list:
    """The vendored files of `assets`, as MkDocs files served at assets/vendor/ (for a hook's on_files)."""
    from mkdocs.exceptions import PluginError
    from mkdocs.structure.files import File

    files = []
    for *_, site_name in assets:
        source = vendored(site_name)
        if not source.is_file():
            raise PluginError(f"{source} is missing: run `python -m execdocs.vendor` once (nox sessions do it).")
        files.append(File.generated(config, f"assets/vendor/{site_name}", abs_src_path=str(source)))
    return files


def fetch() -> None:
    for package, version, member, site_name in ASSETS + LAB_ASSETS + TEST_ASSETS:
        target = vendored(site_name)
        stamp = target.with_suffix(".version")
        if target.is_file() and stamp.is_file() and stamp.read_text() == version:
            continue
        if shutil.which("npm") is None:
            raise SystemExit(f"npm is needed once to fetch {package} {version}; install Node.js and npm.")
        with tempfile.TemporaryDirectory() as scratch:
            subprocess.run(
                ["npm", "pack", f"{package}@{version}", "--pack-destination", scratch], check=True, capture_output=True
            )
            with tarfile.open(next(Path(scratch).glob("*.tgz"))) as archive:
                source = archive.extractfile(member)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(source.read())
        stamp.write_text(version)
        print(f"vendored {package} {version} -> {target}")


if __name__ == "__main__":
    fetch()
