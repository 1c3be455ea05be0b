"""One small function carried through the whole torch.compile pipeline.

Run it as it is: `python examples/overview/end_to_end.py` (on a GPU if torch sees one).
"""

import re
from collections import Counter

import torch
from torch._dynamo.backends.common import aot_autograd

import compile_tools

torch.manual_seed(0)
device = compile_tools.device()
# Big enough on the GPU for the timing to mean something, small enough to stay quick on a CPU.
batch, seq = (32, 1024) if device.type == "cuda" else (4, 256)

# --8<-- [start:function]
def attention_scores(q, k, bias):
    scores = (q @ k.transpose(-2, -1)) * 0.125 + bias
    return torch.softmax(scores, dim=-1)


q = torch.randn(batch, seq, 64, device=device)
k = torch.randn(batch, seq, 64, device=device)
bias = torch.randn(seq, seq, device=device)
# --8<-- [end:function]

# --8<-- [start:fx-graph]
dynamo_graphs = []


def keep_fx_graph(graph_module, example_inputs):
    """A Dynamo backend that only records the graph and runs it as it is."""
    dynamo_graphs.append(graph_module)
    return graph_module.forward


torch._dynamo.reset()
torch.compile(attention_scores, backend=keep_fx_graph)(q, k, bias)
fx_graph = dynamo_graphs[0]
print(fx_graph.print_readable(print_output=False, include_stride=False, include_device=False))
fx_ops = [node.target for node in fx_graph.graph.nodes if node.op in ("call_function", "call_method")]
print("operations in the graph:", len(fx_ops))
source_lines = Counter(
    int(re.findall(r"line (\d+)", node.meta["stack_trace"])[-1])
    for node in fx_graph.graph.nodes
    if node.op in ("call_function", "call_method")
)
print("nodes per source line:", dict(sorted(source_lines.items())))
# --8<-- [end:fx-graph]
assert len(dynamo_graphs) == 1, "one graph, no graph break"
assert len(fx_ops) == 5, fx_ops  # transpose, matmul, mul, add, softmax
assert sorted(source_lines.values()) == [1, 4], source_lines  # one line gave four nodes, one gave one

# --8<-- [start:aten-graph]
aten_graphs = []


def keep_aten_graph(graph_module, example_inputs):
    aten_graphs.append(graph_module)
    return graph_module.forward


torch._dynamo.reset()
torch.compile(attention_scores, backend=aot_autograd(fw_compiler=keep_aten_graph))(q, k, bias)
aten_graph = aten_graphs[0]
print(aten_graph.print_readable(print_output=False, include_stride=False, include_device=False))
aten_ops = sorted({str(node.target) for node in aten_graph.graph.nodes if node.op == "call_function"})
print("distinct ATen ops:", ", ".join(aten_ops))
# --8<-- [end:aten-graph]
assert "aten._softmax.default" in aten_ops or "aten.amax.default" in aten_ops, aten_ops

# --8<-- [start:generated-code]
torch._dynamo.reset()
compiled = torch.compile(attention_scores)
wrapper, *_ = compile_tools.generated_code(compiled, q, k, bias)
kernels = compile_tools.kernel_names(wrapper)
print("generated kernels:", kernels)
print()
print(compile_tools.lines_between(wrapper, "def call(", "return ("))
# --8<-- [end:generated-code]
assert len(kernels) == 1, f"the scale, the bias add and the softmax fuse into one kernel: {kernels}"
torch.testing.assert_close(compiled(q, k, bias), attention_scores(q, k, bias))

# --8<-- [start:kernel]
kernel_source = compile_tools.kernel_source(wrapper, kernels[0])
print(kernel_source)
# --8<-- [end:kernel]

# --8<-- [start:speedup]
eager_ms = compile_tools.timing_ms(attention_scores, q, k, bias)
compiled_ms = compile_tools.timing_ms(compiled, q, k, bias)
speedup = eager_ms["median"] / compiled_ms["median"]
for name, t in (("eager", eager_ms), ("compiled", compiled_ms)):
    print(f"{name:>8}: median {t['median']:.3f} ms  (20th-80th percentile {t['p20']:.3f}-{t['p80']:.3f} ms)")
print(f" speedup: {speedup:.2f}x on {device.type}")
if device.type == "cuda":
    eager_launches = compile_tools.gpu_kernel_launches(attention_scores, q, k, bias)
    compiled_launches = compile_tools.gpu_kernel_launches(compiled, q, k, bias)
    print(f"GPU kernels per call: eager {eager_launches}, compiled {compiled_launches}")
# --8<-- [end:speedup]
if device.type == "cuda":
    assert (eager_launches, compiled_launches) == (4, 2), "bmm, mul, add, softmax against bmm + one fused kernel"
    assert speedup > 1.5, f"the fused kernel moves about half the bytes; expected > 1.5x, got {speedup:.2f}x"
