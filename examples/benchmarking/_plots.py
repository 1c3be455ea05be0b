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
    """Left: each side's host time and GPU busy time per call against batch size; the larger one sets the
    latency. Right: the paired speedup over eager, with whiskers from the 10th to the 90th percentile."""
    fig = Figure(figsize=(9, 3.8), layout="constrained")
    left, right = fig.subplots(1, 2)
    sides = {"eager": data["eager"], **{mode: points for mode, points in data["modes"].items() if len(points) > 1}}
    for name, points in sides.items():
        batches = sorted(int(b) for b in points)
        colour = COLOURS.get(name, "black")
        left.plot(batches, [points[str(b)]["host_ms"] for b in batches], "--", marker="o", color=colour)
        left.plot(batches, [points[str(b)]["busy_ms"] for b in batches], "-", marker="s", color=colour, label=name)
    for mode, points in data["modes"].items():
        batches = sorted(int(b) for b in points)
        speedups = [points[str(b)]["speedup"] for b in batches]
        low, high = zip(*(points[str(b)]["range"] for b in batches), strict=True)
        whiskers = [
            [s - lo for s, lo in zip(speedups, low, strict=True)],
            [hi - s for s, hi in zip(speedups, high, strict=True)],
        ]
        right.errorbar(batches, speedups, yerr=whiskers, marker="o", capsize=3, color=COLOURS.get(mode), label=mode)
    batches = sorted(int(b) for b in data["eager"])
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(batches)
        ax.xaxis.set_major_formatter(PLAIN)
        ax.set_xlabel("batch size (sequences)")
        ax.grid(True, alpha=0.3)
    left.set_yscale("log")
    left.yaxis.set_major_formatter(PLAIN)
    left.yaxis.set_minor_formatter(NullFormatter())
    left.set_ylabel("ms per call (log scale)")
    left.set_title("host time (dashed) and GPU busy time (solid)")
    left.legend(frameon=False)
    right.axhline(1.0, color="black", linewidth=0.8)
    right.set_ylabel("paired speedup over eager")
    right.set_title("median of pairs, 10th-90th percentile")
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


def draw_memory_budget(data) -> Figure:
    """Peak GPU memory of a training step against its time, one point per activation-memory budget,
    with whiskers from the 20th to the 80th percentile of the step time."""
    fig = Figure(figsize=(6, 3.8), layout="constrained")
    ax = _axes(fig)
    points = data["points"]
    ms = [p["ms"]["median"] for p in points]
    whiskers = [
        [p["ms"]["median"] - p["ms"]["p20"] for p in points],
        [p["ms"]["p80"] - p["ms"]["median"] for p in points],
    ]
    peaks = [p["peak_gib"] for p in points]
    ax.errorbar(ms, peaks, xerr=whiskers, marker="o", capsize=3, linestyle="-", color=COLOURS["default"])
    for point, x, y in zip(points, ms, peaks, strict=True):
        ax.annotate(f"budget {point['budget']:g}", (x, y), textcoords="offset points", xytext=(6, 4))
    ax.set_xlabel("step time, ms (median, 20th-80th percentile)")
    ax.set_ylabel("peak GPU memory of the step, GiB")
    ax.set_title(data["model"])
    return fig
