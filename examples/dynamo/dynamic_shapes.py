"""Dynamic shapes: when a new input size recompiles, when it doesn't, and what a symbolic graph looks like.

Run it as it is: `python examples/dynamo/dynamic_shapes.py`. Every compile here uses compile_tools.GraphRecorder,
a backend that only records the graph Dynamo hands it: whether a size recompiles is Dynamo's decision, made
before any backend (Inductor included) sees the graph, so the counts are the same with the default backend.
"""

import logging
import re

import torch

import compile_tools
from _dynamic_functions import add_positions, repeat, scale

torch.manual_seed(0)
device = compile_tools.device()


# --8<-- [start:function]
def inputs_of(graph_module):
    """The graph's inputs as Dynamo typed them: tensor shapes with sizes or symbols, and symbolic ints."""
    described = []
    for node in graph_module.graph.nodes:
        if node.op == "placeholder":
            value = node.meta["example_value"]
            described.append(f"{list(value.shape)}" if isinstance(value, torch.Tensor) else f"Sym({value})")
    return ", ".join(described)


def is_symbolic(graph_module):
    """True if some input size of the graph is a symbol rather than a number."""
    for node in graph_module.graph.nodes:
        value = node.meta.get("example_value") if node.op == "placeholder" else None
        if isinstance(value, torch.SymInt) or (
            isinstance(value, torch.Tensor) and any(isinstance(size, torch.SymInt) for size in value.shape)
        ):
            return True
    return False


def rows(n):
    return torch.randn(n, 16, device=device)


def run(compiled, x):
    """Call compiled(x) and say whether it compiled a new graph, ran one compiled before, or ran uncompiled.

    `recorder` is the compile_tools.GraphRecorder that compiled was compiled with.
    """
    graphs_before, runs_before = len(recorder.graphs), recorder.runs
    compiled(x)
    if len(recorder.graphs) > graphs_before:
        new_graph = recorder.graphs[-1]
        print(f"{x.shape[0]:>2} rows: compiled graph {len(recorder.graphs)}, which takes {inputs_of(new_graph)}")
    elif recorder.runs > runs_before:
        print(f"{x.shape[0]:>2} rows: no compile, a graph compiled before passed its guards")
    else:
        print(f"{x.shape[0]:>2} rows: no compile, ran uncompiled")
# --8<-- [end:function]


# --8<-- [start:automatic-dynamic]
torch._dynamo.reset()
recorder = compile_tools.GraphRecorder()
compiled = torch.compile(add_positions, backend=recorder)  # dynamic=None, the default
compiles_after = []
with compile_tools.captured_logs(recompiles=True, dynamic=logging.INFO) as log:
    for n in (8, 16, 32):
        run(compiled, rows(n))
        compiles_after.append(len(recorder.graphs))
print()
print("what Dynamo logged (TORCH_LOGS=recompiles,dynamic), the source position after create_symbol cut:")
compile_tools.print_lines(re.sub(r"^(create_symbol .*?\[\d+, \w+\]).*$", r"\1", log.getvalue(), flags=re.M),
                          keep=lambda line: line.strip() not in ("create_env", "produce_guards"),
                          why_cut="the create_env and produce_guards markers")
# --8<-- [end:automatic-dynamic]
assert compiles_after == [1, 2, 2], "static first, one recompile with a dynamic graph, then reuse"
assert not is_symbolic(recorder.graphs[0]) and is_symbolic(recorder.graphs[1]), "static first, then symbolic"
assert "size mismatch" in log.getvalue(), "the recompile was triggered by the size guard of the first graph"
assert re.search(r"create_symbol \w+ = 16 for L\['x'\]\.size\(\)\[0\] \[2, ", log.getvalue()), "range from 2"
dynamic_graph = recorder.graphs[1]
placeholders = [node.meta["example_value"] for node in dynamic_graph.graph.nodes if node.op == "placeholder"]
assert isinstance(placeholders[0], torch.SymInt), "the size is an input of its own, before the tensor"
assert placeholders[1].shape[1] == 16 and not isinstance(placeholders[1].shape[1], torch.SymInt), "columns static"

# --8<-- [start:symbolic-graph]
code = dynamic_graph.print_readable(print_output=False, include_stride=False, include_device=False)
print(code)
symbolic_nodes = [node.name for node in dynamic_graph.graph.nodes
                  if node.op != "placeholder" and isinstance(node.meta.get("example_value"), torch.SymInt)]
size_reads = [node.name for node in dynamic_graph.graph.nodes if "sym_size" in str(node.target) or
              (node.op == "call_method" and node.target == "size")]
print("nodes that compute a symbolic int:", symbolic_nodes or "none")
print("nodes that read a size from a tensor (sym_size / .size()):", size_reads or "none: sizes come in as inputs")
# --8<-- [end:symbolic-graph]
assert "Sym(" in code, "the graph is typed with symbols"
assert symbolic_nodes, "arithmetic on a size is a node of the graph"
assert is_symbolic(dynamic_graph)

