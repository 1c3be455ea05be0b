"""Hierarchical compilation with changing shapes: when a nested compile region becomes dynamic, and what
happens when one region needs more subgraphs than max_reuse_entries allows.

Run it as it is: `python examples/deploying/hierarchical_shapes.py`. It runs on the CPU, and only
counts what Dynamo captured (a backend that keeps Dynamo's graphs and runs them as they are).
"""

# execdocs: devices=cpu

import time

import torch
from torch._dynamo.testing import CompileCounterWithBackend

from deploying import _model

started = time.perf_counter()
WIDTH, DEPTH, SIZES = 64, 4, (8, 16, 24, 32)
INVOKE_SUBGRAPH = torch.ops.higher_order.invoke_subgraph


# --8<-- [start:region]
@torch.compiler.nested_compile_region
def block(layer, x):
    return layer(x)


def nested_forward(model, x):
    x = model.embed(x)
    for layer in model.layers:
        x = block(layer, x)
    return model.head(x)


# --8<-- [end:region]


def region_inputs(graph_module) -> list[str]:
    """The shape of `x` as each subgraph the graph calls receives it (its first tensor input), e.g. (s77, 64)."""
    shapes = []
    for name in sorted({node.args[0].target for node in graph_module.graph.nodes if node.target is INVOKE_SUBGRAPH}):
        inputs = [node for node in getattr(graph_module, name).graph.nodes if node.op == "placeholder"]
        values = [node.meta["example_value"] for node in inputs]  # a symbolic size first, if any, then x
        shape = next(value for value in values if isinstance(value, torch.Tensor)).shape
        shapes.append(f"{name}: x {tuple(shape)}".replace("'", ""))
    return shapes


# --8<-- [start:batch-sizes]
def batches_of_changing_size(mark_dynamic: bool) -> list:
    """The marked model called at four batch sizes, under torch.compile; Dynamo's graphs."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = _model.build(torch.device("cpu"), width=WIDTH, depth=DEPTH)
    graphs = CompileCounterWithBackend("eager")
    compiled = torch.compile(nested_forward, backend=graphs)
    with torch.no_grad():
        for size in SIZES:
            x = torch.randn(size, WIDTH)
            if mark_dynamic:
                torch._dynamo.mark_dynamic(x, 0)
            torch.testing.assert_close(compiled(model, x), model(x))
    return graphs.graphs


print(f"a model of {DEPTH} marked blocks, called at batch sizes {', '.join(map(str, SIZES))}:")
runs = {how: batches_of_changing_size(how == "mark_dynamic") for how in ("default", "mark_dynamic")}
for how, graphs in runs.items():
    print(f"{how}: {len(graphs)} Dynamo graphs")
    for number, graph in enumerate(graphs, 1):
        print(f"  graph {number}: {sum(node.target is INVOKE_SUBGRAPH for node in graph.graph.nodes)} "
              f"invoke_subgraph calls; {'; '.join(region_inputs(graph))}")  # fmt: skip
# --8<-- [end:batch-sizes]
default, marked = runs["default"], runs["mark_dynamic"]
assert len(default) == 2, "static at the first size, then one dynamic graph for the rest"
assert len(marked) == 1, "dynamic from the first call"
for graph in (default[-1], marked[0]):
    (shape,) = region_inputs(graph)
    assert "s" in shape.split("x (")[1].split(",")[0], "the region's batch is a symbol: one subgraph for every size"
assert "s" not in region_inputs(default[0])[0].split("x (")[1].split(",")[0], "the first graph is static"


# --8<-- [start:reuse-limit]
def one_region_at_many_shapes(model, x, shapes: int):
    """The same region, called in one graph on `shapes` slices of x of different lengths."""
    return [block(model.layers[0], x[: 2 + k]) for k in range(shapes)]


outcome = {}
for shapes in (8, 9):
    torch._dynamo.reset()
    model = _model.build(torch.device("cpu"), width=WIDTH, depth=1)
    graphs = CompileCounterWithBackend("eager")
    try:
        with torch.no_grad():
            compiled = torch.compile(one_region_at_many_shapes, backend=graphs, fullgraph=True)
            compiled(model, torch.randn(32, WIDTH), shapes)
        outcome[shapes] = "compiled"
        calls = sum(node.target is INVOKE_SUBGRAPH for node in graphs.graphs[0].graph.nodes)
        print(f"{shapes} shapes in one graph: compiled, {len(graphs.graphs)} graph, "
              f"{calls} invoke_subgraph calls left in it (a subgraph called once is put back inline)")  # fmt: skip
    except Exception as error:  # noqa: BLE001 - what the limit raises is the point
        message = str(error).split("\n")[0].split(" for function code")[0]
        outcome[shapes] = message
        print(f"{shapes} shapes in one graph: {type(error).__name__}: {message}")
# --8<-- [end:reuse-limit]
assert outcome[8] == "compiled", "up to the limit, one subgraph per shape"
assert "exceeded maximum reuse entries (8)" in outcome[9], "one more shape than the limit: an error, not a fallback"

# --8<-- [start:took]
print(f"this example ran in {time.perf_counter() - started:.0f} s")
# --8<-- [end:took]
