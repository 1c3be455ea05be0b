"""A small, reusable harness: eager against torch.compile on one model, inference or a training step.

Import it from an example of this chapter (`from benchmarking import _harness`), or copy it next to
your own model: it needs torch and `compile_tools` only (matplotlib for `draw_speedups`).
"""

import gc
import math
import time

import torch

from benchmarking import _profile_diff
import compile_tools

ROUNDS = 3  # timing rounds, eager and compiled in turn, so that a drift of the GPU hits both alike


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def first_tensor(output) -> torch.Tensor:
    """The first tensor of a model's output: a tensor, a tuple, or a transformers ModelOutput."""
    while not isinstance(output, torch.Tensor):
        output = output[0]
    return output


def default_loss(output) -> torch.Tensor:
    """The model's own loss when it returned one (a scalar first), else the mean square of its first output."""
    tensor = first_tensor(output)
    return tensor if tensor.ndim == 0 else tensor.float().square().mean()


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """||actual - expected|| / ||expected||, in float32: one number for a whole output."""
    actual, expected = actual.detach().float(), expected.detach().float()
    return ((actual - expected).norm() / expected.norm().clamp_min(1e-12)).item()


# --8<-- [start:measure]
def measure(model, make_inputs, *, train=False, mode="default", dtype=torch.bfloat16, loss_fn=default_loss, lr=1e-5):
    """Time eager against torch.compile(model, mode=mode) on the same inputs; returns a dict of results.

    make_inputs() returns the model's keyword arguments (a dict) or positional ones (a tuple).
    Inference runs under torch.no_grad; a training step is forward, loss, backward and an AdamW
    step. Both run under torch.autocast(dtype), with float32 weights (mixed precision, "AMP").
    Only the model is compiled: the loss and the optimizer stay eager.
    """
    device = next(model.parameters()).device
    inputs = make_inputs()
    args, kwargs = ((), inputs) if isinstance(inputs, dict) else (tuple(inputs), {})
    model.train(train)
    backend = _profile_diff.InductorKeepingGraphs(mode)  # Inductor, as torch.compile(mode=mode) runs it
    compiled_model = torch.compile(model, backend=backend)
    snapshot = {k: v.detach().clone() for k, v in model.state_dict().items()} if train else None

    def make_step(module):
        if not train:

            def step():
                with torch.no_grad(), torch.autocast(device.type, dtype=dtype):
                    return module(*args, **kwargs)

            return step
        # capturable: the step counters live on the GPU, so the whole step can be replayed from a CUDA graph
        adamw = {"fused": True, "capturable": True} if device.type == "cuda" else {"foreach": True}
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr, **adamw)

        def step():
            with torch.autocast(device.type, dtype=dtype):
                loss = loss_fn(module(*args, **kwargs))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            return loss.detach()

        return step

    result = {"mode": "training step" if train else "inference", "compile_mode": mode, "device": device.type}
    steps, outputs = {}, {}
    for name, module in (("eager", model), ("compiled", compiled_model)):
        if train and name == "compiled":
            model.load_state_dict(snapshot)  # the compiled step starts from the weights the eager one saw
        steps[name] = step = make_step(module)
        counters = torch._dynamo.utils.counters
        breaks_before = dict(counters["graph_break"])
        _sync(device)
        start = time.perf_counter()
        outputs[name] = first_tensor(step()).clone()  # for the compiled model, this call compiles
        _sync(device)
        result[f"{name}_first_call_s"] = time.perf_counter() - start
        if name == "compiled":
            result["graphs"] = len(backend.graphs)
            result["graph_breaks"] = [  # Dynamo's reason for each new graph break, first line
                reason.strip().splitlines()[0][:160]
                for reason, count in counters["graph_break"].items()
                if count > breaks_before.get(reason, 0) and reason.strip()
            ]
        if device.type == "cuda":  # what one call allocates on top of what it finds (weights, optimizer state)
            torch.cuda.synchronize()
            held = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            step()
            torch.cuda.synchronize()
            result[f"{name}_call_gb"] = (torch.cuda.max_memory_allocated() - held) / 1e9
    comparison = _profile_diff.compare(steps["eager"], steps["compiled"], rounds=ROUNDS)
    for name in steps:
        side = comparison[name]
        result[f"{name}_ms"], result[f"{name}_range_ms"] = side["ms"], side["range_ms"]
        result[f"{name}_launches"], result[f"{name}_busy_ms"] = side["launches"], side["busy_ms"]
        result[f"{name}_categories"] = side["categories"]
        if device.type == "cuda":
            result[f"{name}_graph_ms"], result[f"{name}_graph_note"] = cuda_graph_ms(steps[name])
    del steps  # and with them the optimizers' state
    gc.collect()
    result["relative_error"] = relative_error(outputs["compiled"], outputs["eager"])
    result["output_finite"] = bool(torch.isfinite(outputs["compiled"].float()).all())
    result["loss"] = outputs["eager"].item() if train else None
    result["compile_s"] = result["compiled_first_call_s"]
    result["speedup"] = result["eager_ms"] / result["compiled_ms"]
    return result


