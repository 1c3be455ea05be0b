"""Decompositions: how composite ATen operators are split into simpler ones before Inductor sees them.

Run it as it is: `python examples/aot-autograd/decompositions.py`. The graphs do not depend on
the device, so the example stays on the CPU everywhere.
"""

import re

import torch
from torch._decomp import core_aten_decompositions, global_decomposition_table, register_decomposition
from torch._dynamo.backends.common import aot_autograd
from torch._inductor.decomposition import decompositions as inductor_table
from torch._inductor.decomposition import select_decomp_table
from torch.fx.experimental.proxy_tensor import make_fx

import compile_tools

torch.manual_seed(0)
aten = torch.ops.aten


def aten_ops(graph_module):
    """The ATen operators a graph calls, in order, without the `getitem`s that unpack tuples."""
    calls = [str(n.target) for n in graph_module.graph.nodes if n.op == "call_function"]
    return [name for name in calls if "getitem" not in name]


def aten_graph(fn, *args, **aot_options):
    """The forward ATen graph AOTAutograd builds from `fn`, with the given `decompositions=` (or none)."""
    graphs = []

    def keep(graph_module, example_inputs):
        graphs.append(graph_module)
        return graph_module.forward

    torch._dynamo.reset()
    torch.compile(fn, backend=aot_autograd(fw_compiler=keep, **aot_options))(*args)
    return graphs[0]


# --8<-- [start:function]
def block(x, weight, bias):
    h = torch.nn.functional.layer_norm(x, (16,), weight, bias)
    return torch.nn.functional.silu(h) + torch.nn.functional.gelu(h)


x = torch.randn(4, 16)
weight = torch.randn(16)
bias = torch.randn(16)
# --8<-- [end:function]

# --8<-- [start:before]
undecomposed = aten_graph(block, x, weight, bias)  # aot_autograd with no decompositions= at all
print("ATen graph, no decomposition:", ", ".join(aten_ops(undecomposed)))
# --8<-- [end:before]
assert aten_ops(undecomposed) == [
    "aten.native_layer_norm.default",
    "aten.silu.default",
    "aten.gelu.default",
    "aten.add.Tensor",
], aten_ops(undecomposed)

# --8<-- [start:inductor-graph]
torch._dynamo.reset()
no_caches = torch._functorch.config.patch(enable_autograd_cache=False)  # a cache hit would skip the trace
with no_caches, torch._inductor.config.patch(fx_graph_cache=False), compile_tools.captured_logs(aot_graphs=True) as log:
    torch.compile(block)(x, weight, bias)  # the default backend, Inductor
graph_text = log.getvalue().split("TRACED GRAPH")[1]  # after it: the graph Inductor was handed
compile_tools.print_lines(
    graph_text,
    keep=lambda line: any(part in line for part in ("torch.ops.", "code:", "= var_mean[", "return")),
    why_cut="the log's header and the forward signature",
)
inductor_ops = re.findall(r"torch\.ops\.(aten\.\w+\.\w+)\(", graph_text)
# --8<-- [end:inductor-graph]
for composite in ("native_layer_norm", "silu", "gelu"):
    assert not any(f".{composite}." in op for op in inductor_ops), f"{composite} was decomposed: {inductor_ops}"
assert {"aten.var_mean.correction", "aten.rsqrt.default", "aten.exp.default", "aten.erf.default"} <= set(inductor_ops)
# The same graph comes out of aot_autograd given Inductor's table: that table is all that changed.
assert aten_ops(aten_graph(block, x, weight, bias, decompositions=select_decomp_table())) == inductor_ops

# --8<-- [start:tables]
registry = global_decomposition_table["post_autograd"]  # everything @register_decomposition registered
core = core_aten_decompositions()
inductor = select_decomp_table()
print(f"{'table':58} entries")
print(f"{'torch._decomp.global_decomposition_table[post_autograd]':58} {len(registry)}")
print(f"{'torch._decomp.core_aten_decompositions()':58} {len(core)}")
print(f"{'torch._inductor.decomposition.select_decomp_table()':58} {len(inductor)}")
print()
print(f"{'operator':32} {'registry':>9} {'core':>5} {'inductor':>9}")
for op in (aten.silu.default, aten.gelu.default, aten.native_layer_norm.default, aten._softmax.default):
    print(f"{str(op):32} {op in registry!s:>9} {op in core!s:>5} {op in inductor!s:>9}")
print()
added, removed = set(inductor) - set(core), set(core) - set(inductor)
print(f"Inductor's table against Core ATen's: {len(added)} entries added, {len(removed)} removed")
# --8<-- [end:tables]
assert len(inductor) == len(core) + len(added) - len(removed)
not_registered = set(core) - set(registry)
assert all(
    torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd") for op in not_registered
), "core's entries that are not in the registry are CompositeImplicitAutograd ops (their C++ code is the decomposition)"
assert aten.silu.default in core, "silu is decomposed even for the Core ATen IR"
assert aten.gelu.default not in core and aten.native_layer_norm.default not in core, "they are Core ATen operators"
assert all(op in inductor and op in registry for op in (aten.gelu.default, aten.native_layer_norm.default))
assert set(inductor_table) <= set(inductor), "select_decomp_table() starts from inductor's `decompositions` dict"


# --8<-- [start:custom]
my_table = {}  # a private registry: nothing global changes


@register_decomposition(aten.gelu.default, registry=my_table)
def sigmoid_gelu(x, approximate="none"):
    return x * torch.sigmoid(1.702 * x)  # the sigmoid approximation of GELU


print("make_fx, no table:   ", ", ".join(aten_ops(make_fx(block)(x, weight, bias))))
print("make_fx, my_table:   ", ", ".join(aten_ops(make_fx(block, decomposition_table=my_table)(x, weight, bias))))
custom = aten_graph(block, x, weight, bias, decompositions=my_table)
print("aot_autograd, my_table:", ", ".join(aten_ops(custom)))
(approximate,) = custom(x, weight, bias)  # the captured graph is callable: it returns its outputs
print("max |sigmoid GELU - exact GELU| here:", (approximate - block(x, weight, bias)).abs().max().item())
# --8<-- [end:custom]
custom_ops = aten_ops(custom)
assert custom_ops == [
    "aten.native_layer_norm.default",
    "aten.silu.default",
    "aten.mul.Tensor",
    "aten.sigmoid.default",
    "aten.mul.Tensor",
    "aten.add.Tensor",
], custom_ops
assert list(my_table) == [aten.gelu.default], "register_decomposition(registry=...) filled only my_table"
assert registry[aten.gelu.default] is not sigmoid_gelu, "the global registry still has torch's own gelu decomposition"
