"""Fetch the JavaScript that Material would otherwise load from a CDN when a page is viewed.

Run once per machine (the nox sessions do it): `python -m execdocs.vendor`. The build then
needs no network, and neither does viewing the site.
"""

import fnmatch
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from execdocs.layout import VENDOR

# (npm package, version, folder inside the package, files under it to keep, folder under .cache/vendor/ and the
# site's assets/vendor/). Mermaid is not part of the site: `nox -s diagrams` draws each diagram with it, once,
# into a committed SVG (execdocs/diagrams.py). Its ES-module build: the core, and the chunks a diagram imports.
ASSETS = [("mermaid", "11.17.2", "package/dist/", ("mermaid.esm.min.mjs", "chunks/mermaid.esm.min/*.mjs"), "mermaid")]
# Loaded only by the labs' notebook pages (execdocs/labs.py publishes them, through a small loader that
# configures MathJax first), so not part of every page's scripts. tex-svg-full is one self-contained
# file: SVG output needs no web fonts, and every TeX extension is inside, so nothing is fetched later.
LAB_ASSETS = [("mathjax", "3.2.2", "package/es5/", ("tex-svg-full.js",), "mathjax")]
# Not part of the site: the browser tests inject axe-core into each page they check.
TEST_ASSETS = [("axe-core", "4.13.0", "package/", ("axe.min.js",), "axe-core")]


def vendored(path: str) -> Path:
    return VENDOR / path


def site_files(config, assets) -> list:
    """The vendored files of `assets`, as MkDocs files served at assets/vendor/ (for a hook's on_files)."""
    from mkdocs.exceptions import PluginError
    from mkdocs.structure.files import File

    files = []
    for *_, folder in assets:
        source = vendored(folder)
        if not source.is_dir():
            raise PluginError(f"{source} is missing: run `python -m execdocs.vendor` once (nox sessions do it).")
        for path in sorted(p for p in source.rglob("*") if p.is_file()):
            site_path = f"assets/vendor/{folder}/{path.relative_to(source).as_posix()}"
            files.append(File.generated(config, site_path, abs_src_path=str(path)))
    return files


def fetch() -> None:
    for package, version, base, patterns, folder in ASSETS + LAB_ASSETS + TEST_ASSETS:
        target = vendored(folder)
        stamp = target.with_name(f"{folder}.version")
        if target.is_dir() and stamp.is_file() and stamp.read_text() == version:
            continue
        if shutil.which("npm") is None:
            raise SystemExit(f"npm is needed once to fetch {package} {version}; install Node.js and npm.")
        shutil.rmtree(target, ignore_errors=True)
        with tempfile.TemporaryDirectory() as scratch:
            subprocess.run(
                ["npm", "pack", f"{package}@{version}", "--pack-destination", scratch], check=True, capture_output=True
            )
            with tarfile.open(next(Path(scratch).glob("*.tgz"))) as archive:
                for member in archive.getmembers():
                    inside = member.name.removeprefix(base)
                    if (
                        member.isfile()
                        and member.name.startswith(base)
                        and any(fnmatch.fnmatchcase(inside, pattern) for pattern in patterns)
                    ):
                        (target / inside).parent.mkdir(parents=True, exist_ok=True)
                        (target / inside).write_bytes(archive.extractfile(member).read())
        stamp.write_text(version)
        print(f"vendored {package} {version} -> {target}")


if __name__ == "__main__":
    fetch()
