"""Graph breaks, a catalogue: what breaks a graph, how torch reports it, how to fix it, what it costs.

Run it as it is: `python examples/dynamo/graph_breaks.py` (on a GPU if torch sees one).
"""

import contextlib
import io
import re
import statistics
import time
from collections import Counter

import numpy as np
import torch
import torch.nn.functional as F

import compile_tools

torch.manual_seed(0)
device = compile_tools.device()


# --8<-- [start:diagnose]
def diagnose(fn, *args):
    """Dynamo's own account of fn(*args), then a strict compile (fullgraph=True) of the same function."""
    torch._dynamo.reset()
    report = torch._dynamo.explain(fn)(*args)
    print(f"explain: {report.graph_count} graphs, {report.graph_break_count} graph break(s)")
    for reason in report.break_reasons:
        print(f"  at `{reason.user_stack[-1].line}`: {reason.reason.splitlines()[0]}")
    error = strict_compile_error(fn, *args)
    if error is None:
        print("fullgraph=True: compiles")
    else:
        message = "\n".join("  " + re.sub(r" at 0x[0-9a-f]+", "", line.strip()) for line in error.splitlines())
        first_line = message.splitlines()[0]
        print("fullgraph=True: raises")
        compile_tools.print_lines(message, keep=lambda line: line == first_line or line.startswith("  Explanation:"),
                                  why_cut="hints, developer context, user stack")
    return report, error


def strict_compile_error(fn, *args):
    """None if fn compiles into one graph, else the error message torch.compile(fullgraph=True) raised."""
    torch._dynamo.reset()
    try:
        torch.compile(fn, fullgraph=True, backend="eager")(*args)
    except torch._dynamo.exc.TorchDynamoException as error:
        return f"{type(error).__name__}: {error}"
    return None


def check_fix(broken, fixed, *args):
    """The fix gives one graph, compiles under fullgraph=True and computes what the broken version computed."""
    torch._dynamo.reset()
    report = torch._dynamo.explain(fixed)(*args)
    error = strict_compile_error(fixed, *args)
    torch._dynamo.reset()
    same = torch.allclose(torch.compile(fixed, fullgraph=True, backend="eager")(*args), broken(*args))
    print(f"fixed: {report.graph_count} graph, {report.graph_break_count} graph breaks; "
          f"fullgraph=True {'compiles' if error is None else 'raises'}; same result as before: {same}")
    return report, error, same
# --8<-- [end:diagnose]


def assert_fixed(outcome):
    report, error, same = outcome
    assert (report.graph_count, report.graph_break_count) == (1, 0), "the fix leaves one graph, no break"
    assert error is None, error
    assert same, "the fix computes the same thing"


x = torch.randn(8, 16, device=device)

# --8<-- [start:print-break]
def scale_and_log(x):
    y = torch.relu(x) * 2
    print("scaled a batch of", y.shape[0])
    return y + 1


report, error = diagnose(scale_and_log, x)
# --8<-- [end:print-break]
assert (report.graph_count, report.graph_break_count) == (2, 1), "print splits the function in two graphs"
assert error is not None, "fullgraph=True refuses the print"
assert "print" in report.break_reasons[0].reason

# --8<-- [start:print-fix]
with torch._dynamo.config.patch(reorderable_logging_functions={print}):
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        outcome = check_fix(scale_and_log, scale_and_log, x)
print(printed.getvalue().splitlines()[-1])
print(f"(and print still ran: {printed.getvalue().count('scaled a batch')} times over the 4 calls check_fix made)")
# --8<-- [end:print-fix]
assert_fixed(outcome)
assert printed.getvalue().count("scaled a batch of") == 4, "the reordered print runs on every call"


