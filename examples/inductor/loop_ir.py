"""Inductor's loop-level IR for one small function: what TORCH_LOGS=ir_pre_fusion prints.

Run it as it is: `python examples/inductor/loop_ir.py` (on a GPU if torch sees one).
"""

import re

import torch

import compile_tools
from _fusion import compile_and_log

torch.manual_seed(0)
device = compile_tools.device()
rows, cols = (1024, 512) if device.type == "cuda" else (64, 128)


# --8<-- [start:function]
def scaled_softmax(x, w):
    y = x * w + 1.0  # pointwise
    m = y.amax(dim=-1, keepdim=True)  # a reduction over each row
    e = torch.exp(y - m)  # pointwise, reads the row's maximum
    return e / e.sum(dim=-1, keepdim=True)  # a second reduction, then pointwise


x = torch.randn(rows, cols, device=device)
w = torch.randn(cols, device=device)
# --8<-- [end:function]

compiled = compile_and_log(scaled_softmax, x, w)
log = compiled.pre_fusion
blocks = re.split(r"\n(?=op\d+: )", log)  # one block of text per scheduler node
node_blocks = {block.split(":")[0]: block for block in blocks if re.match(r"op\d+: ", block)}

# --8<-- [start:first-node]
print(node_blocks["op0"].strip())
# --8<-- [end:first-node]
on_gpu = device.type == "cuda"
# On the GPU (Triton), max and sum of a softmax become one online reduction, shared by two nodes.
first_reduction = "online_softmax_reduce" if on_gpu else "max"
assert list(node_blocks) == (["op0", "op1", "op2"] if on_gpu else ["op0", "op1", "op2", "op3"]), list(node_blocks)
assert f"ops.reduction(torch.float32, torch.float32, '{first_reduction}'" in node_blocks["op0"]
assert "ops.store_reduction('buf0'" in node_blocks["op0"]
assert f"index0 = {cols}*p0 + p1" in node_blocks["op0"], "row-major x: row p0, column p1"
assert f"var_ranges = {{p0: {rows}, p1: {cols}}}" in node_blocks["op0"]
assert f"op0.sizes = ([{rows}], [{cols}])" in node_blocks["op0"], "rows outside, the reduced columns inside"
if on_gpu:
    assert "getitem = reduction[0]" in node_blocks["op0"] and "getitem_1 = reduction[1]" in node_blocks["op0"]

# --8<-- [start:all-bodies]
compile_tools.print_lines(
    log,
    keep=lambda line: re.match(r"op\d+: |op\d+\.sizes|class |\s+\w+ = ops\.", line) is not None,
    why_cut="dependencies, layouts, index definitions (get_index) and returns",
)
# --8<-- [end:all-bodies]
kinds = [(name, "ops.reduction(" in block, "ops.store(" in block) for name, block in node_blocks.items()]
if on_gpu:  # two reductions (the same online one, storing max and sum), then one pointwise node
    assert kinds == [("op0", True, False), ("op1", True, False), ("op2", False, True)], kinds
    assert "ops.store_reduction('buf0', get_index_2, getitem)" in node_blocks["op0"], "op0 keeps the max"
    assert "ops.store_reduction('buf1', get_index_2, getitem_1)" in node_blocks["op1"], "op1 keeps the sum"
    assert "'online_softmax_reduce'" in node_blocks["op1"]
    assert all("ops.mul(" in block for block in node_blocks.values()), "y = x * w + 1 is recomputed in all three"
    assert not any(f"'buf{i}'" in log for i in range(3, 10)), "three buffers only: y has none of its own"
else:  # max, exp (a buffer: two readers), sum, division
    assert kinds == [("op0", True, False), ("op1", False, True), ("op2", True, False), ("op3", False, True)], kinds
    assert all("ops.mul(" in node_blocks[name] for name in ("op0", "op1")), "y = x * w + 1 is recomputed in both"
    assert "ops.mul(" not in node_blocks["op2"] + node_blocks["op3"]
    assert "'max'" in node_blocks["op0"] and "'sum'" in node_blocks["op2"]
    assert not any(f"'buf{i}'" in log for i in range(4, 10)), "four buffers only: y has none of its own"

# --8<-- [start:one-kernel]
print("scheduler nodes before fusion:", [name for name, kind in compiled.nodes_before])
print("after fusion:", compiled.nodes_after)
print("generated kernels:", compiled.kernels)
# --8<-- [end:one-kernel]
assert len(compiled.nodes_before) == len(node_blocks) and len(compiled.nodes_after) == 1, compiled.nodes_after
assert len(compiled.kernels) == 1, compiled.kernels
fused_kind = "FusedSchedulerNode" if on_gpu else "OuterLoopFusedSchedulerNode"
assert compiled.nodes_after[0][1] == fused_kind, compiled.nodes_after
if on_gpu:  # a persistent reduction (a whole row per block), named after the online-softmax prim
    assert compiled.kernels[0].startswith("triton_per_") and "prepare_softmax_online" in compiled.kernels[0]
