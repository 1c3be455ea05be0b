"""Plots drawn at build time from the numbers an example printed.

    ```python exec="on" html="true"
    from execdocs import show_plot
    from benchmarking._plots import draw_sweep
    show_plot("benchmarking/batch_sweep:sweep-data", draw_sweep, device="cuda")
    ```

The section prints one JSON document; `draw(data)` turns it into a matplotlib figure, which the
page embeds as inline SVG (no image files, nothing fetched) with the stamp of the run it came from.
"""

import html
import io
import json
import re
from collections.abc import Callable

from execdocs.environment import machine_device
from execdocs.render import ShowError, print_to_block, recorded_title, section_result, stamp_line


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


def show_plot(target: str, draw: Callable, device: str | None = None) -> None:
    """Draw the JSON a section printed with `draw(data) -> matplotlib Figure`, stamped like show()."""
    reference, result, preview_warning = section_result(target, device)
    if result is None:  # preview only: nothing recorded yet
        print_to_block(f'<p class="admonition failure">Not recorded yet: {html.escape(preview_warning)}</p>')
        return
    text = result.sections[reference.section]
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ShowError(
            f"show_plot({target!r}): the section must print one JSON document (print(json.dumps(data))); "
            f"{error.msg} at line {error.lineno} of what it printed"
        ) from None
    caption = f"Plotted from <code>{reference.example.display_path}</code> · {stamp_line(result)}"
    if result.device != machine_device():
        caption = f"{recorded_title(result)}. {caption}"
    if preview_warning:
        caption = f"<strong>Stale: this preview shows an outdated recording.</strong> {caption}"
    print_to_block(
        f'<figure class="execdocs-plot">\n{figure_svg(draw(data))}\n'
        f'<figcaption class="execdocs-stamp">{caption}</figcaption>\n</figure>'
    )
