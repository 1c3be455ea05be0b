"""Draw functions for the plots of the Extending pages: each takes the JSON a section printed and
returns a matplotlib Figure, drawn at build time by `execdocs.show_plot`.
"""

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

PLAIN = FuncFormatter(lambda value, _: f"{value:g}")


def draw_flex_sweep(data) -> Figure:
    """Time per call against sequence length, one line per implementation, log-log."""
    fig = Figure(figsize=(7, 3.8), layout="constrained")
    ax = fig.add_subplot()
    for name, medians in data["median_ms"].items():
        ax.plot(data["seq_lens"], medians, marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(data["seq_lens"])
    ax.xaxis.set_major_formatter(PLAIN)
    ax.yaxis.set_major_formatter(PLAIN)
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("sequence length")
    ax.set_ylabel("ms per call (log scale)")
    ax.grid(True, alpha=0.3)
    ax.legend(frameon=False)
    return fig
