"""Compiler stances and graph-break errors: switching torch.compile's behaviour without touching
the code that calls torch.compile.

Run it as it is: `python examples/debugging/stances.py`. Only Dynamo's decisions matter here, so a
counting backend stands in for Inductor and the example stays on the CPU everywhere.
"""

import torch

import compile_tools


# --8<-- [start:setup]
def step(x):
    return torch.relu(x) * 2.0 + 1.0


recorder = compile_tools.GraphRecorder()
compiled_step = torch.compile(step, backend=recorder, dynamic=False)  # dynamic=False: a new shape recompiles


def report(what):
    print(f"{what:<44} graphs compiled: {len(recorder.graphs)}   calls that ran a graph: {recorder.runs}")


# --8<-- [end:setup]


# --8<-- [start:default]
compiled_step(torch.randn(4))
report("default, shape (4,)")
compiled_step(torch.randn(4))
report("default, shape (4,) again")
# --8<-- [end:default]
assert (len(recorder.graphs), recorder.runs) == (1, 2), "one compile, then the cached graph runs"

# --8<-- [start:force-eager]
x8 = torch.randn(8)
with torch.compiler.set_stance("force_eager"):
    out = compiled_step(x8)
    report("force_eager, shape (8,)")
print(f"force_eager's result equals step(x), bitwise: {torch.equal(out, step(x8))}")
# --8<-- [end:force-eager]
assert (len(recorder.graphs), recorder.runs) == (1, 2), "force_eager neither compiles nor runs a compiled graph"
assert torch.equal(out, step(x8)), "the function's own Python ran"

# --8<-- [start:eager-on-recompile]
with torch.compiler.set_stance("eager_on_recompile"):
    compiled_step(torch.randn(8))
    report("eager_on_recompile, shape (8,)")
    compiled_step(torch.randn(4))
    report("eager_on_recompile, shape (4,)")
# --8<-- [end:eager-on-recompile]
assert len(recorder.graphs) == 1, "the new shape ran eagerly instead of recompiling"
assert recorder.runs == 3, "the shape already compiled still ran its compiled graph"

# --8<-- [start:fail-on-recompile]
with torch.compiler.set_stance("fail_on_recompile"):
    compiled_step(torch.randn(4))
    report("fail_on_recompile, shape (4,)")
    try:
        compiled_step(torch.randn(16))
    except Exception as error:
        failure = error
        print(f"fail_on_recompile, shape (16,): {type(error).__name__}: {str(error).split('. filename')[0]}")
report("after the failure")
# --8<-- [end:fail-on-recompile]
assert recorder.runs == 4, "the cached graph is still used"
assert isinstance(failure, RuntimeError), type(failure)
assert len(recorder.graphs) == 1, "no graph was compiled for (16,)"

# --8<-- [start:back-to-default]
compiled_step(torch.randn(16))
report("default again, shape (16,)")
# --8<-- [end:back-to-default]
assert len(recorder.graphs) == 2, "outside the context manager the stance is back to default: it recompiles"

# --8<-- [start:eager-then-compile]
for stance in ("default", "eager_then_compile"):
    torch._dynamo.reset()
    shapes = compile_tools.GraphRecorder()
    compiled = torch.compile(step, backend=shapes)  # no dynamic=False: Dynamo may make a size dynamic
    with torch.compiler.set_stance(stance):
        for size in (4, 8, 16, 32):
            compiled(torch.randn(size))
    sizes = [str(graph.graph.find_nodes(op="placeholder")[-1].meta["example_value"].shape) for graph in shapes.graphs]
    print(f"{stance:<19} sizes 4, 8, 16, 32: {len(shapes.graphs)} graphs compiled, for {sizes}")
# --8<-- [end:eager-then-compile]
assert len(shapes.graphs) == 1 and "s" in sizes[0], "the first call ran eagerly; the one compile made the size dynamic"


# --8<-- [start:graph-break]
def with_break(x):
    y = torch.sin(x)
    print("a print inside the function: Dynamo cannot put it in a graph")
    return torch.cos(y)


def try_compile(what, fn, *args):
    torch._dynamo.reset()
    recorder.graphs.clear()
    try:
        fn(*args)
        print(f"{what:<38} ran, {len(recorder.graphs)} graphs")
        return len(recorder.graphs)
    except torch._dynamo.exc.Unsupported as error:
        print(f"{what:<38} raised {type(error).__name__}: {str(error).splitlines()[0]}")
        return error


x = torch.randn(4)
allowed = try_compile("default", torch.compile(with_break, backend=recorder), x)
full = try_compile("fullgraph=True", torch.compile(with_break, backend=recorder, fullgraph=True), x)
with torch._dynamo.error_on_graph_break(True):
    region = try_compile("error_on_graph_break(True)", torch.compile(with_break, backend=recorder), x)
with torch._dynamo.error_on_graph_break(False):
    both = try_compile("fullgraph=True in error_on_graph_break(False)",
                       torch.compile(with_break, backend=recorder, fullgraph=True), x)  # fmt: skip
# --8<-- [end:graph-break]
assert allowed == 2, "by default a graph break splits the function into two graphs"
assert isinstance(full, torch._dynamo.exc.Unsupported), "fullgraph=True turns the break into an error"
assert isinstance(region, torch._dynamo.exc.Unsupported), "so does error_on_graph_break(True) around the call"
assert isinstance(both, torch._dynamo.exc.Unsupported), "fullgraph=True takes precedence over error_on_graph_break"


# --8<-- [start:toggled]
@torch._dynamo.error_on_graph_break(False)  # inside a compiled function: breaks allowed in this region
def log_it(y):
    print("a print in a region that allows graph breaks")
    return y


def with_region(x):
    return torch.cos(log_it(torch.sin(x)))


with torch._dynamo.error_on_graph_break(True):
    toggled = try_compile("error_on_graph_break(True), region False", torch.compile(with_region, backend=recorder), x)
strict = try_compile("fullgraph=True, region False", torch.compile(with_region, backend=recorder, fullgraph=True), x)
# --8<-- [end:toggled]
assert toggled > 1, "error_on_graph_break(True) does not promise one graph: the region it turns off may break"
assert isinstance(strict, torch._dynamo.exc.Unsupported), "fullgraph=True does: the region's break is an error"