# --8<-- [start:branch-break]
def double_or_shift(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


report, error = diagnose(double_or_shift, x)
# --8<-- [end:branch-break]
assert (report.graph_count, report.graph_break_count) == (2, 1), "the branch on a tensor splits the graph"
assert error is not None and "Data-dependent branching" in error, "fullgraph=True refuses a data-dependent branch"
assert "generic_jump" in report.break_reasons[0].reason, "explain names the jump handler of symbolic_convert.py"

# --8<-- [start:branch-fix]
def double_or_shift_cond(x):
    return torch.cond(x.sum() > 0, lambda t: t * 2, lambda t: t - 1, (x,))


outcome = check_fix(double_or_shift, double_or_shift_cond, x)
torch._dynamo.reset()
recorder = compile_tools.GraphRecorder()  # keeps each graph it is given, counts the calls that ran one
compiled_cond = torch.compile(double_or_shift_cond, fullgraph=True, backend=recorder)
both_branches = all(torch.allclose(compiled_cond(t), double_or_shift(t)) for t in (x.abs(), -x.abs()))
print(f"both branches match the original: {both_branches}; "
      f"{len(recorder.graphs)} graph compiled, {recorder.runs} calls ran it")
cond_nodes = [node.format_node() for node in recorder.graphs[0].graph.nodes
              if node.op == "call_function" and "cond" in str(node.target)]
print("the branch is one node of the graph:", *cond_nodes, sep="\n  ")
# --8<-- [end:branch-fix]
assert_fixed(outcome)
assert both_branches and len(recorder.graphs) == 1 and recorder.runs == 2, "one graph runs both branches"
assert len(cond_nodes) == 1, cond_nodes


# --8<-- [start:item-break]
def scale_by_total(x):
    total = x.abs().sum().item()
    return x / total


report, error = diagnose(scale_by_total, x)
# --8<-- [end:item-break]
assert (report.graph_count, report.graph_break_count) == (2, 1), ".item() splits the function in two graphs"
assert "item" in report.break_reasons[0].reason
assert error is None, "under fullgraph=True, Dynamo captures .item() by itself"

# --8<-- [start:item-fix]
def scale_by_total_tensor(x):
    return x / x.abs().sum()  # the total stays a 0-d tensor, on the device


outcome = check_fix(scale_by_total, scale_by_total_tensor, x)
# --8<-- [end:item-fix]
assert_fixed(outcome)

# --8<-- [start:item-capture]
with torch._dynamo.config.patch(capture_scalar_outputs=True):
    captured = torch._dynamo.explain(scale_by_total)(x)
    item_lines = [line.strip() for line in captured.graphs[0].print_readable(print_output=False).splitlines()
                  if "item" in line and not line.strip().startswith("#")]
    print(f"capture_scalar_outputs=True: {captured.graph_count} graph, {captured.graph_break_count} graph breaks")
    print(*item_lines, sep="\n")

    def scale_if_positive(x):
        total = x.sum().item()
        if total > 0:  # a Python decision on the captured value
            return x / total
        return x

    branch_error = strict_compile_error(scale_if_positive, x)
    print("branching on the captured value under fullgraph=True:")
    print(" ", branch_error.splitlines()[0] if branch_error else "compiles")
# --8<-- [end:item-capture]
assert (captured.graph_count, captured.graph_break_count) == (1, 0), "capture_scalar_outputs keeps one graph"
assert item_lines and "Sym(" in item_lines[0], "the value is a symbol in the graph"
assert branch_error is not None, "a Python branch on an unbacked value can't be traced"


# --8<-- [start:tolist-break]
def scale_rows(x, scales):
    x = torch.relu(x)
    factors = [2.0 * s for s in scales.tolist()]
    return x * torch.tensor(factors, device=x.device).unsqueeze(1)


scales = torch.rand(8, device=device)
report, error = diagnose(scale_rows, x, scales)

torch._dynamo.reset()
recorder = compile_tools.GraphRecorder()
compiled_scale_rows = torch.compile(scale_rows, backend=recorder)
for call in range(1, 4):
    compiled_scale_rows(x, torch.rand(8, device=device))
    print(f"call {call} with new scales: {len(recorder.graphs)} graphs compiled so far")
constants = [line.strip()[:100] + " ..." for line in recorder.graphs[1].code.splitlines() if "tensor(" in line]
print("the graph after the break, first version:", *constants, sep="\n  ")
# --8<-- [end:tolist-break]
assert (report.graph_count, report.graph_break_count) == (2, 1), ".tolist() splits the function in two graphs"
assert error is not None, "fullgraph=True refuses .tolist() on a float tensor"
assert constants, "the first graph after the break holds the values as constants"
assert len(recorder.graphs) == 3, "call 2 recompiled the code after the break, call 3 reused it"
inputs_per_graph = [sum(node.op == "placeholder" for node in g.graph.nodes) for g in recorder.graphs]
assert inputs_per_graph[2] > inputs_per_graph[1], "the recompiled graph takes the values as inputs"

# --8<-- [start:tolist-fix]
def scale_rows_tensor(x, scales):
    return torch.relu(x) * (2.0 * scales).unsqueeze(1)


outcome = check_fix(scale_rows, scale_rows_tensor, x, scales)
# --8<-- [end:tolist-fix]
assert_fixed(outcome)


# --8<-- [start:builtin-break]
timestamps = []


def two_layers(x, w):
    h = torch.relu(x @ w)
    timestamps.append(time.perf_counter())  # a timing probe between the layers
    return torch.relu(h @ w)


w = torch.randn(16, 16, device=device)
report, error = diagnose(two_layers, x, w)
# --8<-- [end:builtin-break]
assert (report.graph_count, report.graph_break_count) == (2, 1), "the C function splits the graph"
assert error is not None, "fullgraph=True refuses the C function"

# --8<-- [start:builtin-recompiles]
torch._dynamo.reset()
recorder = compile_tools.GraphRecorder()
compiled_two_layers = torch.compile(two_layers, backend=recorder)
graphs_run = []
with compile_tools.captured_logs(recompiles=True) as log:
    for _ in range(12):
        runs_before = recorder.runs
        compiled_two_layers(x, w)
        graphs_run.append(recorder.runs - runs_before)


def frame_of(graph_module):
    """Which frame a graph belongs to: Dynamo's frame number, and the function named in its source positions."""
    traces = [node.meta["stack_trace"] for node in graph_module.graph.nodes if node.meta.get("stack_trace")]
    name = re.findall(r", in (\w+)", traces[0])[-1] if traces else "(an empty graph)"
    return f"frame {graph_module.meta['dynamo_compile_id'].frame_id}, {name}"


graphs_per_frame = Counter(frame_of(graph) for graph in recorder.graphs)
reasons = [line.split("#")[0].strip() for line in log.getvalue().splitlines()
           if re.match(r"\s*- \d+/\d+: .*timestamps", line)]
print(f"12 calls: {len(recorder.graphs)} graphs compiled "
      f"(recompile_limit is {torch._dynamo.config.recompile_limit})")
for function, count in graphs_per_frame.items():
    print(f"  {count} graphs for {function}")
print("a guard that failed:", reasons[-1])
print("compiled graphs run by each call:", *graphs_run)
# --8<-- [end:builtin-recompiles]
limit = torch._dynamo.config.recompile_limit
assert graphs_per_frame["frame 0, two_layers"] == limit, "the function recompiles up to the limit"
assert sorted(graphs_per_frame.values())[-2] >= limit - 1, "so does a resume function (2.11 counts one fewer)"
assert reasons, "the guard that fails is on the list the probe appends to"
assert all(graphs_run[:limit]) and graphs_run[limit:] == [0] * (12 - limit), "past the limit: plain Python"


# --8<-- [start:builtin-fix]
def two_layers_unprobed(x, w):
    return torch.relu(torch.relu(x @ w) @ w)


outcome = check_fix(two_layers, two_layers_unprobed, x, w)
# --8<-- [end:builtin-fix]
assert_fixed(outcome)


# --8<-- [start:disable-break]
def clip_outliers_numpy(t):
    """Stands for a library function Dynamo can't see into: it leaves torch for NumPy and comes back."""
    a = t.detach().cpu().numpy()
    low, high = np.percentile(a, [5, 95])
    return torch.from_numpy(np.clip(a, low, high)).to(t.device, t.dtype)


clip_outliers = torch.compiler.disable(clip_outliers_numpy)  # what a library does for such code


def robust_layers(x, w):
    h = clip_outliers(x @ w)
    return torch.relu(h @ w)


report, error = diagnose(robust_layers, x, w)
# --8<-- [end:disable-break]
assert (report.graph_count, report.graph_break_count) == (2, 1), "the disabled call splits the graph"
assert error is not None, "fullgraph=True refuses a disabled function"


# --8<-- [start:disable-fix]
@torch.library.custom_op("graph_breaks::clip_outliers", mutates_args=())
def clip_outliers_op(t: torch.Tensor) -> torch.Tensor:
    return clip_outliers_numpy(t)  # the same body, run as it is at run time


@clip_outliers_op.register_fake
def _(t):
    return torch.empty_like(t)  # what Dynamo needs to trace past it: the output's shape, dtype and device


def robust_layers_op(x, w):
    h = clip_outliers_op(x @ w)
    return torch.relu(h @ w)


outcome = check_fix(robust_layers, robust_layers_op, x, w)
op_graph = torch._dynamo.explain(robust_layers_op)(x, w).graphs[0]
print("the library call is one node of the graph:",
      *[node.format_node() for node in op_graph.graph.nodes if "clip_outliers" in str(node.target)], sep="\n  ")
# --8<-- [end:disable-fix]
assert_fixed(outcome)


# --8<-- [start:cost-function]
# Small, as in small-batch inference: the per-call costs of a break are what this measures.
batch, width = (64, 256) if device.type == "cuda" else (8, 64)
w1 = torch.randn(width, 4 * width, device=device) / width**0.5
b1 = torch.randn(4 * width, device=device)
w2 = torch.randn(4 * width, width, device=device) / (4 * width) ** 0.5
b2 = torch.randn(width, device=device)


@torch.compiler.disable
def probe():
    timestamps.append(time.perf_counter())  # the probe from above, kept out of Dynamo's sight


def mlp_block(x):
    h = F.gelu(x @ w1 + b1)
    probe()
    h = F.layer_norm(h, (4 * width,))
    return x + torch.tanh(h @ w2 + b2)


def mlp_block_fixed(x):
    h = F.gelu(x @ w1 + b1)
    h = F.layer_norm(h, (4 * width,))
    return x + torch.tanh(h @ w2 + b2)


inputs = torch.randn(batch, width, device=device)
# --8<-- [end:cost-function]

def gpu_kernels_per_call(fn, *args) -> list[str]:
    """The name of each GPU kernel one call of fn(*args) runs, in the order they started, from torch.profiler
    (after a warm-up call): what compile_tools.gpu_kernel_launches counts, listed."""
    from torch.profiler import ProfilerActivity, profile

    fn(*args)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn(*args)
        torch.cuda.synchronize()
    ran = [event for event in prof.events() if event.device_type == torch.autograd.DeviceType.CUDA]
    ran.sort(key=lambda event: event.time_range.start)
    return [re.sub(r"<.*", "", event.name.split("(")[0])[:48] for event in ran]  # without template arguments


# --8<-- [start:cost]
results = {}
for name, fn in (("with the break", mlp_block), ("fixed", mlp_block_fixed)):
    torch._dynamo.reset()
    graph_count = torch._dynamo.explain(fn)(inputs).graph_count
    torch._dynamo.reset()
    compiled = torch.compile(fn)  # the default backend, Inductor
    sources = compile_tools.generated_code(compiled, inputs)
    kernels = [kernel for source in sources for kernel in compile_tools.kernel_names(source)]
    results[name] = {"graphs": graph_count, "kernels": kernels, "compiled": compiled, "medians": []}
    if device.type == "cuda":
        results[name]["launched"] = gpu_kernels_per_call(compiled, inputs)
rounds = 7
with compile_tools.captured_logs(recompiles=True) as log:
    for _ in range(rounds):  # alternating, so that a burst of load on the machine hits both alike
        for result in results.values():
            result["medians"].append(compile_tools.timing_ms(result["compiled"], inputs)["median"] * 1e3)
timestamps.clear()
broken, fixed = results["with the break"], results["fixed"]
for name, result in results.items():
    print(f"{name}: {result['graphs']} graph(s), {len(result['kernels'])} generated kernels {result['kernels']}")
    if "launched" in result:
        print(f"  GPU kernels launched per call: {len(result['launched'])}: {', '.join(result['launched'])}")
print(f"time per call in us, {rounds} rounds alternating between the two (the median of each):")
ratios = [b / f for b, f in zip(broken["medians"], fixed["medians"], strict=True)]
print(f"  with the break: {', '.join(f'{value:6.1f}' for value in broken['medians'])}")
print(f"           fixed: {', '.join(f'{value:6.1f}' for value in fixed['medians'])}")
print(f"           ratio: {', '.join(f'{value:6.2f}' for value in ratios)}")
added = statistics.median(broken["medians"]) - statistics.median(fixed["medians"])
ratio = statistics.median(ratios)
print(f"on {device.type}, {batch}x{width} inputs: the break adds {added:.1f} us per call, "
      f"{ratio:.2f}x the time of the fixed version (medians over the rounds)")
fastest = {name: min(result["medians"]) for name, result in results.items()}
print(f"fastest round of each: with the break {fastest['with the break']:.1f} us, fixed {fastest['fixed']:.1f} us")
# --8<-- [end:cost]
assert (broken["graphs"], fixed["graphs"]) == (2, 1)
assert "Recompiling" not in log.getvalue(), "the disabled probe causes no recompiles while timing"
assert len(fixed["kernels"]) < len(broken["kernels"]), "the fix fuses across the former break"
assert any("gelu" in k and "layer_norm" in k for k in fixed["kernels"]), "gelu and layer norm in one kernel"
assert not any("gelu" in k and "layer_norm" in k for k in broken["kernels"]), "the break keeps them apart"
if device.type == "cuda":
    assert len(fixed["launched"]) < len(broken["launched"]), "one kernel launch fewer per call"
    not_generated = [len(result["launched"]) - len(result["kernels"]) for result in (broken, fixed)]
    assert not_generated[0] == not_generated[1], "the kernels Inductor did not generate: as many either way"
    assert ratio > 1.2, "small inputs: the break's per-call overhead shows on the GPU"
else:
    # Another process on the machine slows whole rounds, and can make most of them mislead; it cannot make
    # a round faster, so each side's fastest round is the one nothing got in the way of.
    assert fastest["with the break"] > fastest["fixed"], "the break adds time per call (direction only, on the CPU)"
