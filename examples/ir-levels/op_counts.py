"""How many operators each IR level uses in a graph, and how many a backend must implement.

Run it as it is: `python examples/ir-levels/op_counts.py`. Only graphs are captured and operator
registries read, nothing is compiled to machine code, so the example stays on the CPU everywhere.
"""


import torch
from torch import nn
from torch._prims.context import TorchRefsMode
from torch.fx.experimental.proxy_tensor import make_fx

import compile_tools
from _program import NormLinearGelu, operators  # the program of the previous page

torch.manual_seed(0)


# --8<-- [start:four-levels]
def four_levels(model, x):
    """The same model as a Torch IR, an ATen IR, a Core ATen IR and a Prims IR graph."""
    recorder = compile_tools.GraphRecorder()
    torch._dynamo.reset()
    torch.compile(model, backend=recorder)(x)
    exported = torch.export.export(model, (x,))
    core = exported.run_decompositions()
    with torch.no_grad(), TorchRefsMode():
        prims = make_fx(core.module())(x)
    assert len(recorder.graphs) == 1, "one Dynamo graph, no graph break"
    return {
        "Torch IR": recorder.graphs[0],
        "ATen IR": exported.graph_module,
        "Core ATen": core.graph_module,
        "Prims": prims,
    }
# --8<-- [end:four-levels]


# --8<-- [start:graph-sizes]
programs = {
    "norm-linear-gelu": (NormLinearGelu().eval(), torch.randn(4, 16)),
    "transformer block": (
        nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True).eval(),
        torch.randn(2, 8, 64),
    ),
}
sizes = {}  # (program, level) -> (op nodes, distinct ops, distinct ops not in prims)
op_sets = {}  # (program, level) -> the distinct ops
print(f"| {'program':<17} | {'level':<9} | op nodes | distinct ops | of them not prims.* |")
print(f"|{'-' * 19}|{'-' * 11}|---------:|-------------:|--------------------:|")
for program, (model, x) in programs.items():
    for level, graph in four_levels(model, x).items():
        ops = [str(op) for op in operators(graph)]
        distinct = set(ops)
        not_prims = {op for op in distinct if not op.startswith("prims.")}
        sizes[program, level] = (len(ops), len(distinct), len(not_prims))
        op_sets[program, level] = distinct
        print(f"| {program:<17} | {level:<9} | {len(ops):>8} | {len(distinct):>12} | {len(not_prims):>19} |")
        if level == "Prims":
            prims_leftovers = sorted(not_prims)
print("transformer block, ops left that are not prims:", ", ".join(prims_leftovers))
aten_ir, core_aten = op_sets["transformer block", "ATen IR"], op_sets["transformer block", "Core ATen"]
print("transformer block, ATen IR ops gone in Core ATen:", ", ".join(sorted(aten_ir - core_aten)))
print("transformer block, Core ATen ops new since ATen IR:", ", ".join(sorted(core_aten - aten_ir)))
# --8<-- [end:graph-sizes]
levels = ["Torch IR", "ATen IR", "Core ATen", "Prims"]
for program in programs:
    nodes = [sizes[program, level][0] for level in levels]
    assert nodes == sorted(nodes), f"{program}: every level has at least as many nodes as the one above: {nodes}"
block = {level: sizes["transformer block", level] for level in levels}
assert block["Torch IR"][0] < 20 and block["Prims"][0] > 80, block
assert block["Prims"][2] <= 6, "at the Prims level only a handful of ATen ops are left"
attention = [op_sets["transformer block", level] for level in ("ATen IR", "Core ATen")]
assert "aten.scaled_dot_product_attention.default" in attention[0], "ATen IR still has attention as one op"
assert not any("scaled_dot_product" in op for op in attention[1]), "Core ATen spells attention out"
assert {"aten.bmm.default", "aten._softmax.default"} <= attention[1], "as batched matmuls and a softmax"
assert "aten.mm.default" in prims_leftovers and "aten.bmm.default" in prims_leftovers, prims_leftovers

# --8<-- [start:operator-sets]
import torch._prims  # noqa: E402,F401  (registers the prims with the dispatcher, if nothing has yet)

all_names = torch._C._dispatch_get_all_op_names()  # "namespace::name.overload", everything registered


def overload(name):
    """The OpOverload object for a registered name like 'aten::add.Tensor'."""
    namespace, rest = name.split("::")
    packet, _, overload_name = rest.partition(".")
    return getattr(getattr(getattr(torch.ops, namespace), packet), overload_name or "default")


aten_overloads = [name for name in all_names if name.startswith("aten::")]
aten_names = {name.split(".")[0] for name in aten_overloads}
out_or_inplace = [
    name for name in aten_overloads if "out" in name.partition(".")[2] or name.split(".")[0].endswith("_")
]
core_overloads = [name for name in aten_overloads if torch.Tag.core in overload(name).tags]
core_names = {name.split(".")[0] for name in core_overloads}
core_out_or_inplace = sorted(set(core_overloads) & set(out_or_inplace))
prims_names = {name.split(".")[0] for name in all_names if name.startswith("prims::")}

print(f"| {'operator set':<40} | {'operators':>9} | {'overloads':>9} |")
print(f"|{'-' * 42}|{'-' * 10}:|{'-' * 10}:|")
print(f"| {'ATen (all of torch.ops.aten)':<40} | {len(aten_names):>9} | {len(aten_overloads):>9} |")
print(f"| {'  of which out= or in-place overloads':<40} | {'':>9} | {len(out_or_inplace):>9} |")
print(f"| {'Core ATen (tagged torch.Tag.core)':<40} | {len(core_names):>9} | {len(core_overloads):>9} |")
print(f"| {'  of which out= or in-place overloads':<40} | {'':>9} | {len(core_out_or_inplace):>9} |")
print(f"| {'Prims (torch.ops.prims)':<40} | {len(prims_names):>9} | {'':>9} |")
# --8<-- [end:operator-sets]
assert 1200 <= len(aten_names) <= 2300 and 2500 <= len(aten_overloads) <= 4800, (len(aten_names), len(aten_overloads))
assert len(out_or_inplace) > len(aten_overloads) / 3, "a third or more of the overloads are out= or in-place"
assert 130 <= len(core_names) <= 240 and 150 <= len(core_overloads) <= 280, (len(core_names), len(core_overloads))
assert 90 <= len(prims_names) <= 200, len(prims_names)
assert len(aten_overloads) > 10 * len(core_overloads), "Core ATen is under a tenth of ATen's overloads"
assert len(core_out_or_inplace) <= 5, f"Core ATen is functional, bar a few: {core_out_or_inplace}"