# --8<-- [end:measure]


# --8<-- [start:cuda-graph]
def cuda_graph_ms(step) -> tuple[float | None, str]:
    """step() replayed from one CUDA graph: the same kernels, launched by the GPU with no Python and no
    per-kernel launch from the CPU. Its median ms, or None and the reason when the step can't be captured.

    A step that waits for the GPU (.item(), a data-dependent shape) can't be captured; the sync check
    finds that before capturing, so a failed capture never leaves the CUDA context in a bad state.
    """
    torch.cuda.set_sync_debug_mode("error")
    try:
        step()
    except RuntimeError as error:
        return None, f"not captured: the step synchronizes with the CPU ({str(error).splitlines()[0][:80]})"
    finally:
        torch.cuda.set_sync_debug_mode("default")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm-up on a side stream, as capturing requires
        for _ in range(2):
            step()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    replay_ms = compile_tools.timing_ms(graph.replay)["median"]
    del graph
    torch.cuda.empty_cache()
    return replay_ms, "replayed from a CUDA graph"


# --8<-- [end:cuda-graph]


def release(*objects) -> None:
    """Forget a model between two measurements: Dynamo's compiled code, Python objects, cached GPU memory."""
    del objects
    torch._dynamo.reset()
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


# --8<-- [start:geomean]
def geomean(speedups) -> dict:
    """The geometric mean of speedups, with their spread: min, max and the geometric standard deviation.

    Speedups are ratios, so they average in log space: a 2x and a 0.5x cancel out to 1x.
    The geometric std is a factor: most speedups lie within geomean / gstd .. geomean * gstd.
    """
    logs = [math.log(s) for s in speedups]
    mean = sum(logs) / len(logs)
    std = math.sqrt(sum((x - mean) ** 2 for x in logs) / len(logs))
    return {
        "geomean": math.exp(mean),
        "gstd": math.exp(std),
        "min": min(speedups),
        "max": max(speedups),
        "n": len(logs),
    }


# --8<-- [end:geomean]


