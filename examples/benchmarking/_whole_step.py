"""Compiling more than the model: the optimizer step, and the whole training step under compiled autograd.

`measure(name)` trains one zoo model (the zoo's batch, bf16 autocast, AdamW) five ways, from all eager to
the whole step compiled, and `print_report` prints what each way costs: its first call (the compiling),
its time per step paired against compiling only the model, the host's and the GPU's part of that time,
its kernels, and the GPU time by category. The optimizer step is also timed alone, three ways.
"""

import re
import statistics
import time
from collections import Counter
from dataclasses import dataclass

import torch

from benchmarking import _harness, _profile_diff, _zoo

LR = 1e-5
BASELINE = "model compiled"
# --8<-- [start:ways]
WAYS = {
    "eager": "nothing compiled; foreach AdamW",
    "model compiled": "torch.compile(model); foreach AdamW, eager",
    "model, fused AdamW": "torch.compile(model); AdamW(fused=True), eager: the zoo's setting",
    "model + optimizer": "torch.compile(model) and torch.compile(optimizer.step); foreach AdamW",
    "whole step": "torch.compile(step) with compiled_autograd on: forward, backward and optimizer",
}


def training_step(model, inputs: dict, optimizer_step, zero_grad) -> torch.Tensor:
    """One step, the same code in every way: only what is passed in as model and optimizer_step changes."""
    with torch.autocast("cuda" if torch.cuda.is_available() else "cpu", dtype=torch.bfloat16):
        loss = _harness.default_loss(model(**inputs))
    loss.backward()
    optimizer_step()
    zero_grad(set_to_none=True)
    return loss.detach()


@dataclass
class Ways:
    steps: dict  # way -> step(), each with its own AdamW over the model's parameters
    optimizer_steps: dict  # the three optimizers the optimizer-alone timing compares, the compiled one among them
    compiled_model: torch.nn.Module
    whole_step_graphs: (
        list  # the FX graphs the whole step runs, the optimizer's first: Dynamo's and compiled autograd's
    )


def make_steps(model, inputs: dict) -> Ways:
    """The five ways of a training step, and the optimizer steps alone."""
    params = list(model.parameters())
    foreach = [torch.optim.AdamW(params, lr=LR, foreach=True) for _ in range(3)]
    fused = torch.optim.AdamW(params, lr=LR, fused=True, capturable=True)
    compiled_model = torch.compile(model)
    # One backend object for the optimizer step and the whole step, which share foreach[2]: Dynamo then serves
    # the whole step the optimizer graph compiled for "model + optimizer" instead of compiling it again.
    keeping_graphs = _profile_diff.InductorKeepingGraphs()  # Inductor as torch.compile runs it, keeping the graphs
    compiled_optimizer_step = torch.compile(foreach[2].step, backend=keeping_graphs)

    def step(module, optimizer, optimizer_step=None):
        return lambda: training_step(module, inputs, optimizer_step or optimizer.step, optimizer.zero_grad)

    whole = step(model, foreach[2])
    # compiled_autograd is read when torch.compile wraps the function: its calls then compile their backward
    with torch._dynamo.config.patch(compiled_autograd=True):
        compiled_whole = torch.compile(whole, backend=keeping_graphs)
    steps = {
        "eager": step(model, foreach[0]),
        "model compiled": step(compiled_model, foreach[1]),
        "model, fused AdamW": step(compiled_model, fused),
        "model + optimizer": step(compiled_model, foreach[2], compiled_optimizer_step),
        "whole step": compiled_whole,
    }
    optimizer_steps = {"foreach, eager": foreach[1].step, "fused, eager": fused.step,
                       "foreach, compiled": compiled_optimizer_step}  # fmt: skip
    return Ways(steps, optimizer_steps, compiled_model, keeping_graphs.graphs)


# --8<-- [end:ways]


def graphs_compiled() -> int:
    """Graphs Dynamo compiled so far in this process, compiled autograd's among them (Dynamo compiles those too)."""
    return torch._dynamo.utils.counters["stats"]["unique_graphs"]


def graph_breaks_since(before: dict) -> list[str]:
    """The first line of each graph-break reason Dynamo counted since `before` (a copy of its counter)."""
    now = torch._dynamo.utils.counters["graph_break"]
    return [reason.strip().splitlines()[0][:120] for reason in now if now[reason] > before.get(reason, 0)]


def guard_failures() -> dict:
    """How many guard failures Dynamo has recorded for each function so far (each made it compile again)."""
    return {code: len(reasons) for code, reasons in torch._dynamo.utils.guard_failures.items()}


