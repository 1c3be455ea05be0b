"""Every way to work on the site. `nox -s serve` to write, `nox -s tests` before you commit.

On an image that already holds torch and the docs stack (the GPU image), run any session with
`nox --no-venv -s <session>`: nothing is installed then.
"""

import os
import shutil
from pathlib import Path

import nox

nox.options.default_venv_backend = "virtualenv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["tests"]

PYPROJECT = nox.project.load_toml("pyproject.toml")
TEST_RUN = Path(".cache/test-run")
BROWSER_TESTS = "tests/browser"
AUDIT = Path(".cache/audit")


def install(session: nox.Session, *groups: str) -> None:
    """The project (with torch) and the named dependency groups, then the vendored JavaScript. Every session
    that runs examples installs "models" too: the examples that use transformers run on the CPU as well."""
    session.env["NO_MKDOCS_2_WARNING"] = "1"  # Material's end-of-life banner, printed on every build
    if session.venv_backend != "none":
        wanted = [requirement for group in groups for requirement in nox.project.dependency_groups(PYPROJECT, group)]
        if shutil.which("nvidia-smi") is None:
            wanted += nox.project.dependency_groups(PYPROJECT, "cpu")  # triton for TRITON_INTERPRET=1
        session.install("-e", ".", *wanted)
    session.run("python3", "-m", "execdocs.vendor")  # fetches only what is missing


@nox.session
def serve(session: nox.Session) -> None:
    """Build every page on this machine and serve it at http://127.0.0.1:8000, reloading on edits.

    Not strict: a preview warns about a broken link or a stale GPU recording and shows the rest;
    `build` and `tests` fail on the same problems.
    """
    install(session, "docs", "models")
    session.run("mkdocs", "serve", "--no-strict", "--dev-addr", "127.0.0.1:8000", *session.posargs)


@nox.session
def build(session: nox.Session) -> None:
    """Build the site into site/, strictly: a failing example or a broken link fails the build."""
    install(session, "docs", "models")
    session.run("mkdocs", "build", "--site-dir", "site", *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """Run every example once, verify every code block in docs/ with sybil, build strictly, then read
    the built pages in a headless Chromium (tests/browser/; skipped, saying why, where there is none)."""
    install(session, "docs", "models", "test")
    shutil.rmtree(TEST_RUN, ignore_errors=True)
    # The strict build below executes every lab with its solutions: the tests leave that run to it.
    env = {"EXECDOCS_RUN_DIR": str(TEST_RUN.resolve()), "EXECDOCS_BUILD_RUNS_LABS": "1"}
    workers = os.environ.get("PYTEST_WORKERS", "2")
    # loadgroup: the tests that wait for one example's run share a worker (conftest.py says which)
    session.run("pytest", "-n", workers, "--dist", "loadgroup", "--ignore", BROWSER_TESTS, *session.posargs, env=env)
    # The build reuses this run's results, so no example runs a second time.
    session.run("mkdocs", "build", "--site-dir", str(TEST_RUN / "site"), env=env)
    # Two browsers at a time: a page check mostly waits on the page, not the cores.
    site = {"EXECDOCS_SITE": str(TEST_RUN / "site")}
    session.run("pytest", "-n", workers, BROWSER_TESTS, env={**env, **site})


@nox.session
def audit(session: nox.Session) -> None:
    """Lighthouse (npm, desktop preset) over each kind of page of a strict build: scores, bytes, external requests.

    For authors, not a test: scores move with the machine's load. Needs Chromium, as the browser tests do.
    """
    install(session, "docs", "models")
    session.run("mkdocs", "build", "--site-dir", str(AUDIT / "site"))
    session.run("python3", "-m", "execdocs.audit", str(AUDIT / "site"))


@nox.session
def record(session: nox.Session) -> None:
    """Re-record examples on this machine's device: `nox -s record -- <chapter or chapter/topic> ...`."""
    if not session.posargs:
        session.error("name what to record, e.g. `nox -s record -- overview` or `-- overview/end_to_end`")
    install(session, "docs", "models")
    session.run("python3", "-m", "execdocs.record", *session.posargs)


@nox.session
def diagrams(session: nox.Session) -> None:
    """Draw every mermaid diagram of docs/ that has no drawing yet into snippets/diagrams/, with the vendored
    mermaid in headless Chromium, and delete the drawings no diagram uses any more: commit what it writes."""
    install(session, "docs", "test")
    session.run("python3", "-m", "execdocs.diagrams")


@nox.session
def drift(session: nox.Session) -> None:
    """Run every CPU example under other torch releases and compare each with its committed recording:
    `nox -s drift -- 2.11.0 2.14.1 2.15.0`. For authors, not a test: it installs each release's torch
    (several GB) into .cache/drift/ and runs every CPU example once per release, and once more under
    this session's own torch as the control. The Versions page reads what it writes to snippets/drift/."""
    if not session.posargs:
        session.error("name the torch releases, e.g. `nox -s drift -- 2.11.0 2.14.1 2.15.0`")
    install(session, "docs", "models")
    session.run("python3", "-m", "execdocs.drift", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """Ruff, for style and the mistakes it can see without running anything."""
    if session.venv_backend != "none":
        session.install(*nox.project.dependency_groups(PYPROJECT, "lint"))
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", "execdocs", "tests", "noxfile.py", "conftest.py")
