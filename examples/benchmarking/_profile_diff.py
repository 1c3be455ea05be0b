"""Eager against compiled, kernel by kernel: where one call's GPU time went, and which line launched it.

`profile_step(step)` runs a step under torch.profiler and files every GPU kernel under a category a
reader knows (library GEMM or convolution with its input dtype, SDPA attention with its backend,
Inductor's generated Triton kernels, ATen's own elementwise/copy/norm kernels, other), with the
line that launched it. `print_diff(eager, compiled)` prints the two side by side per call, the
change per category (largest first), and the kernels above a small share of GPU time.
`print_sources(compiled, graphs)` follows the largest compiled kernels back through Inductor's
wrapper (`call()`) and the FX graph to the model's source line.

Import it from an example of this chapter (`import _profile_diff`), or copy it next to your code:
it needs nothing but torch.
"""

import functools
import linecache
import re
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field

import torch

# --8<-- [start:categories]
GEMM = "GEMM/conv"
ATTENTION = "attention"
TRITON = "Inductor Triton"
ATEN = "ATen elementwise/copy/norm"
OTHER = "other"

# ATen ops whose kernels are library matrix products or convolutions (cuBLAS, cuBLASLt, cuDNN).
GEMM_OPS = {
    "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm", "aten::_addmm_activation",
    "aten::_scaled_mm", "aten::cudnn_convolution", "aten::cudnn_convolution_transpose",
    "aten::_convolution", "aten::convolution", "aten::convolution_backward",
}  # fmt: skip
# The ATen ops behind F.scaled_dot_product_attention, forward and backward, name the backend it chose.
ATTENTION_BACKENDS = (("flash", "flash"), ("efficient", "memory-efficient"), ("cudnn", "cuDNN"), ("math", "math"))
DTYPES = {"c10::BFloat16": "bf16", "c10::Half": "fp16", "float": "fp32", "double": "fp64"}
TRITON_KINDS = {"poi": "pointwise", "red": "reduction", "per": "persistent reduction", "tem": "template"}


def classify(kernel: str, ops: list, dtypes: dict[int, list[str]]) -> tuple[str, str]:
    """(category, detail) of one GPU kernel, from its name and the ATen ops that launched it (innermost first)."""
    if kernel.startswith("triton_"):
        return TRITON, TRITON_KINDS.get(kernel.split("_")[1], "")
    names = [op.name for op in ops]
    attention = next((name for name in names if "attention" in name and name.startswith("aten::")), None)
    if attention:
        return ATTENTION, next((label for key, label in ATTENTION_BACKENDS if key in attention), attention)
    gemm = next((op for op in ops if op.name in GEMM_OPS), None)
    if gemm is not None:
        return GEMM, gemm_dtype(gemm.name, dtypes.get(gemm.id, []))
    if names and names[0].startswith("aten::"):
        return ATEN, ""
    return OTHER, ""


def gemm_dtype(op_name: str, input_dtypes: list[str]) -> str:
    """The input dtype of a matrix product as the profiler recorded it; fp32 products may run in TF32."""
    dtype = next((DTYPES.get(d, d) for d in input_dtypes if d), "?")
    if dtype == "fp32":
        conv = "conv" in op_name
        tf32 = torch.backends.cudnn.allow_tf32 if conv else torch.backends.cuda.matmul.allow_tf32
        return "tf32" if tf32 else "fp32"
    return dtype


# --8<-- [end:categories]


@dataclass
class Launch:
    """One kernel launched in the profiled calls, and where it came from."""

    kernel: str
    category: str
    detail: str
    us: float
    # Eager: the innermost nn.Module and Python function outside torch that ran the op.
    # Compiled: "<output code file>:<line>", the line of Inductor's call() that launched the kernel.
    site: str


