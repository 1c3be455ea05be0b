"""Draw functions for the plots of the benchmarking pages (the first part of the chapter).

Each takes the JSON document a section printed and returns a matplotlib Figure; the page draws it
at build time with `execdocs.show_plot`. Axes and text are black, which the page turns into its
text colour, so the plots read in light and dark mode.
"""

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

PLAIN = FuncFormatter(lambda value, _: f"{value:g}")

COLOURS = {
    "eager": "#7f7f7f",
    "default": "#1f77b4",
    "reduce-overhead": "#d62728",
    "max-autotune": "#2ca02c",
}


def _axes(fig):
    ax = fig.add_subplot()
    ax.grid(True, which="major", alpha=0.3)
    return ax


def draw_sweep(data) -> Figure:
    """Latency per call against batch size, one line per mode, and the speedup over eager."""
    latency = data["latency_ms"]
    fig = Figure(figsize=(9, 3.8), layout="constrained")
    left, right = fig.subplots(1, 2)
    eager = {int(b): ms for b, ms in latency["eager"].items()}
    for mode, points in latency.items():
        batches = sorted(int(b) for b in points)
        times = [points[str(b)] for b in batches]
        style = {"color": COLOURS.get(mode, "black"), "marker": "o", "label": mode}
        left.plot(batches, times, **style)
        right.plot(batches, [eager[b] / points[str(b)] for b in batches], **style)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(eager))
        ax.xaxis.set_major_formatter(PLAIN)
        ax.set_xlabel("batch size (sequences)")
        ax.grid(True, alpha=0.3)
    left.set_yscale("log")
    left.yaxis.set_major_formatter(PLAIN)
    left.yaxis.set_minor_formatter(NullFormatter())
    left.set_ylabel("ms per call (log scale)")
    left.set_title("latency")
    right.axhline(1.0, color="black", linewidth=0.8)
    right.set_ylabel("speedup over eager")
    right.set_title("eager ms / compiled ms")
    right.legend(frameon=False)
    return fig


def draw_roofline(data) -> Figure:
    """Achieved TFLOP/s against arithmetic intensity, under the two measured ceilings."""
    bandwidth = data["copy_gbs"] * 1e9
    peak = data["peak_tflops"]
    kernels = data["kernels"]
    intensities = [k["intensity"] for k in kernels]
    low, high = min(intensities) / 30, max(intensities + [peak * 1e12 / bandwidth]) * 8
    xs = [low * (high / low) ** (i / 200) for i in range(201)]
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = _axes(fig)
    ax.plot(xs, [min(peak, x * bandwidth / 1e12) for x in xs], color="black", linewidth=1.5)
    ax.annotate(f"copy bandwidth {data['copy_gbs']:.0f} GB/s", (low * 1.3, low * 2.5 * bandwidth / 1e12))
    ax.annotate(f"matmul peak {peak:.0f} TFLOP/s", (high / 60, peak * 1.15))
    for i, k in enumerate(kernels):
        colour = f"C{i}"
        ax.plot(k["intensity"], k["tflops"], "o", color=colour, markersize=8)
        above = i % 2 == 1  # neighbours with the same intensity get their labels on opposite sides
        ax.annotate(
            f"{k['name']} ({k['share']:.0%})",
            (k["intensity"], k["tflops"]),
            textcoords="offset points",
            xytext=(-8, 6) if above else (8, -12),
            ha="right" if above else "left",
            color=colour,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.set_title("roofline: share of the ceiling that applies")
    return fig
