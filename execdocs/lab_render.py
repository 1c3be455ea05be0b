"""Render the labs that mkdocs-jupyter's cache lacks, several at a time, before any page renders.

mkdocs-jupyter executes a lab when its page renders, one page after another: on a fresh clone the
seven labs took about 60 of a strict build's 68 s. Each render mostly waits on its kernel, a process
of its own, so at on_files this runs the plugin's own render of each uncached lab in a thread pool;
the pages then render from the cache it wrote. A lab with a cell tagged `timing` is left to its page,
which renders it with nothing else running: a kernel compiling next to it on the same cores moved
its timings tenfold and failed its checks.
"""

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

from mkdocs.exceptions import PluginError

from execdocs.labs import times_itself

log = logging.getLogger("mkdocs.plugins.execdocs.labs")


def _cached(plugin, file) -> bool:
    from mkdocs_jupyter.plugin import _compute_cache_key, _get_cache_path

    key = _compute_cache_key(file.abs_src_path, plugin.config, plugin.config["execute"])
    return _get_cache_path(plugin.config["cache_dir"], key).exists()


def _render(plugin, file, config, files) -> None:
    """The plugin's own on_pre_page and render, on a stand-in page: it writes the cache entry the page reads."""
    page = SimpleNamespace(file=file, abs_url="/")  # abs_url: for the download link it sets, which is discarded
    plugin.on_pre_page(page, config, files)
    page.render(config, files)


def render_uncached(files, config) -> None:
    plugin = config.plugins.get("mkdocs-jupyter")
    if plugin is None or not plugin.config["cache"] or not plugin.config["execute"]:
        return
    uncached = [file for file in files if plugin.should_include(file) and not _cached(plugin, file)]
    side_by_side = [file for file in uncached if not times_itself(Path(file.abs_src_path))]
    if len(side_by_side) < 2:
        return  # nothing to gain: each page renders its own
    workers = min(len(side_by_side), os.cpu_count() or 1)
    log.info(f"executing {len(side_by_side)} labs, {workers} at a time")
    with ThreadPoolExecutor(workers) as pool:
        futures = {pool.submit(_render, plugin, file, config, files): file for file in side_by_side}
    for future, file in futures.items():
        if error := future.exception():
            raise PluginError(
                f"docs/{file.src_uri}: a cell raised while the build executed the lab with its solutions; "
                f"fix it, checking with `pytest tests/test_labs.py -k {Path(file.src_uri).stem}`:\n{error}"
            ) from error
