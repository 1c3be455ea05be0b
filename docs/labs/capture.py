# %% [markdown]
# # Lab 2: What Dynamo captured
#
# Before anything is compiled, Dynamo reads a function's bytecode and records every tensor
# operation into an FX graph. `torch._dynamo.explain(fn)(*args)` runs that capture once and
# reports what came out: how many graphs, a `graph_break_count`, the reasons of the breaks, and
# the graphs themselves. In this lab you read that report, then trace every node of a graph back to the
# Python line it came from.
#
# Background: [The captured FX graph](../dynamo/fx_graph.md) and
# [Graph breaks](../dynamo/graph_breaks.md).

# %%
import collections
import re

import compile_tools
import torch

device = compile_tools.device()
torch.manual_seed(0)


def attention_scores(q, k, bias):
    scale = q.shape[-1] ** -0.5  # Python arithmetic on a shape: no node
    scores = q @ k.transpose(-2, -1) * scale
    scores = scores + bias
    return torch.softmax(scores, dim=-1)


q = torch.randn(2, 8, 16, device=device)
k = torch.randn(2, 8, 16, device=device)
bias = torch.randn(8, 8, device=device)

# %% [markdown]
# ## Task 1: read `explain`'s report
#
# Call `torch._dynamo.explain(attention_scores)(q, k, bias)` and return three numbers from the
# report it gives back: `graph_count`, `graph_break_count` and `op_count`. Print the report too:
# it is long, but its first lines answer the question. (It names functions by their object,
# `<built-in method ... at 0x...>`; the solution drops the addresses, which change on every run.)
#
# Two things to know about `explain` before you use it on a real model, both shown on
# [explain and the logs](../debugging/explain_and_logs.md): `graph_break_count` is
# `graph_count - 1`, not a count of breaks (a break after which Dynamo gives up on a whole frame
# leaves no graph, and no reason), and `explain` resets Dynamo before and after its run, so in
# the middle of a notebook it throws away what your compiled functions had compiled.


# %%
def explain_counts(fn, *args):
    # TODO: run torch._dynamo.explain(fn)(*args) and return (graph_count, graph_break_count, op_count).
    return None, None, None


# %% tags=["solution"]
def explain_counts(fn, *args):
    report = torch._dynamo.explain(fn)(*args)
    graphs_part = str(report).split("Out Guards")[0].strip()  # the part about graphs, before the guards
    print(re.sub(r" at 0x[0-9a-f]+", "", graphs_part))  # without memory addresses
    return report.graph_count, report.graph_break_count, report.op_count


# %% tags=["check"]
# The reference: a backend that keeps the graph it is handed, and counts its nodes itself.
recorder = compile_tools.GraphRecorder()
torch._dynamo.reset()
torch.compile(attention_scores, backend=recorder)(q, k, bias)
call_functions = [node for node in recorder.graphs[0].graph.nodes if node.op == "call_function"]

graphs, breaks, ops = explain_counts(attention_scores, q, k, bias)
assert graphs is not None, "explain_counts returned None: return the report's graph_count, graph_break_count, op_count"
assert graphs == 1 and breaks == 0, f"expected one graph and no break, got {graphs} graph(s) and {breaks} break(s)"
assert ops == len(call_functions), f"op_count should be {len(call_functions)}, got {ops}"
print(f"\n{graphs} graph, {breaks} graph breaks, {ops} call_function nodes")

# %% [markdown]
# One graph and no break: Dynamo followed every line. `op_count` counts the graph's
# `call_function` nodes only; a method call such as `k.transpose(...)` is a `call_method` node
# and is in the graph without being in that count.
#
# ## Task 2: which line made which node
#
# Every node Dynamo records carries `node.meta["stack_trace"]`: the Python traceback of the
# line that produced it, e.g.
#
# ```text
#   File "...", line 4, in attention_scores
#     scores = q @ k.transpose(-2, -1) * scale
# ```
#
# Write `nodes_per_line(graph_module)`: for every `call_function` and `call_method` node, take
# the source line from its stack trace (the line after the last `File "..."` line, stripped) and
# count the nodes per line. Return a `collections.Counter` of `{source line: number of nodes}`.


# %%
def nodes_per_line(graph_module):
    # TODO: count the call_function and call_method nodes per source line of their stack trace.
    return collections.Counter()


# %% tags=["solution"]
def nodes_per_line(graph_module):
    counts = collections.Counter()
    for node in graph_module.graph.nodes:
        if node.op not in ("call_function", "call_method"):
            continue
        trace = node.meta["stack_trace"].rstrip().splitlines()
        last_frame = max(i for i, line in enumerate(trace) if line.lstrip().startswith("File "))
        counts[trace[last_frame + 1].strip()] += 1
    return counts


# %% tags=["check"]
print(recorder.graphs[0].code.strip(), "\n")
per_line = nodes_per_line(recorder.graphs[0])
for line, count in per_line.items():
    print(f"{count} node(s) <- {line}")
expected = {
    "scores = q @ k.transpose(-2, -1) * scale": 3,  # transpose, matmul, mul
    "scores = scores + bias": 1,
    "return torch.softmax(scores, dim=-1)": 1,
}
assert per_line, "nodes_per_line returned an empty Counter: read node.meta['stack_trace'] of each node"
assert dict(per_line) == expected, f"expected {expected}, got {dict(per_line)}"

# %% [markdown]
# The line `scale = q.shape[-1] ** -0.5` made no node at all. Dynamo *ran* it while tracing: the
# shape is known, so `scale` became a constant, baked into the `mul` node. A
# [guard](../dynamo/guards.md) on the input's shape makes sure that constant is still right
# before the graph is reused.
#
# ## Try it: a graph break
#
# Add a line that Dynamo cannot put in a graph, such as `print(scores.sum())`, and run
# `explain` again: it reports two graphs, one break, and the reason. The
# [graph-breaks lab](graph_breaks.py) is about fixing those.


# %%
def attention_scores_with_print(q, k, bias):
    scores = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
    print("sum of scores:", scores.sum())
    return torch.softmax(scores + bias, dim=-1)


report = torch._dynamo.explain(attention_scores_with_print)(q, k, bias)
print(f"{report.graph_count} graphs, {report.graph_break_count} break")
print(str(report.break_reasons[0].reason).splitlines()[0])
assert report.graph_count == 2 and report.graph_break_count == 1

# %% [markdown]
# ## What to remember
#
# - `torch._dynamo.explain` captures without compiling and reports graphs, breaks, their reasons
#   and the graphs themselves: the first thing to run on a model that compiles badly.
# - Python arithmetic on shapes and constants runs during tracing and leaves no node; only tensor
#   operations become nodes.
# - `node.meta["stack_trace"]` ties each node to the line of your code that produced it.
