"""The FX graph Dynamo captures from an nn.Module, and how its nodes map back to Python lines.

Run it as it is: `python examples/dynamo/fx_graph.py`. Dynamo's capture does not depend on the
device, so this example stays on the CPU everywhere, and no backend compiles anything: the graphs
are only captured and looked at.
"""

import inspect
import re
from collections import Counter

import torch
from torch import nn

import compile_tools

torch.manual_seed(0)


def op_name(node):
    """A short name for what a node calls: the method's name, or the function's."""
    return node.target if isinstance(node.target, str) else node.target.__name__


# --8<-- [start:model]
class Block(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.proj = nn.Linear(width, width)
        self.scales = [0.5, 2.0]  # a plain Python list, fixed when the module is built
        self.use_residual = True  # a configuration flag

    def forward(self, x):
        if not isinstance(x, torch.Tensor) or x.dim() != 3:
            raise ValueError("expected a (batch, seq, width) tensor")
        h = self.norm(x)
        scale = 1.0 / (x.shape[-1] // 4)
        for s in self.scales:
            h = h * s
        if self.training:
            h = torch.dropout(h, p=0.1, train=True)
        y = torch.relu(self.proj(h)) * scale + h.sigmoid()
        if self.use_residual:
            y = y + x
        return y


model = Block().eval()
x = torch.randn(2, 8, 16)
# --8<-- [end:model]

# --8<-- [start:explain]
explanation = torch._dynamo.explain(model)(x)
report = re.sub(r" at 0x[0-9a-f]+", "", str(explanation))  # memory addresses, different on every run
graph_part = report.split("Out Guards:")[0].splitlines()
compile_tools.print_lines(
    report,
    keep=lambda line: line in graph_part,
    why_cut=f"the {len(explanation.out_guards)} guards (see the guards page) and compile times",
)
# --8<-- [end:explain]
assert explanation.graph_count == 1 and explanation.graph_break_count == 0, "one graph, no graph break"
assert explanation.break_reasons == []
assert explanation.op_count == 8, explanation.ops_per_graph


# --8<-- [start:explain-break]
def clipped(x):
    y = x.sin()
    if y.sum() > 0:  # the branch depends on the values in y
        y = y - 1
    return y.cos()


broken = torch._dynamo.explain(clipped)(torch.rand(8))  # values in [0, 1): the branch is taken
print("graph count:", broken.graph_count)
print("graph break count:", broken.graph_break_count)
print("op count:", broken.op_count)
for reason in broken.break_reasons:
    print("break reason:", reason.reason)
    print("  at:", *[f"line {frame.lineno}: {frame.line}" for frame in reason.user_stack])
for number, graph in enumerate(broken.graphs, 1):
    ops = [op_name(node) for node in graph.graph.nodes if node.op in ("call_function", "call_method")]
    print(f"graph {number}: {', '.join(ops)}")
# --8<-- [end:explain-break]
assert (broken.graph_count, broken.graph_break_count, len(broken.break_reasons)) == (2, 1, 1)
break_line = broken.break_reasons[0].user_stack[-1]
assert "if y.sum() > 0" in break_line.line, break_line
broken_ops = sum(1 for g in broken.graphs for n in g.graph.nodes if n.op in ("call_function", "call_method"))
assert (broken.op_count, broken_ops) == (2, 5), "explain's op count leaves out the method calls"

# --8<-- [start:graph-code]
graph = explanation.graphs[0]
print(graph.print_readable(print_output=False, include_stride=False, include_device=False))
# --8<-- [end:graph-code]
assert "0.25" in graph.code, "scale = 1.0 / (16 // 4) was computed in Python and baked in as a constant"

# --8<-- [start:node-kinds]
kinds = Counter(node.op for node in graph.graph.nodes)
for kind in ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output"):
    print(f"{kind:>13}: {kinds[kind]}")
print("placeholders:", ", ".join(node.name for node in graph.graph.nodes if node.op == "placeholder"))

fx_traced = torch.fx.symbolic_trace(nn.Sequential(model.norm, model.proj))
fx_kinds = Counter(node.op for node in fx_traced.graph.nodes)
print("torch.fx.symbolic_trace(nn.Sequential(norm, proj)):", dict(fx_kinds))
# --8<-- [end:node-kinds]
assert kinds["placeholder"] == 5, "x and the four parameters of norm and proj are graph inputs"
assert kinds["call_module"] == 0 and kinds["get_attr"] == 0, "the submodules were inlined, not called"
assert (kinds["call_function"], kinds["call_method"], kinds["output"]) == (8, 1, 1), kinds
assert explanation.op_count == kinds["call_function"], "explain's Op Count counts call_function nodes only"
assert fx_kinds["call_module"] == 2, "FX's own tracer keeps each submodule as one call_module node"

# --8<-- [start:lines-to-nodes]
this_file = Block.forward.__code__.co_filename
source, first_line = inspect.getsourcelines(Block.forward)


def forward_line(node):
    """The line of Block.forward a node came from: the frame of its stack trace in that function."""
    frames = re.findall(r'File "(.+?)", line (\d+), in (\w+)', node.meta["stack_trace"])
    return [int(line) for file, line, function in frames if file == this_file and function == "forward"][-1]


operations = [node for node in graph.graph.nodes if node.op in ("call_function", "call_method")]
nodes_of_line = {}
for node in operations:
    nodes_of_line.setdefault(forward_line(node), []).append(op_name(node))

print(f" line  nodes  {'source':56}  operations")
for line_number, text in enumerate(source[1:], first_line + 1):
    names = nodes_of_line.get(line_number, [])
    print(f"{line_number:5}  {len(names):5}  {text.rstrip()[4:]:56}  {', '.join(names)}".rstrip())
# --8<-- [end:lines-to-nodes]


def nodes_from(code):
    """How many nodes the one line of Block.forward containing `code` gave."""
    (number,) = [n for n, text in enumerate(source, first_line) if code in text]
    return len(nodes_of_line.get(number, []))


assert sum(len(names) for names in nodes_of_line.values()) == len(operations), "every node comes from forward"
assert nodes_from("torch.relu(self.proj(h))") == 5, "linear, relu, mul, sigmoid, add"
assert nodes_from("h = h * s") == 2, "the loop body, unrolled once per list element"
assert nodes_from("h = self.norm(x)") == 1 and nodes_from("y = y + x") == 1
for code in ("isinstance", "raise", "scale =", "for s in", "if self.training", "torch.dropout", "if self.use_"):
    assert nodes_from(code) == 0, code
silent_lines = [text for text in source[1:] if text.strip() and not nodes_from(text.strip())]
assert len(silent_lines) == 8, silent_lines  # the seven above, and `return y`

# --8<-- [start:training]
train_explanation = torch._dynamo.explain(model.train())(x)
train_graph = train_explanation.graphs[0]
train_ops = [op_name(node) for node in train_graph.graph.nodes if node.op in ("call_function", "call_method")]
print("ops in train mode:", ", ".join(train_ops))
model.eval()
# --8<-- [end:training]
assert "dropout" in train_ops and len(train_ops) == len(operations) + 1, "train mode adds the dropout node"
assert any(guard.name.endswith(".training") for guard in explanation.out_guards), "a guard on self.training"
