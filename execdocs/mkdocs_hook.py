"""MkDocs hook: bring every example output a page shows up to date before any page renders.

- on_startup: under `mkdocs serve`, preview mode: a missing or stale recording of another device
  is a warning and a note on the page instead of a failure.
- on_config: the build's version stamp, for the footer of every page.
- on_pre_build: run missing or stale examples (two at a time), then fail the build with one
  sentence per problem, naming the page, the block and the example's file:line.
- on_files: publish every stored result
  (with the files its example wrote) at outputs/<device>/<chapter>/<topic>.json for pages to link, and
  every example script and helper at examples/, for readers to download;
  then hash the build's inputs, so that each page's render and search entries come from
  .cache/pages/ while nothing that goes into them changed (execdocs/page_cache.py).
- on_page_content: code blocks left out of the search index, and made keyboard-scrollable
  (execdocs/reader_html.py). Diagrams need nothing here: each is a committed drawing (execdocs/diagrams.py).
- on_page_markdown: make GPU-only blocks say so on the page.
- labs (execdocs/labs.py): the downloadable notebooks, and each rendered lab page finished; the labs
  that mkdocs-jupyter's cache lacks are executed side by side at on_files (execdocs/lab_render.py).
"""

import datetime
import logging
import os
import re

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

from execdocs import lab_render, labs, page_cache, reader_html, runner, store
from execdocs.environment import PREVIEW_ENV, can_run, machine_device, machine_stamp, preview
from execdocs.examples import all_examples
from execdocs.layout import DEVICES, EXAMPLES
from execdocs.markdown_blocks import blocks
from execdocs.pages import PageError, all_references, default_device, is_recording_gap, problem
from execdocs.render import VERSIONS_HREF

log = logging.getLogger("mkdocs.plugins.execdocs")

GPU_ONLY_NOTE = (
    '!!! gpu-only "Needs a CUDA GPU"\n'
    "    The block below runs only where torch sees a CUDA GPU. This {device} build did not run it, and "
    "the CPU tests report it as skipped; the GPU image runs and verifies it.\n\n"
)


def on_startup(command, dirty):
    if command == "serve":
        os.environ[PREVIEW_ENV] = "1"


def on_config(config):
    stamp = dict(machine_stamp())
    stamp["date"] = datetime.date.today().isoformat()
    stamp["device"] = machine_device()
    config.extra["build"] = stamp
    return labs.configure(config)


def on_pre_build(config):
    try:
        references = all_references()
    except PageError as error:
        raise PluginError(str(error)) from None
    machine = machine_device()
    wanted = [(reference, reference.device or default_device(reference.example, machine)) for reference in references]
    runnable = [(ref.example, device) for ref, device in wanted if ref.shows_output and ref.example.runs_on(device)]
    results = runner.ensure_all(runnable)
    problems = []
    for reference, device in wanted:
        result = results.get((reference.example.name, device))
        runnable = can_run(device, reference.example.gpus)
        message = problem(reference, device, result, runnable)
        if message and preview() and is_recording_gap(reference, device, result, runnable):
            log.warning(message)  # the page shows the old recording, or a note, marked as such
        elif message:
            problems.append(message)
    if problems:
        raise PluginError("examples the pages need are not usable:\n" + "\n".join(problems))


def on_files(files, config):
    for example in all_examples():
        for device in DEVICES:
            result = store.load(example, device)
            if result is None or not result.ok:
                continue
            files.append(File.generated(config, f"outputs/{device}/{example.name}.json", content=store.as_json(result)))
            for path, text in result.artifacts.items():
                files.append(File.generated(config, f"outputs/{device}/{example.name}/{path}", content=text))
    for path in sorted(EXAMPLES.rglob("*.py")):  # every script and helper a page names, for readers to download
        if "__pycache__" not in path.parts:
            site_path = f"examples/{path.relative_to(EXAMPLES).as_posix()}"
            files.append(File.generated(config, site_path, abs_src_path=str(path)))
    files = labs.prepare_files(files, config)
    lab_render.render_uncached(files, config)
    page_cache.start_build(config, files)
    return files


def on_page_markdown(markdown, page, config, files):
    """Put a visible note above each ```python requires="cuda"``` block, and drop the attribute."""
    note = "" if machine_device() == "cuda" else GPU_ONLY_NOTE.format(device=machine_device().upper())
    for block in reversed(blocks(markdown)):
        if block.attrs.get("requires") != "cuda":
            continue
        opening_end = markdown.index("\n", block.start)
        opening = re.sub(r'\s*requires="cuda"', "", markdown[block.start : opening_end])
        indent = opening[: len(opening) - len(opening.lstrip())]
        indented_note = "".join(indent + line if line.strip() else line for line in note.splitlines(keepends=True))
        markdown = markdown[: block.start] + indented_note + opening + markdown[opening_end:]
    return markdown


def on_page_content(html, page, config, files):
    html = reader_html.keyboard_scrollable_code(reader_html.without_code_in_search(html))
    if VERSIONS_HREF in html:  # the line under two tabs of different torch releases links the Versions page
        versions = files.get_file_from_path("versions.md")
        html = html.replace(VERSIONS_HREF, versions.url_relative_to(page.file) if versions else "")
    return labs.finish_page(html, page, config, files)
