"""Draw functions for the plots of the Distributed chapter.

Each takes the JSON document a section printed and returns a matplotlib Figure; the page draws it at
build time with `execdocs.show_plot`. Axes and text are black, which the page turns into its text
colour, so the plots read in light and dark mode.
"""

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

PLAIN = FuncFormatter(lambda value, _: f"{value:g}")
COLOURS = {"eager": "#7f7f7f", "compiled": "#1f77b4", "held": "#2ca02c"}
LANES = {"eager": "#7f7f7f", "compiled, DDPOptimizer": "#1f77b4", "compiled, one graph": "#d62728"}


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


def draw_timelines(data) -> Figure:
    """The backward pass of each variant as a bar (measured) with each bucket's ready time as a tick
    (measured), and below it each all-reduce as a bar (modelled); one panel per model size."""
    sizes = data["sizes"]
    fig = Figure(figsize=(9, 1.3 + 1.5 * len(sizes) * len(LANES) / 3), layout="constrained")
    for ax, (size, variants) in zip(fig.subplots(len(sizes), 1, squeeze=False).ravel(), sizes.items(), strict=True):
        labels = []
        for row, (variant, timeline) in enumerate(variants.items()):
            compute_y, comm_y = 2 * row, 2 * row + 1
            colour = LANES[variant]
            ax.broken_barh([(0, timeline["backward_ms"])], (compute_y - 0.35, 0.7), color=colour, alpha=0.35)
            ax.vlines(timeline["ready_ms"], compute_y - 0.35, compute_y + 0.35, color=colour)
            ax.broken_barh(timeline["spans"], (comm_y - 0.35, 0.7), color=colour, edgecolor="black", linewidth=0.5)
            labels += [(compute_y, f"{variant}: backward (measured)"), (comm_y, f"{variant}: all-reduce (model)")]
        ax.set_yticks([y for y, _ in labels], [label for _, label in labels], fontsize=8)
        ax.set_ylim(-0.6, 2 * len(variants) - 0.4)
        ax.invert_yaxis()
        ax.grid(True, axis="x", alpha=0.3)
        bandwidth = f"{data['bus_bandwidth_gbs']} GB/s bus bandwidth ({data['machine']})"
        ax.set_title(f"{size}; all-reduce modelled at\n{bandwidth}", fontsize=10)
        ax.set_xlabel("ms after the backward pass starts")
    return fig