@dataclass
class StepProfile:
    device: str  # "cuda": GPU kernels; "cpu": CPU ops by self time, where the GPU categories do not apply
    calls: int
    launches: list[Launch] = field(default_factory=list)

    def per_call_ms(self, launches=None) -> float:
        return sum(launch.us for launch in (self.launches if launches is None else launches)) / 1e3 / self.calls

    def by_category(self) -> dict[str, float]:
        """GPU ms per call for each 'category (detail)'."""
        totals = defaultdict(float)
        for launch in self.launches:
            totals[label(launch)] += launch.us / 1e3 / self.calls
        return dict(totals)

    def by_kernel(self) -> dict[str, list[Launch]]:
        kernels = defaultdict(list)
        for launch in self.launches:
            kernels[launch.kernel].append(launch)
        return kernels


def label(launch: Launch) -> str:
    return f"{launch.category} ({launch.detail})" if launch.detail else launch.category


# How the profiler (with_stack=True) names a Python function: "path(first line): function". It records
# the function, not the line inside it, so compiled kernels are placed by their call() line instead.
FRAME = re.compile(r"^(.*)\((\d+)\): (.*)$")


def python_frames(ops) -> list[tuple[str, str, str]]:
    """(path, line, function) of the Python functions around the ops, innermost first, torch's left out.

    Depending on the torch version, the profiler files them as parent events of the ops or in their `stack`.
    """
    entries = [op.name for op in ops] + [entry for op in ops for entry in (op.stack or [])]
    frames = [match.groups() for match in map(FRAME.match, entries) if match]
    return [frame for frame in frames if not re.match(r"(.*/)?torch/", frame[0]) and "_profile_diff" not in frame[0]]


def user_function(ops) -> str:
    """The innermost nn.Module and Python function outside torch among the ops that launched a kernel."""
    module = next((op.name.removeprefix("nn.Module: ") for op in ops if op.name.startswith("nn.Module: ")), "")
    function = next((f"{path}:{line} {name}()" for path, line, name in python_frames(ops)), "")
    return " in ".join(part for part in (module, function) if part)


def output_code_files() -> list[str]:
    """The files of Inductor's output code loaded in this process."""
    from torch._inductor.codecache import PyCodeCache

    modules = list(getattr(PyCodeCache, "modules", [])) + list(getattr(PyCodeCache, "modules_no_attr", {}).values())
    return [module.__file__ for module in modules if getattr(module, "__file__", None)]


def output_code_call(ops) -> tuple[str, str | None]:
    """The frame of Inductor's call() around the ops, and the file of that output code; else ("", None)."""
    for path, line, name in python_frames(ops):
        if name == "call":
            file = next((f for f in output_code_files() if f.endswith("/" + path.rsplit("/", 1)[-1])), None)
            if file:
                return f"{path}:{line}", file
    return "", None


@functools.cache
def call_lines(path: str) -> list[tuple[int, str]]:
    """(line number, text) of each line of call() in Inductor's output code; none in a kernel's own module."""
    lines = linecache.getlines(path)
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("def call(")), None)
    if start is None:
        return []
    indent = len(lines[start]) - len(lines[start].lstrip())  # a module function, or a method of a Runner
    body = []
    for number, line in enumerate(lines[start + 1 :], start + 2):
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append((number, line.rstrip()))
    return body


def triton_call_site(kernel: str) -> str:
    """ "file:line" of the call() line that runs an Inductor Triton kernel, found by the kernel's name."""
    for file in output_code_files():
        line = next((n for n, text in call_lines(file) if f"{kernel}.run(" in text), None)
        if line:
            return f"{file}:{line}"
    return ""


def call_site(path: str, kernel: str, op_name: str, occurrence: int) -> int | None:
    """The line of call() that launched a kernel: a Triton kernel by its name, a library kernel as
    the n-th call of its ATen op (extern_kernels.mm, torch.ops.aten._scaled_dot_product_...)."""
    lines = call_lines(path)
    if kernel.startswith("triton_"):
        return next((n for n, text in lines if f"{kernel}.run(" in text), None)
    op = re.escape(op_name.removeprefix("aten::"))
    launch = re.compile(rf"^\s*(\w+ = )?(extern_kernels\.{op}\(|torch\.ops\.aten\.{op}\.)")
    calls = [n for n, text in lines if launch.match(text)]
    # Every run of call() makes the same calls in the same order, so the n-th op of a kind is its n-th line.
    return calls[occurrence % len(calls)] if calls else None


