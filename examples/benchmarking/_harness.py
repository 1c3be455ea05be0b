"""A small, reusable harness: eager against torch.compile on one model, inference or a training step.

Import it from an example of this chapter (`from benchmarking import _harness`), or copy it next to
your own model: it needs torch and `compile_tools` only (matplotlib for `draw_speedups`).
"""

import gc
import math
import time

import torch

import compile_tools

# --8<-- [start:matmul-kernels]
# Substrings (lower case) of the GPU kernels that do matrix products: cuBLAS/cuBLASLt GEMMs
# (ampere_*gemm*, sm90_xmma_gemm_*, nvjet_* on Hopper, cutlass_*), cuDNN convolutions (implicit
# GEMM, fprop/dgrad/wgrad), the fused attention kernels of SDPA (flash, memory-efficient, cuDNN)
# and Inductor's own Triton GEMM templates (triton_tem_*). The other Triton kernels Inductor
# generates are pointwise or reductions, whatever their name says (triton_poi_fused_convolution_0
# adds a convolution's bias).
MATMUL_KERNEL_MARKERS = (
    "gemm", "gemv", "cublas", "cutlass", "nvjet", "xmma", "sm90_", "sm80_", "s16816", "s1688",
    "splitk", "cudnn", "convolve", "fprop", "dgrad", "wgrad", "depthwise",
    "flash", "fmha", "attention", "sdpa",
)  # fmt: skip


def is_matmul_kernel(name: str) -> bool:
    if name.startswith("triton_"):
        return name.startswith("triton_tem_")
    return "Kernel2" in name or any(marker in name.lower() for marker in MATMUL_KERNEL_MARKERS)


# --8<-- [end:matmul-kernels]


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


def gpu_profile(step) -> dict:
    """Kernels launched by one call of step(), and the share of GPU time spent in matmul kernels."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    kernels = [e for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA]
    total_us = sum(e.self_device_time_total for e in kernels)
    matmul_us = sum(e.self_device_time_total for e in kernels if is_matmul_kernel(e.key))
    return {
        "kernels": sum(e.count for e in kernels),
        "gpu_ms": total_us / 1e3,
        "matmul_share": matmul_us / total_us if total_us else 0.0,
    }


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
    compiled_model = torch.compile(model, mode=mode)
    snapshot = {k: v.detach().clone() for k, v in model.state_dict().items()} if train else None

    def make_step(module):
        if not train:

            def step():
                with torch.no_grad(), torch.autocast(device.type, dtype=dtype):
                    return module(*args, **kwargs)

            return step
        adamw = {"fused": True} if device.type == "cuda" else {"foreach": True}
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr, **adamw)

        def step():
            with torch.autocast(device.type, dtype=dtype):
                loss = loss_fn(module(*args, **kwargs))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            return loss.detach()

        return step

    result = {"mode": "training step" if train else "inference", "compile_mode": mode}
    for name, module in (("eager", model), ("compiled", compiled_model)):
        if train and name == "compiled":
            model.load_state_dict(snapshot)  # the compiled step starts from the weights the eager one saw
        step = make_step(module)
        counters = torch._dynamo.utils.counters
        graphs_before, breaks_before = counters["stats"]["unique_graphs"], dict(counters["graph_break"])
        _sync(device)
        start = time.perf_counter()
        first_output = first_tensor(step()).clone()  # for the compiled model, this call compiles
        _sync(device)
        result[f"{name}_first_call_s"] = time.perf_counter() - start
        result[f"{name}_output"] = first_output
        if name == "compiled":
            result["graphs"] = counters["stats"]["unique_graphs"] - graphs_before
            result["graph_breaks"] = [  # Dynamo's reason for each new graph break, first line
                reason.strip().splitlines()[0][:160]
                for reason, count in counters["graph_break"].items()
                if count > breaks_before.get(reason, 0) and reason.strip()
            ]
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats()
            step()
            torch.cuda.synchronize()
            result[f"{name}_peak_gb"] = torch.cuda.max_memory_allocated() / 1e9
        timing = compile_tools.timing_ms(step)
        result[f"{name}_ms"], result[f"{name}_p20_ms"], result[f"{name}_p80_ms"] = (
            timing["median"], timing["p20"], timing["p80"])  # fmt: skip
        if device.type == "cuda":
            for key, value in gpu_profile(step).items():
                result[f"{name}_{key}"] = value
        del step  # and with it the eager step's optimizer state
        gc.collect()
    eager_output, compiled_output = result.pop("eager_output"), result.pop("compiled_output")
    result["relative_error"] = relative_error(compiled_output, eager_output)
    result["output_finite"] = bool(torch.isfinite(compiled_output.float()).all())
    result["loss"] = eager_output.item() if train else None
    result["compile_s"] = result["compiled_first_call_s"]
    result["speedup"] = result["eager_ms"] / result["compiled_ms"]
    return result


# --8<-- [end:measure]


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
    """One line per model: times, speedup, compile time, peak memory and the profiler's evidence."""
    gpu = "eager_kernels" in rows[0]
    header = f"{'model':<14}{'eager ms':>10}{'compiled ms':>13}{'speedup':>9}{'compile s':>11}{'graphs':>8}"
    if gpu:
        header += f"{'peak GB e/c':>14}{'kernels e/c':>14}{'matmul % e/c':>14}"
    print(header)
    for r in rows:
        line = (
            f"{r['name']:<14}{r['eager_ms']:>10.2f}{r['compiled_ms']:>13.2f}{r['speedup']:>8.2f}x"
            f"{r['compile_s']:>11.1f}{r['graphs']:>8}"
        )
        if gpu:
            line += f"{r['eager_peak_gb']:>7.1f}/{r['compiled_peak_gb']:<6.1f}"
            line += f"{r['eager_kernels']:>7}/{r['compiled_kernels']:<6}"
            line += f"{100 * r['eager_matmul_share']:>7.0f}/{100 * r['compiled_matmul_share']:<6.0f}"
        print(line)


