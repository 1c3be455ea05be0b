"""One small module shown at the four IR levels: Torch IR, ATen IR, Core ATen IR and Prims IR.

Run it as it is: `python examples/ir-levels/levels.py`. Nothing here depends on the device, and
nothing is compiled to machine code: each level is a graph, captured and printed, so the example
stays on the CPU everywhere.
"""


import torch
from torch._prims.context import TorchRefsMode
from torch.fx.experimental.proxy_tensor import make_fx

import compile_tools
from _program import NormLinearGelu, operators

torch.manual_seed(0)


def show_graph(graph_module):
    print(graph_module.print_readable(print_output=False, include_stride=False, include_device=False))


# --8<-- [start:program]
model = NormLinearGelu().eval()
x = torch.randn(4, 16)
# --8<-- [end:program]

# --8<-- [start:torch-ir]
recorder = compile_tools.GraphRecorder()
torch._dynamo.reset()
torch.compile(model, backend=recorder)(x)
torch_ir = recorder.graphs[0]
show_graph(torch_ir)
print("operations:", [getattr(op, "__name__", op) for op in operators(torch_ir)])
# --8<-- [end:torch-ir]
assert len(recorder.graphs) == 1
assert len(operators(torch_ir)) == 4, "one node per call: layer_norm, linear, gelu, softmax"
assert not any(isinstance(op, torch._ops.OpOverload) for op in operators(torch_ir)), "Python callables, not ATen"

# --8<-- [start:aten-ir]
exported = torch.export.export(model, (x,))
aten_ir = exported.graph_module
show_graph(aten_ir)
# --8<-- [end:aten-ir]
aten_ops = [str(op) for op in operators(aten_ir)]
assert all(isinstance(op, torch._ops.OpOverload) and op.namespace == "aten" for op in operators(aten_ir))
assert len(aten_ops) == 4 and "aten.linear.default" in aten_ops, aten_ops  # still one op per call
assert "aten.layer_norm.default" in aten_ops, aten_ops

# --8<-- [start:core-aten]
core = exported.run_decompositions()  # the default table: torch._decomp.core_aten_decompositions()
core_ir = core.graph_module
show_graph(core_ir)
print("every op tagged core:", all(torch.Tag.core in op.tags for op in operators(core_ir)))
# --8<-- [end:core-aten]
core_ops = [str(op) for op in operators(core_ir)]
assert "aten.linear.default" not in core_ops and "aten.addmm.default" in core_ops, core_ops
assert "aten.permute.default" in core_ops, core_ops  # the weight's transpose, as a permute
assert "aten.native_layer_norm.default" in core_ops and "aten._softmax.default" in core_ops, core_ops
assert "aten.gelu.default" in core_ops, "gelu is itself a Core ATen op: it stays"
assert all(torch.Tag.core in op.tags for op in operators(core_ir)), "every op is in the Core ATen set"
assert torch.Tag.core in torch.ops.aten.convolution.default.tags, "convolution is a Core ATen op too"

# --8<-- [start:prims]
with torch.no_grad(), TorchRefsMode():  # every aten op with a decomposition runs it, down to prims
    prims_ir = make_fx(core.module())(x)
print(prims_ir.code.strip())
prims_ops = [str(op) for op in operators(prims_ir)]
print("prims.* nodes:", sum(op.startswith("prims.") for op in prims_ops), "of", len(prims_ops))
print("not prims:", sorted({op for op in prims_ops if not op.startswith("prims.")}))
# --8<-- [end:prims]
assert len(prims_ops) > 5 * len(core_ops), (len(prims_ops), len(core_ops))
assert [op for op in prims_ops if not op.startswith("prims.")] == ["aten.mm.default"], prims_ops
assert "prims.erf.default" in prims_ops, "gelu (exact) became 0.5 * x * (1 + erf(x / sqrt(2)))"
assert "prims.broadcast_in_dim.default" in prims_ops, "broadcasting is explicit at this level"
assert "prims.convert_element_type.default" not in prims_ops, "all float32: no type conversion needed"
all_names = torch._C._dispatch_get_all_op_names()
prim_names = {name.split("::")[1].split(".")[0] for name in all_names if name.startswith("prims::")}
assert prim_names.isdisjoint({"mm", "bmm", "addmm", "matmul", "convolution"}), "no matrix product among the prims"
torch.testing.assert_close(prims_ir(x), model(x))
