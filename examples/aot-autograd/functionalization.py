"""Functionalization: how AOTAutograd turns in-place operations and views into a mutation-free graph.

Run it as it is: `python examples/aot-autograd/functionalization.py`. Nothing here depends on the
device, so the example stays on the CPU everywhere; the graphs are captured, not compiled.
"""

import inspect

import torch
import torch._dynamo.backends.debugging
import torch._inductor.compile_fx
from torch._dynamo.backends.common import aot_autograd

import compile_tools

torch.manual_seed(0)


def op_name(node):
    """A short name for what a node calls: `add_` for a method, `aten.add.Tensor` for an ATen overload."""
    if isinstance(node.target, str):
        return node.target
    return str(node.target) if isinstance(node.target, torch._ops.OpOverload) else node.target.__name__


def writes_to_an_argument(node):
    """True when the ATen operator's schema says it writes into one of its arguments (`Tensor(a!)`)."""
    schema = getattr(node.target, "_schema", None)
    return schema is not None and any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments)


# --8<-- [start:function]
def update(x, w):
    x.add_(1)  # in place, into an input
    row = x[0]  # a view of x
    row.mul_(2)  # writes into x through the view
    return (x * w).sum()


x = torch.randn(3, 4)
w = torch.randn(3, 4)
x_eager = x.clone()
out_eager = update(x_eager, w)  # the reference: x_eager is now (x + 1), with row 0 doubled
# --8<-- [end:function]

# --8<-- [start:dynamo-graph]
recorder = compile_tools.GraphRecorder()
torch._dynamo.reset()
torch.compile(update, backend=recorder)(x.clone(), w)
dynamo_ops = [op_name(n) for n in recorder.graphs[0].graph.nodes if n.op in ("call_function", "call_method")]
print("Dynamo's graph:", ", ".join(dynamo_ops))
# --8<-- [end:dynamo-graph]
assert "add_" in dynamo_ops and "mul_" in dynamo_ops, "Dynamo keeps the in-place methods as they were written"


# --8<-- [start:functional-graph]
def capture_aten(**aot_options):
    """Compile `update` through AOTAutograd and return the forward ATen graph it hands to its compiler."""
    graphs = []

    def keep(graph_module, example_inputs):
        graphs.append(graph_module)
        return graph_module.forward

    torch._dynamo.reset()
    x_compiled = x.clone()
    out = torch.compile(update, backend=aot_autograd(fw_compiler=keep, **aot_options))(x_compiled, w)
    return graphs[0], x_compiled, out


functional, x_functional, out_functional = capture_aten()
print(functional.print_readable(print_output=False, include_stride=False, include_device=False))
# --8<-- [end:functional-graph]
nodes = list(functional.graph.nodes)
aten_ops = [op_name(n) for n in nodes if n.op == "call_function"]
assert not any(writes_to_an_argument(n) for n in nodes if n.op == "call_function"), "no in-place op is left"
assert not any(op.split(".")[1].endswith("_") for op in aten_ops), aten_ops  # aten.<name>.<overload>
assert "aten.select_scatter.default" in aten_ops, "the write through the view became a select_scatter"
outputs = nodes[-1].args[0]
assert len(outputs) == 2, "the new value of x comes out as an extra output, before the function's own result"
assert outputs[0].target == torch.ops.aten.select_scatter.default
torch.testing.assert_close(x_functional, x_eager)  # the runtime wrapper copied the extra output back into x
torch.testing.assert_close(out_functional, out_eager)

# --8<-- [start:copy-back]
with_copy, x_copied, out_copied = capture_aten(keep_inference_input_mutations=True)
print(with_copy.print_readable(print_output=False, include_stride=False, include_device=False))
# --8<-- [end:copy-back]
copy_nodes = [n for n in with_copy.graph.nodes if n.op == "call_function" and writes_to_an_argument(n)]
assert [op_name(n) for n in copy_nodes] == ["aten.copy_.default"], "the only in-place op is the epilogue copy_"
(copy_node,) = copy_nodes
assert copy_node.args[0].op == "placeholder" and copy_node.args[0] is next(iter(with_copy.graph.nodes)), "into x"
assert copy_node.next.op == "output", "copy_ is the last operation, after everything that reads x's new value"
assert len(list(with_copy.graph.nodes)[-1].args[0]) == 1, "no extra output: the graph writes x itself"
torch.testing.assert_close(x_copied, x_eager)
for module, backend in ((torch._inductor.compile_fx, "compile_fx"), (torch._dynamo.backends.debugging, "aot_eager")):
    assert "keep_inference_input_mutations=True" in inspect.getsource(module), f"{backend} keeps the copy_ in the graph"
torch.testing.assert_close(out_copied, out_eager)

# --8<-- [start:inductor]
torch._dynamo.reset()
x_inductor = x.clone()
with compile_tools.captured_logs(aot_graphs=True) as log:  # the graph AOTAutograd hands Inductor
    out_inductor = torch.compile(update)(x_inductor, w)
copy_lines = [line.split(";")[0].strip() for line in log.getvalue().splitlines() if "aten.copy_" in line]
print("in-place copies in the graph Inductor received:", *copy_lines, sep="\n  ")
print("x after the call matches eager:", torch.equal(x_inductor, x_eager))
print("max |result - eager|:", (out_inductor - out_eager).abs().item())
# --8<-- [end:inductor]
assert len(copy_lines) == 1 and "arg0_1" in copy_lines[0], "torch.compile keeps the copy_ epilogue into x"
torch.testing.assert_close(x_inductor, x_eager)
torch.testing.assert_close(out_inductor, out_eager)