def recompile_reasons_since(before: dict, parameter_names: list[str]) -> list[str]:
    """The guard that failed for each compile again since `before`, a parameter's index given its name."""
    reasons = []
    for code, failures in torch._dynamo.utils.guard_failures.items():
        for failure in failures[before.get(code, 0) :]:
            guard = failure.split(": ", 1)[-1].splitlines()[0].split("  #")[0].strip()  # without its source comment
            index = re.search(r"\['params'\]\[(\d+)\]", guard)
            reasons.append(guard + (f"  ({parameter_names[int(index[1])]})" if index else ""))
    return reasons


def synchronize() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


# --8<-- [start:measure]
def measure(name: str, device: torch.device, *, pairs: int = 21, block_ms: float = 20.0, **config_changes) -> dict:
    """Each way's first call (from the same weights), then every way timed in interleaved pairs and profiled,
    then the optimizer step alone, three ways."""
    model = _zoo.build(name, device, **config_changes).train()
    inputs = _zoo.input_maker(name, model, device, train=True)()
    snapshot = {key: value.detach().clone() for key, value in model.state_dict().items()}
    parameter_names = [parameter_name for parameter_name, _ in model.named_parameters()]
    ways = make_steps(model, inputs)
    steps = ways.steps
    result = {"name": name, "params": sum(p.numel() for p in model.parameters()), "tensors": len(parameter_names),
              "ways": {way: {} for way in steps}}  # fmt: skip
    for way, step in steps.items():
        model.load_state_dict(snapshot)  # each first step starts from the same weights
        graphs_before, breaks_before = graphs_compiled(), dict(torch._dynamo.utils.counters["graph_break"])
        failures_before = guard_failures()
        synchronize()
        start = time.perf_counter()
        loss = step().item()
        result["ways"][way].update(
            first_call_s=time.perf_counter() - start,
            first_loss=loss,
            graphs=graphs_compiled() - graphs_before,
            graph_breaks=graph_breaks_since(breaks_before),
            recompiled_because=recompile_reasons_since(failures_before, parameter_names),
        )
    graphs_before = graphs_compiled()
    times = _profile_diff.paired_times(steps, pairs=pairs, block_ms=block_ms)
    block_medians = {way: [statistics.median(wall for _, wall in block) for block in times[way]] for way in steps}
    for way, step in steps.items():
        ratios = [b / w for b, w in zip(block_medians[BASELINE], block_medians[way], strict=True)]
        deciles = statistics.quantiles(ratios, n=10)
        result["ways"][way].update(time_and_profile(step, times[way]), against_baseline=statistics.median(ratios),
                                   against_baseline_range=(deciles[0], deciles[-1]))  # fmt: skip
    modules = {"eager": model, "model compiled": ways.compiled_model}
    result["without_gradient"] = {way: without_gradient(model, module, inputs) for way, module in modules.items()}
    # the optimizer alone, on the gradients the compiled model leaves (its compiled step was traced with them)
    backward(ways.compiled_model, inputs)
    times = _profile_diff.paired_times(ways.optimizer_steps, pairs=pairs, block_ms=block_ms)
    result["optimizer_alone"] = {way: time_and_profile(step, times[way]) for way, step in ways.optimizer_steps.items()}
    result["whole_step_graphs"] = [graph_summary(graph) for graph in ways.whole_step_graphs]
    model.zero_grad(set_to_none=True)
    result["recompiled_while_timed"] = graphs_compiled() - graphs_before
    return result


def backward(module, inputs: dict) -> None:
    """A training step's forward and backward pass, with no optimizer: the gradients stay in .grad."""
    training_step(module, inputs, optimizer_step=lambda: None, zero_grad=lambda set_to_none: None)


def without_gradient(model, module, inputs: dict) -> list[str]:
    """The model's parameters that one backward pass through `module` (the model, or it compiled) left at
    None, as eager autograd does for a parameter the loss does not depend on."""
    backward(module, inputs)
    names = [name for name, parameter in model.named_parameters() if parameter.grad is None]
    model.zero_grad(set_to_none=True)
    return names


def graph_summary(graph: torch.fx.GraphModule) -> str:
    """How many operations a graph holds, and its three most frequent."""
    targets = Counter(
        getattr(node.target, "__name__", str(node.target)) for node in graph.graph.nodes if node.op.startswith("call")
    )
    common = ", ".join(f"{name} x{count}" for name, count in targets.most_common(3))
    return f"{sum(targets.values())} operations ({common})"