# --8<-- [start:profile-step]
def profile_step(step, calls: int = 3) -> StepProfile:
    """Run step() `calls` times under torch.profiler (after one warm-up call); every GPU kernel, filed.

    Without a GPU, every CPU op's self time instead, with the category "CPU".
    """
    from torch.profiler import ProfilerActivity, profile

    gpu = torch.cuda.is_available()
    synchronize = torch.cuda.synchronize if gpu else (lambda: None)
    step()
    synchronize()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
    with profile(activities=activities, record_shapes=True, with_stack=True) as prof:
        for _ in range(calls):
            step()
        synchronize()
    result = StepProfile("cuda" if gpu else "cpu", calls)
    # The input dtypes of each op, by the id the profiler's events share (record_shapes=True keeps them).
    dtypes = {event.correlation_id(): list(event.dtypes()) for event in prof.profiler.kineto_results.events()}
    occurrences = defaultdict(int)  # (call() function, ATen op) -> how many ran so far
    for event in sorted(prof.events(), key=lambda e: e.time_range.start):
        if event.device_type != torch.autograd.DeviceType.CPU:
            continue
        ops, parent = [], event
        while parent is not None:  # the op that launched the kernel, then the ops that called it
            ops.append(parent)
            parent = parent.cpu_parent
        kernels = [(k.name, k.duration) for k in event.kernels]
        if not gpu:  # ATen ops and Inductor's C++ kernels (called through a function named "kernel")
            name = "Inductor C++ kernel" if event.name == "<built-in function kernel>" else event.name
            kernels = [(name, event.self_cpu_time_total)] if name.startswith("aten::") or "C++" in name else []
        if not kernels:
            continue
        call, path = output_code_call(ops)
        if path is not None:
            occurrence = occurrences[(call, event.name)]
            occurrences[(call, event.name)] += 1
        for name, us in kernels:
            category, detail = classify(name, ops, dtypes) if gpu else ("CPU", "")
            if path is not None:
                line = call_site(path, name, event.name, occurrence)
                site = f"{path}:{line}" if line else path
            elif name.startswith("triton_"):  # no Python frames recorded: Inductor's kernels are found by name
                site = triton_call_site(name)
            else:
                site = user_function(ops)
            result.launches.append(Launch(name, category, detail, us, site))
    return result


# --8<-- [end:profile-step]


def short(name: str, width: int = 60) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."


# --8<-- [start:print-diff]
def print_diff(eager: StepProfile, compiled: StepProfile, *, wall_ms=None, min_share: float = 0.03) -> dict:
    """Eager and compiled side by side, per call; returns the change in GPU ms per category."""
    unit = "GPU" if eager.device == "cuda" else "CPU"
    if unit == "CPU":
        print("No GPU: these are CPU ops by self time; the GPU categories (GEMM, attention, Triton) do not apply.")
    rows = [(f"{unit} busy time, ms", eager.per_call_ms(), compiled.per_call_ms())]
    if wall_ms:
        rows.append(("wall-clock time, ms", *wall_ms))
    rows.append((f"{'kernel launches' if unit == 'GPU' else 'ops'}", len(eager.launches) / eager.calls,
                 len(compiled.launches) / compiled.calls))  # fmt: skip
    print(f"{'per call':<44}{'eager':>9}{'compiled':>10}{'change':>9}")
    for name, e, c in rows:
        print(f"{name:<44}{e:>9.2f}{c:>10.2f}{c - e:>+9.2f}")
    eager_categories, compiled_categories = eager.by_category(), compiled.by_category()
    change = {
        key: compiled_categories.get(key, 0.0) - eager_categories.get(key, 0.0)
        for key in eager_categories.keys() | compiled_categories.keys()
    }
    print(f"{unit} ms per call, by category (largest change first)")
    for key in sorted(change, key=lambda k: -abs(change[k])):
        e, c = eager_categories.get(key, 0.0), compiled_categories.get(key, 0.0)
        print(f"  {key:<42}{e:>9.2f}{c:>10.2f}{change[key]:>+9.2f}")
    for name, run in (("eager", eager), ("compiled", compiled)):
        total = run.per_call_ms()
        print(f"{name}: above {100 * min_share:.0f}% of its {unit} time (share, ms and launches per call, category)")
        kernels = sorted(run.by_kernel().items(), key=lambda item: -run.per_call_ms(item[1]))
        for kernel, launches in kernels:
            ms = run.per_call_ms(launches)
            if ms < min_share * total:
                break
            print(f"  {100 * ms / total:>3.0f}% {ms:>6.2f} {len(launches) / run.calls:>5.0f}x  "
                  f"{label(launches[0]):<28} {short(kernel)}")  # fmt: skip
    return change


