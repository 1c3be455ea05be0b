"""A small, reusable harness: eager against torch.compile on one model, inference or a training step.

Import it from an example of this chapter (`from benchmarking import _harness`), or copy it next to
your own model: it needs torch and `compile_tools` only (matplotlib for `draw_speedups`).
"""

import gc
import math
import time
from collections import defaultdict

import torch

from benchmarking import _profile_diff
import compile_tools


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
    comparison = _profile_diff.compare(steps["eager"], steps["compiled"])
    result["speedup"], result["speedup_range"] = comparison["speedup"], comparison["speedup_range"]
    for name in steps:
        side = comparison[name]
        for key in ("ms", "range_ms", "host_ms", "busy_ms", "launches", "categories", "bound"):
            result[f"{name}_{key}"] = side[key]
        if device.type == "cuda":
            replay = replay_from_cuda_graph(steps[name], side["profile"])
            for key, value in replay.items():
                result[f"{name}_graph_{key}"] = value
    del steps  # and with them the optimizers' state
    gc.collect()
    result["relative_error"] = relative_error(outputs["compiled"], outputs["eager"])
    result["output_finite"] = bool(torch.isfinite(outputs["compiled"].float()).all())
    result["loss"] = outputs["eager"].item() if train else None
    result["compile_s"] = result["compiled_first_call_s"]
    return result


# --8<-- [end:measure]


# --8<-- [start:cuda-graph]
def replay_from_cuda_graph(step, step_profile) -> dict:
    """step() replayed from one CUDA graph: the kernels of one call, launched by the GPU with no Python and
    no per-kernel launch from the CPU. Returns the replay's median ms and its GPU busy time, the kernels the
    replay ran that the step does not (code can take another path while a graph is captured), and a note;
    ms is None, with the reason in the note, when the step can't be captured.

    A step that waits for the GPU (.item(), a data-dependent shape) can't be captured; the sync check
    finds that before capturing, so a failed capture never leaves the CUDA context in a bad state.
    """
    torch.cuda.set_sync_debug_mode("error")
    try:
        step()
    except RuntimeError as error:
        note = f"not captured: the step synchronizes with the CPU ({str(error).splitlines()[0][:80]})"
        return {"ms": None, "busy_ms": None, "new_kernels": [], "note": note}
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
    kernels = replayed_kernels_ms(graph.replay)
    del graph
    torch.cuda.empty_cache()
    stepped = {launch.kernel for launch in step_profile.launches}
    new = sorted(((name, ms) for name, ms in kernels.items() if name not in stepped), key=lambda item: -item[1])
    note = "replayed from a CUDA graph" + (", with kernels the step does not run" if new else "")
    return {"ms": replay_ms, "busy_ms": sum(kernels.values()), "new_kernels": new[:3], "note": note}


def replayed_kernels_ms(replay, calls: int = 3) -> dict[str, float]:
    """GPU ms per replay of each kernel in a CUDA graph, from torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    replay()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            replay()
        torch.cuda.synchronize()
    kernels = defaultdict(float)
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            kernels[event.name] += event.time_range.elapsed_us() / 1e3 / calls
    return dict(kernels)


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


# --8<-- [start:table]
def print_table(rows: list[dict]) -> None:
    """Two tables, one line per model. Time per call: the paired speedup with the 10th-90th percentiles of
    its pairs, and for each side the wall-clock ms of a call, the host's part of it (Python and launches),
    the GPU's busy ms, and which of the two sets the pace. What a call does: compile time, graphs, kernels,
    memory, and each step replayed from a CUDA graph."""
    unit = "GPU" if rows[0]["device"] == "cuda" else "CPU"
    print(f"{'':<14}{'speedup':>8}{'p10-p90':>12}  {'eager: ms':>9}{'host':>7}{unit:>7}  {'':<13}"
          f"{'compiled: ms':>12}{'host':>7}{unit:>7}")  # fmt: skip
    for r in rows:
        low, high = r["speedup_range"]
        sides = "".join(
            f"{r[f'{side}_ms']:>{width}.2f}{r[f'{side}_host_ms']:>7.2f}{r[f'{side}_busy_ms']:>7.2f}  "
            f"{r[f'{side}_bound']:<13}"
            for side, width in (("eager", 9), ("compiled", 12))
        )
        print(f"{r['name']:<14}{r['speedup']:>7.2f}x{low:>6.2f}-{high:<5.2f}  {sides}".rstrip())
    print()
    header = f"{'':<14}{'compile s':>10}{'graphs':>8}{'kernels e/c':>14}"
    if unit == "GPU":
        header += f"{'call GB e/c':>14}{'replay ms e/c':>16}"
    print(header)
    for r in rows:
        line = f"{r['name']:<14}{r['compile_s']:>10.1f}{r['graphs']:>8}"
        line += f"{r['eager_launches']:>7}/{r['compiled_launches']:<6}"
        if unit == "GPU":
            line += f"{r['eager_call_gb']:>7.1f}/{r['compiled_call_gb']:<6.1f}"
            line += f"{replay_cell(r, 'eager'):>9}/{replay_cell(r, 'compiled'):<7}"
        print(line.rstrip())
    for r in rows:
        for side in ("eager", "compiled") if unit == "GPU" else ():
            if r[f"{side}_graph_new_kernels"]:
                kernels = ", ".join(f"{name[:50]} {ms:.2f} ms" for name, ms in r[f"{side}_graph_new_kernels"])
                print(f"* {r['name']} {side}, replayed: GPU busy {r[f'{side}_graph_busy_ms']:.2f} ms against "
                      f"{r[f'{side}_busy_ms']:.2f} ms stepped; kernels the step does not run: {kernels}")  # fmt: skip


def replay_cell(r: dict, side: str) -> str:
    """A replay's ms, starred when the replay ran kernels the step does not (the footnote names them)."""
    ms = r[f"{side}_graph_ms"]
    return "-" if ms is None else f"{ms:.2f}" + ("*" if r[f"{side}_graph_new_kernels"] else "")