def likely_reasons(r: dict) -> list[str]:
    """What the profiler's numbers for one model say about a small speedup (rules of thumb, not proof)."""
    reasons = []
    if r["graphs"] > 1:
        reasons.append(f"{r['graphs']} graphs: graph breaks leave Python, and unfused code, between them")
    if "eager_matmul_share" in r and r["eager_matmul_share"] > 0.6:
        reasons.append(
            "most eager GPU time is in library matmul/conv/attention kernels, which compiling leaves as they are"
        )
    if "eager_kernels" in r and r["compiled_kernels"] > 0.7 * r["eager_kernels"]:
        reasons.append("the compiled model launches nearly as many kernels: little was fused")
    if "eager_gpu_ms" in r and r["eager_gpu_ms"] < 0.7 * r["eager_ms"]:
        reasons.append("the GPU is idle for much of an eager call: the time goes to Python and kernel launches")
    if "compiled_gpu_ms" in r and r["compiled_gpu_ms"] > r["eager_gpu_ms"]:
        reasons.append(
            "the compiled kernels take more GPU time than eager's: a generated kernel is slower than the library's"
        )
    return reasons or ["none of the rules of thumb applies: profile the two versions kernel by kernel"]


# --8<-- [start:outliers]
def print_outliers(rows: list[dict], below: float = 1.05) -> list[dict]:
    """For each model that gained less than `below`, the profiler's evidence of where its GPU time went."""
    outliers = [r for r in rows if r["speedup"] < below]
    for r in outliers:
        print(f"{r['name']}: {r['speedup']:.2f}x")
        for reason in r.get("graph_breaks", []):
            print(f"  graph break: {reason}")
        if "eager_kernels" in r:
            print(f"  GPU kernels per call: eager {r['eager_kernels']}, compiled {r['compiled_kernels']}")
            print(f"  share of GPU time in matmul/conv/attention kernels: eager {100 * r['eager_matmul_share']:.0f}%, "
                  f"compiled {100 * r['compiled_matmul_share']:.0f}%")  # fmt: skip
            print(f"  GPU busy time per call: eager {r['eager_gpu_ms']:.2f} ms, compiled {r['compiled_gpu_ms']:.2f} ms "
                  f"(wall clock {r['eager_ms']:.2f} / {r['compiled_ms']:.2f} ms)")  # fmt: skip
        for reason in likely_reasons(r):
            print(f"  -> {reason}")
    print(f"{len(outliers)} of {len(rows)} models below {below:.2f}x")
    return outliers


# --8<-- [end:outliers]


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