# --8<-- [end:print-diff]


def graph_stack_traces(graphs) -> dict[str, str]:
    """FX node name -> the last frame of its stack trace (the model's line), for Dynamo's graphs."""
    traces = {}
    for graph in graphs:
        for node in graph.graph.nodes:
            trace = node.meta.get("stack_trace")
            if trace:
                frames = re.findall(r'File "([^"]+)", line (\d+), in \w+\n\s*(.*)', trace)
                if frames:
                    path, line, code = frames[-1]
                    traces[node.name] = f"{path}:{line}  {code.strip()}"
    return traces


def wrapper_context(site: str) -> tuple[str, list[str], list[str]]:
    """For a line of Inductor's call(): its text, and the source nodes and ATen ops of the comment above it."""
    path, _, line = site.rpartition(":")
    if not line.isdigit():
        return "", [], []
    number = int(line)
    call = linecache.getline(path, number).strip()
    for previous in range(number - 1, max(number - 6, 0), -1):
        text = linecache.getline(path, previous)
        match = re.search(r"Source Nodes: \[(.*?)\], Original ATen: \[(.*?)\]", text)
        if match:
            return call, [n for n in match.group(1).split(", ") if n], [a for a in match.group(2).split(", ") if a]
        if ".run(" in text or "extern_kernels." in text or "torch.ops." in text:
            break  # the comment above belongs to the previous kernel
    return call, [], []


# --8<-- [start:print-sources]
def print_sources(compiled: StepProfile, graphs, *, top: int = 5) -> list[dict]:
    """The `top` compiled kernels by GPU time: the wrapper line that launched them, the FX nodes and
    ATen ops behind it, and the model's source lines that Dynamo recorded for those nodes."""
    traces = graph_stack_traces(graphs)
    total = compiled.per_call_ms()
    sites = defaultdict(list)  # (kernel, line of call()) -> launches
    for launch in compiled.launches:
        sites[(launch.kernel, launch.site)].append(launch)
    found = []
    for (kernel, site), launches in sorted(sites.items(), key=lambda item: -compiled.per_call_ms(item[1]))[:top]:
        ms = compiled.per_call_ms(launches)
        print(f"{100 * ms / total:.0f}% of the compiled time, {ms:.2f} ms per call: {short(kernel, 70)}")
        print(f"  category   {label(launches[0])}")
        call, nodes, aten = wrapper_context(site)
        if call:
            print(f"  call()     line {site.rpartition(':')[2]}: {short(call, 100)}")
        else:
            print(f"  launched   {site or '(no Python frame)'}")
        if nodes:
            print(f"  FX nodes   {', '.join(nodes)}  (ATen: {', '.join(aten)})")
        lines = sorted({traces[n] for n in nodes if n in traces})
        for source in lines:
            print(f"  source     {source}")
        found.append({"kernel": kernel, "ms": ms, "site": site, "nodes": nodes, "aten": aten, "sources": lines})
    return found


# --8<-- [end:print-sources]