def print_table(rows: list[dict]) -> None:
    """One line per model: times (median of rounds), speedup, compile time, memory, and the profile's totals."""
    gpu = "eager_call_gb" in rows[0]
    header = f"{'model':<14}{'eager ms':>10}{'compiled ms':>13}{'speedup':>9}{'compile s':>11}{'graphs':>8}"
    if gpu:
        header += f"{'call GB e/c':>14}{'kernels e/c':>14}{'GPU ms e/c':>15}"
    print(header)
    for r in rows:
        line = (
            f"{r['name']:<14}{r['eager_ms']:>10.2f}{r['compiled_ms']:>13.2f}{r['speedup']:>8.2f}x"
            f"{r['compile_s']:>11.1f}{r['graphs']:>8}"
        )
        if gpu:
            line += f"{r['eager_call_gb']:>7.1f}/{r['compiled_call_gb']:<6.1f}"
            line += f"{r['eager_launches']:>7}/{r['compiled_launches']:<6}"
            line += f"{r['eager_busy_ms']:>8.2f}/{r['compiled_busy_ms']:<6.2f}"
        print(line)
    print("range of the round medians, ms:  " + ";  ".join(
        f"{r['name']} {r['eager_range_ms'][0]:.2f}-{r['eager_range_ms'][1]:.2f} / "
        f"{r['compiled_range_ms'][0]:.2f}-{r['compiled_range_ms'][1]:.2f}" for r in rows))  # fmt: skip


# --8<-- [start:attribution]
def host_share(r: dict, side: str) -> float:
    """The share of a call's wall-clock time in which the GPU had no kernel running (on a CPU: no op)."""
    return max(0.0, 1 - r[f"{side}_busy_ms"] / r[f"{side}_ms"])


def print_attributions(rows: list[dict]) -> None:
    """For each model, where the speedup came from, in the profile's numbers: GPU work against launches.

    "GPU work" is the busy-time ratio, the speedup if only the kernels' time counted; "idle" is the share
    of the call in which the GPU waited for the CPU. The categories are the largest changes of GPU time.
    """
    for r in rows:
        unit = "GPU" if r["device"] == "cuda" else "CPU"
        eager, compiled = r["eager_categories"], r["compiled_categories"]
        change = {key: compiled.get(key, 0.0) - eager.get(key, 0.0) for key in eager.keys() | compiled.keys()}
        largest = sorted((key for key in change if abs(change[key]) >= 0.05), key=lambda k: -abs(change[k]))[:3]
        changes = ", ".join(f"{key} {change[key]:+.2f}" for key in largest)
        busy, idle = (r["eager_busy_ms"], r["compiled_busy_ms"]), (host_share(r, "eager"), host_share(r, "compiled"))
        print(f"{r['name']:<14}{r['speedup']:>5.2f}x  {unit} work {busy[0] / busy[1]:.2f}x ({busy[0]:.2f} -> "
              f"{busy[1]:.2f} ms), {unit} idle {idle[0]:.0%} -> {idle[1]:.0%}, "
              f"launches {r['eager_launches']} -> {r['compiled_launches']}")  # fmt: skip
        print(f"{'':<21}largest changes, ms: {changes}")


# --8<-- [end:attribution]


# --8<-- [start:draw]
def draw_speedups(data: dict):
    """A horizontal bar per model (compiled speedup over eager), with the geomean and the 1x line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = data["models"]
    names = [r["name"] for r in rows]
    speedups = [r["speedup"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 0.4 * len(rows) + 1.4))
    colors = ["#1f77b4" if s >= 1.05 else "#d62728" for s in speedups]
    bars = ax.barh(names, speedups, color=colors)
    ax.bar_label(bars, labels=[f"{s:.2f}x" for s in speedups], padding=3, color="black", fontsize=9)
    ax.invert_yaxis()
    ax.axvline(1.0, color="black", linewidth=1)
    g = data["geomean"]
    ax.axvline(g["geomean"], color="#2ca02c", linestyle="--", label=f"geomean {g['geomean']:.2f}x")
    ax.set_xlim(0, max(speedups + [1.0]) * 1.2)
    ax.set_xlabel(f"speedup of torch.compile over eager, {data['mode']} (higher is better)", color="black")
    ax.barh([], [], color="#d62728", label="below 1.05x")
    ax.legend(loc="lower right", frameon=False, labelcolor="black")
    ax.tick_params(colors="black")
    for spine in ax.spines.values():
        spine.set_color("black")
    fig.tight_layout()
    return fig


# --8<-- [end:draw]
