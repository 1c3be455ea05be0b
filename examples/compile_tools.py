"""Helpers shared by the examples: the device, the environment stamp, TORCH_LOGS capture and
Inductor's generated code. Import it from any example: `import compile_tools`.
"""

import datetime
import importlib.metadata
import io
import logging
import platform
import re
from collections.abc import Iterator
from contextlib import contextmanager

import torch


def device() -> torch.device:
    """The GPU when there is one, else the CPU: every example runs on both unless it says otherwise."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def environment_stamp() -> dict[str, str]:
    """The versions that produced an output; dis output and generated code depend on each of them."""
    try:
        triton = importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        triton = "not installed"
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton,
        "cuda": torch.version.cuda or "none",
        "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else "none",
        "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
    }


def print_stamp() -> None:
    print(" · ".join(f"{key} {value}" for key, value in environment_stamp().items()))


@contextmanager
def captured_logs(**artifacts: bool) -> Iterator[io.StringIO]:
    """Capture what TORCH_LOGS would print for these artifacts, e.g. `captured_logs(graph_code=True)`.

    torch's artifact loggers do not propagate to "torch", so a handler goes on each registered
    logger; `set_logs()` on exit puts logging back as it was.
    """
    from torch._logging._internal import log_registry

    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.setLevel(logging.DEBUG)
    torch._logging.set_logs(**artifacts)
    loggers = [logging.getLogger(name) for name in log_registry.get_log_qnames()]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield buffer
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
        torch._logging.set_logs()


class GraphRecorder:
    """A Dynamo backend that keeps every FX graph it is given and runs it unchanged.

    `len(recorder.graphs)` counts compiles; `recorder.runs` counts calls that ran a compiled graph
    (a call that falls back to eager Python does not).
    """

    def __init__(self):
        self.graphs: list[torch.fx.GraphModule] = []
        self.runs = 0

    def __call__(self, graph_module, example_inputs):
        self.graphs.append(graph_module)

        def run(*args):
            self.runs += 1
            return graph_module.forward(*args)

        return run


def print_lines(text: str, keep, why_cut: str) -> None:
    """Print the lines of `text` for which `keep(line)` is true, then one line saying how many were cut and why."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    kept = [line for line in lines if keep(line)]
    print("\n".join(kept))
    if len(kept) < len(lines):
        print(f"... {len(lines) - len(kept)} lines cut: {why_cut}")


def generated_code(compiled_fn, *args) -> list[str]:
    """Every source file Inductor wrote while running `compiled_fn(*args)` (the wrapper and its kernels)."""
    from torch._inductor.utils import run_and_get_code

    _, sources = run_and_get_code(compiled_fn, *args)
    return sources


def kernel_names(source: str) -> list[str]:
    """Names of the generated kernels in Inductor's output code: Triton on GPU, C++ on CPU."""
    triton = re.findall(r"^def (triton_\w+)\(", source, re.M)
    cpp = re.findall(r"^(cpp_fused_\w+) = async_compile\.cpp", source, re.M)
    return triton + cpp


def lines_between(text: str, start: str, stop: str | None = None) -> str:
    """The lines of `text` from the first line containing `start` up to (not including) one containing `stop`."""
    lines = text.splitlines()
    begin = next(i for i, line in enumerate(lines) if start in line)
    end = next((i for i in range(begin + 1, len(lines)) if stop and stop in lines[i]), len(lines))
    return "\n".join(lines[begin:end])


def kernel_source(source: str, name: str) -> str:
    """The source of one generated kernel, as Inductor embedded it in its output code."""
    match = re.search(rf"^{name} = async_compile\.\w+\(.*?'''\n?(.*?)'''", source, re.M | re.S)
    if not match:
        raise ValueError(f"no kernel named {name} in this output code")
    return match.group(1).strip("\n")


def timing_ms(fn, *args) -> dict[str, float]:
    """Median and 20th/80th percentiles of fn(*args) in milliseconds, after warm-up.

    On a GPU, triton's do_bench times with CUDA events and flushes the L2 cache between runs;
    on a CPU, torch.utils.benchmark repeats the call in blocks until half a second has passed.
    """
    if torch.cuda.is_available():
        import triton.testing

        p20, median, p80 = triton.testing.do_bench(lambda: fn(*args), warmup=100, rep=500, quantiles=[0.2, 0.5, 0.8])
        return {"median": median, "p20": p20, "p80": p80}
    import statistics

    from torch.utils import benchmark

    fn(*args)
    # Timer runs on one thread unless told otherwise; the thread count is part of Dynamo's guards,
    # so timing on another count than the warm-up would recompile inside the measurement.
    timer = benchmark.Timer("fn(*args)", globals={"fn": fn, "args": args}, num_threads=torch.get_num_threads())
    times = []
    while len(times) < 5:  # blocked_autorange may return a single long block; quantiles need several
        times += [t * 1e3 for t in timer.blocked_autorange(min_run_time=0.5).times]
    quintiles = statistics.quantiles(times, n=5)
    return {"median": statistics.median(times), "p20": quintiles[0], "p80": quintiles[3]}


def gpu_kernel_launches(fn, *args) -> int:
    """How many GPU kernels one call of fn(*args) launches, counted by torch.profiler (after a warm-up call)."""
    from torch.profiler import ProfilerActivity, profile

    fn(*args)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn(*args)
        torch.cuda.synchronize()
    return sum(event.count for event in prof.key_averages() if event.device_type == torch.autograd.DeviceType.CUDA)