# --8<-- [end:table]


# --8<-- [start:attribution]
def host_share(r: dict, side: str) -> float:
    """The share of a call's wall-clock time in which the GPU had no kernel running (on a CPU: no op)."""
    return max(0.0, 1 - r[f"{side}_busy_ms"] / r[f"{side}_ms"])


def gpu_work_ratio(r: dict) -> float:
    """Eager's busy time over compiled's: the speedup if only the kernels' time counted."""
    return r["eager_busy_ms"] / r["compiled_busy_ms"]


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
        print(f"{r['name']:<14}{r['speedup']:>5.2f}x  {unit} work {gpu_work_ratio(r):.2f}x ({busy[0]:.2f} -> "
              f"{busy[1]:.2f} ms), {unit} idle {idle[0]:.0%} -> {idle[1]:.0%}, "
              f"launches {r['eager_launches']} -> {r['compiled_launches']}")  # fmt: skip
        print(f"{'':<21}largest changes, ms: {changes}")


# --8<-- [end:attribution]


# --8<-- [start:draw]
def draw_speedups(data: dict):
    """A horizontal bar per model (compiled speedup over eager) with the 10th-90th percentiles of its pairs,
    a dot for its GPU-work ratio (the speedup if only the kernels' time counted), the geomean and the 1x line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = data["models"]
    names = [r["name"] for r in rows]
    speedups = [r["speedup"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 0.4 * len(rows) + 1.7))
    colors = ["#1f77b4" if s >= 1.05 else "#d62728" for s in speedups]
    below = [r["speedup"] - r["speedup_range"][0] for r in rows]
    above = [r["speedup_range"][1] - r["speedup"] for r in rows]
    bars = ax.barh(names, speedups, color=colors, xerr=[below, above], error_kw={"ecolor": "black", "capsize": 3})
    ax.bar_label(bars, labels=[f"{s:.2f}x" for s in speedups], padding=8, color="black", fontsize=9)
    work = [gpu_work_ratio(r) for r in rows]
    ax.plot(work, names, "D", color="#ff7f0e", markeredgecolor="black", label="work ratio (busy time)")
    ax.invert_yaxis()
    ax.axvline(1.0, color="black", linewidth=1)
    g = data["geomean"]
    ax.axvline(g["geomean"], color="#2ca02c", linestyle="--", label=f"geomean {g['geomean']:.2f}x")
    ax.set_xlim(0, max(speedups + work + [r["speedup_range"][1] for r in rows]) * 1.25)
    ax.set_xlabel(f"speedup of torch.compile over eager, {data['mode']} (higher is better)\n"
                  "bar: paired wall clock, whiskers: 10th-90th percentile of the pairs", color="black")  # fmt: skip
    ax.add_patch(matplotlib.patches.Rectangle((0, 0), 0, 0, color="#d62728", label="below 1.05x"))
    ax.legend(loc="lower right", frameon=False, labelcolor="black")
    ax.tick_params(colors="black")
    for spine in ax.spines.values():
        spine.set_color("black")
    fig.tight_layout()
    return fig


# --8<-- [end:draw]