# --8<-- [start:guards]
def about_shape(guard):
    return "TENSOR_MATCH" in guard or ("LAMBDA_GUARD" in guard and "size()" in guard)


guard_lines = {}
for label, sizes in (("static", (8,)), ("dynamic", (8, 16))):
    torch._dynamo.reset()
    compiled = torch.compile(add_positions, backend=compile_tools.GraphRecorder())
    with compile_tools.captured_logs(guards=True) as log:
        for n in sizes:
            compiled(rows(n))
    last_guards = log.getvalue().split("GUARDS:")[-1]  # the guards of the last compile
    guards = [re.sub(r"DispatchKeySet\([^)]*\), ", "", line.split("#")[0].strip(" |+-"))  # dispatch keys cut
              for line in last_guards.splitlines()]
    guard_lines[label] = [guard for guard in guards if about_shape(guard)]
    print(f"{label} graph, the guards on x's shape:")
    compile_tools.print_lines("\n".join("  " + guard for guard in guards), keep=about_shape,
                              why_cut="the other guards (global state, globals, x's type and dynamic markings), "
                              "the tree's structure, the check's latency")
# --8<-- [end:guards]
assert any("2 <=" in line and "size()[0]" in line for line in guard_lines["dynamic"]), "dynamic: size >= 2"
assert not any("LAMBDA_GUARD" in line for line in guard_lines["static"]), "static: only the exact-shape match"
assert "size=[8, 16]" in guard_lines["static"][0] and "size=[None, 16]" in guard_lines["dynamic"][0]

# --8<-- [start:mark-dynamic]
torch._dynamo.reset()
recorder = compile_tools.GraphRecorder()
compiled = torch.compile(add_positions, backend=recorder)
first = rows(8)
torch._dynamo.mark_dynamic(first, 0)  # dimension 0 of this tensor is dynamic from the first compile
for x in (first, rows(16), rows(32)):
    run(compiled, x)


def add_table(x):
    return x + torch.ones(8, 16, device=x.device)  # only 8 rows fit: the trace specializes the size to 8


marked = rows(8)
torch._dynamo.mark_dynamic(marked, 0)
try:
    torch.compile(add_table, backend="eager")(marked)
    promise_error = None
except Exception as error:  # ConstraintViolationError, raised while Dynamo builds the guards
    lines = [line.strip(" -") for line in str(error).splitlines() if line.strip()]
    message = next((line for line in lines if "marked" in line), lines[0]).split(". ")[0]
    promise_error = f"{type(error).__name__}: {message}"
print("mark_dynamic on a size the code forces to 8:")
print(" ", promise_error or "compiles")
# --8<-- [end:mark-dynamic]
assert len(recorder.graphs) == 1 and is_symbolic(recorder.graphs[0]), "mark_dynamic: one symbolic compile"
assert recorder.runs == 3, "and it ran all three calls"
assert promise_error is not None, "mark_dynamic is a promise: specializing the size is an error"

# --8<-- [start:zero-one]
with compile_tools.captured_logs(recompiles=True) as log:
    for n in (1, 0, 64, 1, 0):
        run(compiled, rows(n))
reasons = [line.strip() for line in log.getvalue().splitlines() if line.strip().startswith("- 0/")]
print()
print("what Dynamo logged (TORCH_LOGS=recompiles), the comment after each guard cut:")
compile_tools.print_lines(re.sub(r"  #.*", "", log.getvalue()), keep=lambda line: line.strip().startswith("- 0/"),
                          why_cut='the "Recompiling function" and "triggered by" lines of each recompile')
# --8<-- [end:zero-one]
assert len(recorder.graphs) == 3, "sizes 1 and 0 each got a graph of their own; 64 and the repeats reused graphs"
assert not is_symbolic(recorder.graphs[1]) and not is_symbolic(recorder.graphs[2]), "the graphs for 1 and 0 are static"
assert any("2 <=" in reason for reason in reasons), "the symbolic graph's guard excludes 0 and 1"

# --8<-- [start:unbacked]
torch._dynamo.reset()
recorder = compile_tools.GraphRecorder()
compiled = torch.compile(add_positions, backend=recorder)
first = rows(1)
torch._dynamo.decorators.mark_unbacked(first, 0)  # a size Dynamo may not look at: no 0/1 specialization
for x in (first, rows(0), rows(8), rows(1)):
    run(compiled, x)
    torch.testing.assert_close(compiled(x), add_positions(x))


def first_rows(x):
    return x[:4] if x.shape[0] > 4 else x  # a Python decision on the size


x = rows(8)
torch._dynamo.decorators.mark_unbacked(x, 0)
torch._dynamo.reset()
try:
    torch.compile(first_rows, backend="eager", fullgraph=True)(x)
    branch_error = None
except torch._dynamo.exc.TorchDynamoException as error:
    branch_error = f"{type(error).__name__}: {str(error).splitlines()[0]}"
