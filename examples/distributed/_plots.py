"""Draw functions for the plots of the Distributed chapter.

Each takes the JSON document a section printed and returns a matplotlib Figure; the page draws it at
build time with `execdocs.show_plot`. Axes and text are black, which the page turns into its text
colour, so the plots read in light and dark mode.
"""

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

PLAIN = FuncFormatter(lambda value, _: f"{value:g}")
COLOURS = {"eager": "#7f7f7f", "compiled": "#1f77b4", "held": "#2ca02c"}


def draw_memory(data) -> Figure:
    """Per-rank peak memory while forward and backward run and while AdamW steps, eager and compiled,
    and what is held between steps, against the number of ranks; one panel per model size."""
    fig = Figure(figsize=(9, 3.6), layout="constrained")
    lines = {
        "eager_forward_backward_gib": ("peak in forward+backward, eager", "eager", "-"),
        "compiled_forward_backward_gib": ("peak in forward+backward, compiled", "compiled", "-"),
        "eager_optimizer_gib": ("peak in AdamW's step, eager", "eager", "--"),
        "compiled_optimizer_gib": ("peak in AdamW's step, compiled", "compiled", "--"),
        "held_gib": ("held between steps", "held", ":"),
    }
    for ax, (size, rows) in zip(fig.subplots(1, len(data), squeeze=False).ravel(), data.items(), strict=True):
        ranks = [row["world_size"] for row in rows]
        for key, (label, colour, style) in lines.items():
            ax.plot(ranks, [row[key] for row in rows], style, marker="o", color=COLOURS[colour], label=label)
        ax.set_xscale("log", base=2)
        ax.set_xticks(ranks)
        ax.xaxis.set_major_formatter(PLAIN)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.set_title(size)
        ax.set_xlabel("ranks (fake process group)")
        ax.set_ylabel("GiB per rank")
    ax.legend(frameon=False, fontsize=8)
    return fig


def draw_bus_bandwidth(data) -> Figure:
    """NCCL's bus bandwidth against the message size, one line per collective, on the recording machine's GPUs."""
    fig = Figure(figsize=(9, 3.6), layout="constrained")
    ax = fig.subplots()
    for (collective, speeds), colour in zip(data.items(), ("#1f77b4", "#d62728", "#2ca02c"), strict=True):
        ax.plot([int(mib) for mib in speeds], list(speeds.values()), marker="o", color=colour, label=collective)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(PLAIN)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.set_xlabel("MiB per collective (the full size)")
    ax.set_ylabel("bus bandwidth, GB/s")
    ax.legend(frameon=False, fontsize=8)
    return fig


def draw_step_timelines(data) -> Figure:
    """One profiled training step of each variant on both GPUs: the kernels of the step in one lane, NCCL's in
    another, each bar a run of kernels; one panel per variant, times from each GPU's first kernel."""
    fig = Figure(figsize=(9, 1.2 + 1.25 * len(data)), layout="constrained")
    for ax, (variant, ranks) in zip(fig.subplots(len(data), 1, sharex=True).ravel(), data.items(), strict=True):
        labels = []
        for rank, lanes in enumerate(ranks):
            for offset, (lane, colour) in enumerate((("compute", "#7f7f7f"), ("nccl", "#d62728"))):
                y = 2 * rank + offset
                ax.broken_barh(lanes[lane], (y - 0.35, 0.7), color=colour)
                labels.append((y, f"GPU {rank}: {'kernels' if lane == 'compute' else 'NCCL'}"))
        ax.set_yticks([y for y, _ in labels], [label for _, label in labels], fontsize=7)
        ax.set_ylim(-0.6, 2 * len(ranks) - 0.4)
        ax.invert_yaxis()
        ax.grid(True, axis="x", alpha=0.3)
        ax.set_title(variant, fontsize=9, loc="left")
    ax.set_xlabel("ms from the step's first kernel")
    return fig
