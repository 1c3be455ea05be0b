"""How Inductor's Scheduler fuses: the nodes before fusion, its decisions, the nodes after.

Run it as it is: `python examples/inductor/scheduler.py` (on a GPU if torch sees one).
"""

import re

import torch

import compile_tools
from _fusion import compile_and_log

torch.manual_seed(0)
device = compile_tools.device()
tokens, width = (2048, 1024) if device.type == "cuda" else (64, 128)


# --8<-- [start:function]
def block(x, w, b):
    h = torch.relu(x @ w + b)
    return torch.softmax(h, dim=-1)


x = torch.randn(tokens, width, device=device)
w = torch.randn(width, width, device=device)
b = torch.randn(width, device=device)
compiled = compile_and_log(block, x, w, b)
# --8<-- [end:function]


def node_table(log):
    """One line per scheduler node of a pre-fusion log: kind, loop ranges, buffers read and written."""
    rows = []
    for text in re.split(r"\n(?=op\d+: )", log):
        if not (head := re.match(r"(op\d+): (\w+)", text)):
            continue
        name, kind = head.groups()
        writes = re.findall(r"'(buf\d+)'", re.search(rf"{name}\.writes = (.*)", text).group(1))
        unmet = text.split(f"{name}.unmet_dependencies =")[1].split(f"{name}.met_dependencies")[0]
        reads = sorted(set(re.findall(r"'(buf\d+)'", unmet)))
        sizes = re.search(rf"{name}\.sizes = (.*)", text)
        extern = re.search(rf"{name}\.node\.kernel = (.*)", text)
        what = sizes.group(1) if sizes else extern.group(1) if extern else "(extern call)"
        rows.append((name, kind, what, reads, writes))
    return rows


# --8<-- [start:nodes-before]
before = node_table(compiled.pre_fusion)
print(f"{'node':5} {'kind':27} {'loops (outer), (reduced) / call':34} reads -> writes")
for name, kind, what, reads, writes in before:
    print(f"{name:5} {kind:27} {what:34} {', '.join(reads) or '-'} -> {', '.join(writes)}")
# --8<-- [end:nodes-before]
on_gpu = device.type == "cuda"
softmax_nodes = 3 if on_gpu else 4  # on the GPU, max and sum come from one online reduction
assert [kind for _, kind, *_ in before] == ["ExternKernelSchedulerNode"] + ["SchedulerNode"] * softmax_nodes, before
assert "extern_kernels." in before[0][2], "the matrix product is a library call"
reductions = [name for name, kind, what, *_ in before if what.endswith(f"[{width}])")]
assert reductions == (["op1", "op2"] if on_gpu else ["op1", "op3"]), "max and sum reduce over the rows' width"
if on_gpu:
    assert before[-1][3] == ["buf0", "buf1", "buf2"], "the pointwise node reads the product, the max and the sum"
    op_blocks = re.split(r"\n(?=op\d+: )", compiled.pre_fusion)
    online = [text.split(":")[0] for text in op_blocks if "'online_softmax_reduce'" in text]
    assert online == ["op1", "op2"], online

# --8<-- [start:fusion-log]
compile_tools.print_lines(
    compiled.fusion,
    keep=lambda line: not line.startswith("  ") and "candidates:" not in line,
    why_cut="the candidate list of each round: every node, with the source lines it came from",
)
# --8<-- [end:fusion-log]
fusion_lines = compiled.fusion.splitlines()
fusing_lines = [line for line in fusion_lines if line.startswith("fusing ")]
if on_gpu:  # the two reductions together, then the pointwise node as their epilogue, in one round
    assert fusing_lines == ["fusing op1 with op2", "fusing op1_op2 with op3"], fusing_lines
    assert "completed fusion round (1/10): fused 4 nodes into 2 nodes" in fusion_lines
    assert not any(line.startswith("cannot fuse") for line in fusion_lines)
else:  # C++: the pointwise exp into its sum first, then outer-loop fusion
    assert "cannot fuse op2 with op4: intermediate nodes between node1 & node2" in fusion_lines
    assert fusing_lines == ["fusing op2 with op3", "fusing op1 with op2_op3", "fusing op1_op2_op3 with op4"]
assert not any(line.startswith(("fusing op0 ", "cannot fuse op0 ")) for line in fusion_lines), (
    "the extern node is never even proposed as a fusion"
)

# --8<-- [start:nodes-after]
print("nodes after fusion:")
for name, kind in compiled.nodes_after:
    print(f"  {name}: {kind}")
print("generated kernels:", compiled.kernels)
print()
print(compiled.call())
# --8<-- [end:nodes-after]
extern_after = [name for name, kind in compiled.nodes_after if kind == "ExternKernelSchedulerNode"]
fused_after = [name for name, kind in compiled.nodes_after if kind != "ExternKernelSchedulerNode"]
assert extern_after == ["op0"], compiled.nodes_after
assert fused_after == (["op1_op2_op3"] if on_gpu else ["op1_op2_op3_op4"]), compiled.nodes_after
assert len(compiled.kernels) == len(fused_after) == 1, compiled.kernels
assert "relu" in compiled.kernels[0], "the relu, inlined into the softmax's nodes, is in the kernel"
if on_gpu:
    assert compiled.kernels[0].startswith("triton_per_"), "a persistent reduction: a whole row in one block"
    assert "extern_kernels.mm(" in compiled.call(), "cuBLAS without the bias, then one Triton kernel"
    assert "buf3 = buf0; del buf0  # reuse" in compiled.call(), "the softmax is written over the product"
else:
    assert "extern_kernels.addmm(" in compiled.call(), "the bias add goes into the library call"