print("a branch on an unbacked size under fullgraph=True:")
print(" ", branch_error or "compiles")


def first_rows_checked(x):
    torch._check(x.shape[0] > 4)  # tell Dynamo what you know; checked at run time instead of guarded
    return x[:4] if x.shape[0] > 4 else x


torch._dynamo.reset()
checked_rows = torch.compile(first_rows_checked, backend="eager", fullgraph=True)(x).shape[0]
print(f"with torch._check(x.shape[0] > 4) first: compiles, and returns {checked_rows} rows")
# --8<-- [end:unbacked]
assert len(recorder.graphs) == 1, "an unbacked size: one graph for 0, 1 and 8 rows"
assert recorder.runs == 8, "it ran every call, the checks against add_positions included"
assert "Sym(u" in inputs_of(recorder.graphs[0]), "the size is an unbacked symbol"
assert branch_error is not None, "Python cannot branch on an unbacked size"
assert checked_rows == 4, "torch._check answers the branch"

# --8<-- [start:dynamic-flag]
counts = {}
for dynamic in (False, None, True):
    torch._dynamo.reset()
    recorder = compile_tools.GraphRecorder()
    compiled = torch.compile(add_positions, backend=recorder, dynamic=dynamic)
    for n in (8, 16, 32, 64):
        compiled(rows(n))
    counts[dynamic] = len(recorder.graphs)
    kinds = ", ".join("symbolic" if is_symbolic(graph) else "static" for graph in recorder.graphs)
    print(f"dynamic={dynamic!s:<5}: {len(recorder.graphs)} compile(s) for 4 sizes ({kinds})")
    print(f"               first graph takes {inputs_of(recorder.graphs[0])}")
first_shape = next(node.meta["example_value"].shape for node in recorder.graphs[0].graph.nodes  # dynamic=True
                   if node.op == "placeholder" and isinstance(node.meta["example_value"], torch.Tensor))
torch._dynamo.reset()
square_recorder = compile_tools.GraphRecorder()
torch.compile(add_positions, backend=square_recorder, dynamic=True)(torch.randn(16, 16, device=device))
print(f"dynamic=True , a 16 x 16 input first: the graph takes {inputs_of(square_recorder.graphs[0])}")
# --8<-- [end:dynamic-flag]
assert counts == {False: 4, None: 2, True: 1}, counts
assert all(isinstance(size, torch.SymInt) for size in first_shape), "dynamic=True: every dimension symbolic"
assert str(first_shape[0]) != str(first_shape[1]), "8 and 16 on the first call: two symbols"
square = next(node.meta["example_value"].shape for node in square_recorder.graphs[0].graph.nodes
              if node.op == "placeholder" and isinstance(node.meta["example_value"], torch.Tensor))
assert str(square[0]) == str(square[1]), "duck sizing: equal sizes on the first call share one symbol"


# --8<-- [start:int-arguments]
int_graphs = {}
for fn, values in ((scale, (2, 3, 4)), (repeat, (2, 3, 4)), (scale, (0.5, 0.25, 0.125))):
    torch._dynamo.reset()
    recorder = compile_tools.GraphRecorder()
    compiled = torch.compile(fn, backend=recorder)
    for value in values:
        compiled(rows(8), value)
        print(f"{fn.__name__}(x, {value}): {len(recorder.graphs)} graph(s) so far, "
              f"the last takes {inputs_of(recorder.graphs[-1])}")
    int_graphs[(fn.__name__, type(values[0]).__name__)] = recorder.graphs
# --8<-- [end:int-arguments]
by_int, by_range, by_float = int_graphs[("scale", "int")], int_graphs[("repeat", "int")], int_graphs[("scale", "float")]
assert len(by_int) == 2 and "Sym(" in inputs_of(by_int[-1]), "an int in arithmetic: one recompile, then symbolic"
assert len(by_range) == 3, "range(steps) needs the value: every new value recompiles"
assert len(by_float) == 2 and inputs_of(by_float[-1]).endswith(", []"), "a float: one recompile, then a 0-d input"

# --8<-- [start:recompile-limit]
torch._dynamo.reset()
recorder = compile_tools.GraphRecorder()
compiled = torch.compile(add_positions, backend=recorder, dynamic=False)
for n in range(2, 14):
    x = rows(n)
    torch.testing.assert_close(compiled(x), add_positions(x))  # past the limit it still runs, uncompiled
print(f"dynamic=False, 12 sizes: {len(recorder.graphs)} graphs compiled "
      f"(recompile_limit is {torch._dynamo.config.recompile_limit}); "
      f"{recorder.runs} calls ran a compiled graph, {12 - recorder.runs} ran uncompiled")
# --8<-- [end:recompile-limit]
limit = torch._dynamo.config.recompile_limit
assert len(recorder.graphs) == limit, "compiles stop at the limit"
assert recorder.runs == limit, "each size up to the limit ran its graph; the sizes after it ran uncompiled"