class InductorKeepingGraphs:
    """A Dynamo backend: Inductor with the options of `torch.compile(mode=mode)`, keeping every FX graph.

    `torch.compile(model, backend=InductorKeepingGraphs())` compiles as `torch.compile(model)` does;
    `len(backend.graphs)` counts the graphs, and their nodes carry the model's source lines.
    """

    def __init__(self, mode: str = "default"):
        self.mode = mode
        self.graphs: list[torch.fx.GraphModule] = []

    def __call__(self, graph_module, example_inputs):
        from torch._inductor.compile_fx import compile_fx

        self.graphs.append(graph_module)
        return compile_fx(graph_module, example_inputs, config_patches=torch._inductor.list_mode_options(self.mode))


# --8<-- [start:compare]
def inference_step(module, inputs: dict, dtype=torch.bfloat16):
    """One inference call of a model taking keyword arguments, under no_grad and autocast(dtype)."""

    def step():
        with torch.no_grad(), torch.autocast(inputs_device(inputs), dtype=dtype):
            return module(**inputs)

    return step


def inputs_device(inputs: dict) -> str:
    return next(value.device.type for value in inputs.values() if isinstance(value, torch.Tensor))


def time_call(step, synchronize) -> tuple[float, float]:
    """(host ms, wall ms) of one call from an idle GPU: the time until step() returns, which is Python
    and the launches of its kernels, and the time until the GPU has finished them."""
    synchronize()
    start = time.perf_counter()
    step()
    returned = time.perf_counter()
    synchronize()
    return (returned - start) * 1e3, (time.perf_counter() - start) * 1e3


def paired_times(steps: dict, *, pairs: int, block_ms: float) -> dict:
    """Host and wall ms of every call, in pairs: each pair times a block of calls of one side, then a block
    of the other (the order alternates), so that both sides of a pair see the same speed of the host."""
    synchronize = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    for step in steps.values():  # warm-up, and an estimate of one call's time, to size the blocks
        time_call(step, synchronize)
    calls = max(1, round(block_ms / max(time_call(step, synchronize)[1] for step in steps.values())))
    times = {name: [] for name in steps}  # name -> one list per pair of (host ms, wall ms), one per call
    names = list(steps)
    for pair in range(pairs):
        for name in names if pair % 2 == 0 else names[::-1]:
            times[name].append([time_call(steps[name], synchronize) for _ in range(calls)])
    return times


def compare(eager_step, compiled_step, *, pairs: int = 21, block_ms: float = 20.0) -> dict:
    """Eager against compiled, paired: the speedup is the median of the per-pair ratios of wall-clock time,
    with the 10th and 90th percentiles of those ratios; for each side, the median wall-clock and host
    (enqueue) ms of a call, the GPU's busy time from a profile, and which of the two bounds the call."""
    steps = {"eager": eager_step, "compiled": compiled_step}
    times = paired_times(steps, pairs=pairs, block_ms=block_ms)
    medians = {name: [statistics.median(wall for _, wall in block) for block in times[name]] for name in steps}
    ratios = sorted(e / c for e, c in zip(medians["eager"], medians["compiled"], strict=True))
    deciles = statistics.quantiles(ratios, n=10)
    result = {"speedup": statistics.median(ratios), "speedup_range": (deciles[0], deciles[-1]), "pairs": pairs}
    for name, step in steps.items():
        profile = profile_step(step)
        calls = [call for block in times[name] for call in block]
        side = {
            "ms": statistics.median(wall for _, wall in calls),
            "range_ms": (min(medians[name]), max(medians[name])),
            "host_ms": statistics.median(host for host, _ in calls),
            "busy_ms": profile.per_call_ms(),
            "launches": round(len(profile.launches) / profile.calls),
            "categories": profile.by_category(),
            "profile": profile,
        }
        result[name] = {**side, "bound": bound(side, profile.device)}
    return result


def bound(side: dict, device: str) -> str:
    """What sets a call's wall-clock time: the GPU's work (busy most of the call), the host's launches
    (still enqueueing for most of it), or both in turn. On a CPU every op runs as it is called."""
    if device != "cuda":
        return "CPU"
    if side["busy_ms"] >= 0.8 * side["ms"]:
        return "GPU-bound"
    return "launch-bound" if side["host_ms"] >= 0.8 * side["ms"] else "mixed"


# --8<-- [end:compare]
