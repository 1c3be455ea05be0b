"""Compiled autograd under DDP: the whole backward pass in one graph, with DDP's all-reduces inside it.

Run it as it is: `python examples/distributed/compiled_autograd.py`. Two ranks, each a Python process of
its own on this machine's CPU (this same file, started with the argument `rank`), train over gloo.
"""

# execdocs: devices=cpu

import copy
import math
import re
import sys
import time

import torch
from torch._inductor.compile_fx import compile_fx
from torch.nn.parallel import DistributedDataParallel as DDP

import compile_tools
from distributed import _ranks
from distributed._collectives_in_code import ALL_REDUCE, collectives, with_all_reduces
from distributed._mlp import MLP, WIDTH

started = time.perf_counter()
WORLD_SIZE, BATCH, BUCKET_CAP_MB, STEPS = 2, 32, 1, 3
WAYS = ("eager DDP", "DDPOptimizer", "compiled autograd")


# --8<-- [start:turn-on]
def configure(way: str) -> None:
    """The settings of one way; each way runs after torch._dynamo.reset()."""
    compiled_autograd = way == "compiled autograd"
    # DDP's own C++ reducer, with Dynamo splitting the graph at its buckets; or, for compiled autograd, DDP's
    # Python reducer, whose per-parameter hooks compiled autograd can trace into the backward graph
    torch._dynamo.config.optimize_ddp = "python_reducer" if compiled_autograd else "ddp_optimizer"
    torch._dynamo.config.compiled_autograd = compiled_autograd  # the backward of a compiled step is compiled too


def train_step(model, x):
    model(x).sum().backward()  # the backward pass inside the compiled function: compiled autograd captures it


# --8<-- [end:turn-on]


def inductor_keeping(graphs: list):
    """Inductor as a backend, keeping each graph Dynamo hands it in `graphs`."""

    def backend(gm, example_inputs):
        graphs.append(gm)
        return compile_fx(gm, example_inputs)

    return backend


def all_reduce_sizes(output_code: str) -> list[int]:
    """The number of elements each all-reduce in Inductor's code reduces, in the order the code issues them: the
    size of the buffer it is given, found where the code allocates it or views another buffer as it."""
    defined = {}
    for line in output_code.splitlines():
        allocation = r"\s+(buf\d+) = (?:empty_strided_\w+|reinterpret_tensor)\((?:buf\d+, )?\(([\d, ]+)\)"
        if match := re.match(allocation, line):
            defined[match[1]] = math.prod(int(d) for d in match[2].split(",") if d.strip())
        elif match := re.match(r"\s+(buf\d+) = (buf\d+); del", line):  # a buffer reused under a new name
            defined[match[1]] = defined.get(match[2])
    issued = [line.split(ALL_REDUCE)[1].split(",")[0] for line in output_code.splitlines() if ALL_REDUCE in line]
    return [defined.get(buffer) for buffer in issued]


def operations(graph) -> str:
    """The operations of one of Dynamo's graphs, by name, each once."""
    names = (
        node.target if isinstance(node.target, str) else getattr(node.target, "__name__", repr(node.target))
        for node in graph.graph.nodes
        if node.op.startswith("call")
    )
    return ", ".join(repr(name) if " " in name else name for name in dict.fromkeys(names))


def work(rank: int, world_size: int) -> dict:
    """On each rank: STEPS training steps each way; graphs, collectives, step times and gradients."""
    torch.manual_seed(0)
    base = MLP()
    x = torch.randn(BATCH, WIDTH, generator=torch.Generator().manual_seed(rank))
    results, gradients = {}, {}
    for way in WAYS:
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
        configure(way)
        graphs = []
        backend = inductor_keeping(graphs)

        model = DDP(copy.deepcopy(base), bucket_cap_mb=BUCKET_CAP_MB)
        step = train_step if way == "eager DDP" else torch.compile(train_step, backend=backend)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        seconds = []
        with compile_tools.captured_logs(output_code=True) as code:
            for _ in range(STEPS):
                t0 = time.perf_counter()
                step(model, x)
                if not gradients.get(way):
                    gradients[way] = [parameter.grad.clone() for parameter in model.parameters()]
                optimizer.step()
                optimizer.zero_grad()
                seconds.append(time.perf_counter() - t0)
        backward_code = with_all_reduces(code.getvalue())
        results[way] = {
            "graphs": len(graphs),
            "backward_captures": torch._dynamo.utils.counters["compiled_autograd"]["captures"],
            "all_reduce_nodes": sum("all_reduce" in str(node.target) for graph in graphs for node in graph.graph.nodes),
            **(collectives(backward_code[0]) if backward_code else {"all_reduces": 0, "kernels_before_wait": []}),
            "first_step_s": seconds[0],
            "all_reduce_sizes": all_reduce_sizes(backward_code[0]) if backward_code else [],
            "graph_operations": [operations(graph) for graph in graphs],
        }
    configure("eager DDP")
    reference = gradients["eager DDP"]
    for way in WAYS:
        worst = max((g - r).abs().max().item() for g, r in zip(gradients[way], reference, strict=True))
        results[way]["largest_difference"] = worst
    return results