def time_and_profile(step, blocks: list) -> dict:
    """A way's median wall-clock and host ms per call over its timed blocks, and from a profile of three more
    calls its GPU busy ms, kernels and GPU ms by category."""
    calls = [call for block in blocks for call in block]
    profile = _profile_diff.profile_step(step)
    return {
        "ms": statistics.median(wall for _, wall in calls),
        "host_ms": statistics.median(host for host, _ in calls),
        "busy_ms": profile.per_call_ms(),
        "kernels": round(len(profile.launches) / profile.calls),
        "categories": profile.by_category(),
    }


# --8<-- [end:measure]


# --8<-- [start:report]
def print_report(result: dict) -> None:
    """The five ways of a training step, then the optimizer step alone, then the GPU time by category."""
    ways, unit = result["ways"], "GPU" if torch.cuda.is_available() else "CPU"
    for way, description in WAYS.items():
        print(f"{way:<20}{description}")
    print(f"{result['name']}: {result['params'] / 1e6:.1f} M parameters in {result['tensors']} tensors; "
          f"ms per step, median of {len(ways)}-way interleaved blocks")  # fmt: skip
    print(f"{'':<20}{'first call s':>13}{'graphs':>7}{'ms':>8}{'host ms':>9}{unit + ' busy':>10}{'kernels':>8}"
          f"{'vs model compiled (p10-p90)':>30}")  # fmt: skip
    for way, w in ways.items():
        low, high = w["against_baseline_range"]
        print(
            f"{way:<20}{w['first_call_s']:>13.1f}{w['graphs']:>7}{w['ms']:>8.2f}{w['host_ms']:>9.2f}"
            f"{w['busy_ms']:>10.2f}{w['kernels']:>8}{w['against_baseline']:>13.2f}x ({low:.2f}-{high:.2f})"
        )
    for way, w in ways.items():
        for reason in w["graph_breaks"]:
            print(f"{way}: graph break: {reason}")
        for reason in w["recompiled_because"]:
            print(f"{way}: compiled again because a guard failed: {reason}")
    print(
        "the whole step's graphs, in the order they were compiled (the first, the optimizer's, by model + optimizer):"
    )
    for number, summary in enumerate(result["whole_step_graphs"], start=1):
        print(f"  {number}. {summary}")
    for way, names in result["without_gradient"].items():
        print(f"after one backward pass, {way}: {len(names)} parameters without a gradient {names or ''}".rstrip())
    print(f"\nthe optimizer step alone ({result['tensors']} tensors):")
    print(f"{'':<20}{'ms':>8}{'host ms':>9}{unit + ' busy':>10}{'kernels':>8}")
    for way, o in result["optimizer_alone"].items():
        print(f"{way:<20}{o['ms']:>8.2f}{o['host_ms']:>9.2f}{o['busy_ms']:>10.2f}{o['kernels']:>8}")
    print(f"\n{unit} ms per step by category:")
    eager = ways["eager"]["categories"]
    categories = sorted({c for w in ways.values() for c in w["categories"]}, key=lambda c: -eager.get(c, 0.0))
    print(f"{'':<20}" + "".join(f"{way[:14]:>15}" for way in ways))
    for category in categories:
        print(f"{category[:20]:<20}" + "".join(f"{w['categories'].get(category, 0.0):>15.2f}" for w in ways.values()))


# --8<-- [end:report]


# --8<-- [start:check]
def check(result: dict) -> None:
    """What the page says of both models: the ways train alike, the timing compiled nothing, compiling the
    optimizer cuts its kernels and its GPU time, the fused optimizer costs the host least, and no way beats
    compiling the model alone by 1.3x."""
    ways, alone = result["ways"], result["optimizer_alone"]
    eager_loss = ways["eager"]["first_loss"]
    for way, w in ways.items():  # dropout draws other random numbers when compiled: the losses agree roughly
        assert abs(w["first_loss"] - eager_loss) <= 0.1 * abs(eager_loss), f"{way}: first loss {w['first_loss']}"
        assert w["against_baseline"] < 1.3, f"{way} is {w['against_baseline']:.2f}x as fast as {BASELINE}"
    assert result["recompiled_while_timed"] == 0, "a way compiled again while it was timed: its times include that"
    compiled, foreach = alone["foreach, compiled"], alone["foreach, eager"]
    assert compiled["kernels"] < foreach["kernels"], "compiling the optimizer kept every launch"
    assert compiled["busy_ms"] < foreach["busy_ms"], "compiling the optimizer did not cut its GPU time"
    fastest_host = min(alone, key=lambda way: alone[way]["host_ms"])
    assert fastest_host == "fused, eager", f"{fastest_host}, not the fused optimizer, is the cheapest on the host"


# --8<-- [end:check]
