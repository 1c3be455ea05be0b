"""Plots drawn at build time from the numbers an example printed.

    ```python exec="on" html="true"
    from execdocs import show_plot
    show_plot("benchmarking/batch_sweep:sweep-data", "benchmarking._plots:draw_sweep", device="cuda")
    ```

The section prints one JSON document; the named function, `draw(data)`, turns it into a
matplotlib figure, which the page embeds as inline SVG (no image files, nothing fetched) with the
stamp of the run it came from. Drawn figures are cached by the section's text and the source of
the draw function's module, so a warm rebuild neither draws nor imports matplotlib or torch.
"""

import hashlib
import html
import importlib
import importlib.metadata
import importlib.util
import io
import json
import os
import re
from pathlib import Path

from execdocs.environment import machine_device
from execdocs.layout import CACHE
from execdocs.render import ShowError, print_to_block, recorded_title, section_result, stamp_line

PLOTS = CACHE / "plots"


def figure_svg(figure) -> str:
    """The figure as an inline <svg>: transparent, scaled to the page, black drawn in the page's text colour."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", transparent=True, bbox_inches="tight", metadata={"Date": None})
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg") :]  # the XML prologue and doctype are not allowed inside HTML
    scaled = r'<svg\1 style="width: 100%; height: auto"'
    svg = re.sub(r'<svg([^>]*?) width="[^"]*" height="[^"]*"', scaled, svg, count=1)
    svg = svg.replace("#000000", "currentColor")  # so that dark mode shows axes and labels too
    return "\n".join(line for line in svg.splitlines() if line.strip())  # a blank line would end the HTML block


def _module_source(module_name: str) -> bytes:
    spec = importlib.util.find_spec(module_name)
    if spec is None or spec.origin is None:
        raise ShowError(f"show_plot: no module {module_name!r} to draw with; name it as 'package.module:function'")
    return Path(spec.origin).read_bytes()


def _svg(target: str, draw: str, printed: str) -> str:
    """The figure `draw` ("module:function") makes of what the section printed, from the cache when it can."""
    module_name, _, function = draw.partition(":")
    parts = [draw, _module_source(module_name), printed, importlib.metadata.version("matplotlib")]
    key = hashlib.sha256(b"\0".join(part if isinstance(part, bytes) else part.encode() for part in parts))
    cached = PLOTS / f"{key.hexdigest()[:24]}.svg"
    if cached.is_file():
        return cached.read_text()
    try:
        data = json.loads(printed)
    except json.JSONDecodeError as error:
        raise ShowError(
            f"show_plot({target!r}): the section must print one JSON document (print(json.dumps(data))); "
            f"{error.msg} at line {error.lineno} of what it printed"
        ) from None
    svg = figure_svg(getattr(importlib.import_module(module_name), function)(data))
    PLOTS.mkdir(parents=True, exist_ok=True)
    scratch = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
    scratch.write_text(svg)
    scratch.replace(cached)  # atomic: parallel builds never read half a file
    return svg


def show_plot(target: str, draw: str, device: str | None = None) -> None:
    """Draw the JSON a section printed with `draw`, a "module:function" returning a matplotlib Figure."""
    reference, result, preview_warning = section_result(target, device)
    if result is None:  # preview only: nothing recorded yet
        print_to_block(f'<p class="admonition failure">Not recorded yet: {html.escape(preview_warning)}</p>')
        return
    svg = _svg(target, draw, result.sections[reference.section])
    caption = f"Plotted from <code>{reference.example.described}</code> · {stamp_line(result)}"
    if result.device != machine_device():
        caption = f"{recorded_title(result)}. {caption}"
    if preview_warning:
        caption = f"<strong>Stale: this preview shows an outdated recording.</strong> {caption}"
    caption = f'<figcaption class="execdocs-stamp">{caption}</figcaption>'
    print_to_block(f'<figure class="execdocs-plot">\n{svg}\n{caption}\n</figure>')