if _ranks.is_rank_process():
    _ranks.rank_main(work)
    sys.exit(0)

# --8<-- [start:compare]
ranks = _ranks.run_ranks(__file__, WORLD_SIZE)
results = ranks[0]
print(f"{WORLD_SIZE} ranks over gloo, bucket_cap_mb={BUCKET_CAP_MB}, {STEPS} training steps; rank 0:")
print(f"{'':40}" + "".join(f"{way:>18}" for way in WAYS))
rows = [
    ("Dynamo graphs", "graphs", "d"),
    ("backward graphs (compiled autograd)", "backward_captures", "d"),
    ("all_reduce calls in Dynamo's graphs", "all_reduce_nodes", "d"),
    ("all-reduces in Inductor's backward code", "all_reduces", "d"),
    ("first step (s), compiling included", "first_step_s", ".2f"),
    ("largest gradient difference from eager", "largest_difference", ".1e"),
]
for label, key, fmt in rows:
    print(f"{label:40}" + "".join(f"{results[way][key]:{'>18' + fmt}}" for way in WAYS))
between = results["compiled autograd"]["kernels_before_wait"]
print(f"compiled autograd: kernels run between each all-reduce and its wait, in Inductor's code: {between}")
# --8<-- [end:compare]
# --8<-- [start:buckets]
sizes = results["compiled autograd"]["all_reduce_sizes"]
print(f"compiled autograd: numbers each all-reduce in Inductor's code reduces, in the order issued: {sizes}")
print("DDPOptimizer: the operations of each of Dynamo's graphs, in the order compiled:")
for number, names in enumerate(results["DDPOptimizer"]["graph_operations"], 1):
    print(f"  graph {number}: {names}")
# --8<-- [end:buckets]
layer = WIDTH * WIDTH + WIDTH
assert sum(sizes) == len(MLP().layers) * layer, "every gradient is reduced, once"
assert sorted(sizes) == [WIDTH, WIDTH * WIDTH] + [layer] * (len(sizes) - 2), "a weight and a bias per bucket, but two"
compiled = results["compiled autograd"]
assert compiled["backward_captures"] == 1, "compiled autograd captured the backward once"
assert compiled["all_reduce_nodes"] == 2 * len(MLP().layers), "one all_reduce per parameter, in the graph"
assert 0 < compiled["all_reduces"] < compiled["all_reduce_nodes"], "Inductor buckets them"
for way in WAYS[:2]:
    assert results[way]["backward_captures"] == 0 and results[way]["all_reduce_nodes"] == 0, "DDP's reducer does it"
assert results["DDPOptimizer"]["graphs"] > results["compiled autograd"]["graphs"], "no bucket split is needed"
if torch.__version__ < "2.14":  # torch 2.14.1 and 2.15.0 wait later, after computation (docs/versions.md)
    assert sum(kernels == 0 for kernels in between) > len(between) / 2, "most waits come right after their all-reduce"
else:
    assert sum(kernels > 0 for kernels in between) > len(between) / 2, "most waits come after computation"
for rank in ranks:
    for way, result in rank.items():
        assert result["largest_difference"] < 1e-4, f"{way}: the gradients are eager DDP's"

# --8<-- [start:took]
print(f"this example ran in {time.perf_counter() - started:.0f} s")
# --8<-- [end:took]
