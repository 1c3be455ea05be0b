"""Which dtype a bf16-autocast model's backward matrix products run in: eager, torch.compile(model), the same
with one AOTAutograd setting changed, and the whole step under compiled autograd. BERT-base's layers made
small, on the CPU: what differs is how each traces the backward, not a device's kernels.

Run it as it is: `python examples/benchmarking/backward_autocast.py`.
"""
# The dtypes come from tracing, the same on any device: the CPU keeps the example small.
# execdocs: devices=cpu

from collections import Counter

import torch
import torch._functorch.config
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils._python_dispatch import TorchDispatchMode

from benchmarking import _harness, _whole_step, _zoo

SMALL = dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=2, intermediate_size=256)
PRODUCTS = {"mm", "bmm", "addmm", "baddbmm"}
DTYPES = {torch.bfloat16: "bf16", torch.float32: "fp32"}

model = _zoo.build("BERT-base", torch.device("cpu"), **SMALL).train()
# a small batch: only the dtypes matter here
inputs = _zoo.input_maker("BERT-base", model, torch.device("cpu"), train=True, batch=2, seq=64)()


def product_dtypes(calls) -> str:
    """'mm bf16 x24, bmm fp32 x8': the matrix products among (op name, input tensors) calls, by input dtype."""
    counts = Counter()
    for name, tensors in calls:
        if name in PRODUCTS:
            counts[(name, "/".join(sorted({DTYPES.get(t.dtype, str(t.dtype)) for t in tensors})))] += 1
    return ", ".join(f"{name} {dtype} x{count}" for (name, dtype), count in sorted(counts.items()))


def graph_calls(graph: torch.fx.GraphModule) -> list:
    """(op name, input values) of every ATen call in one of AOTAutograd's graphs."""
    calls = []
    for node in graph.graph.nodes:
        if node.op == "call_function" and hasattr(node.target, "_opname"):
            values = [arg.meta["val"] for arg in node.args if isinstance(arg, torch.fx.Node) and "val" in arg.meta]
            calls.append((node.target._opname, [v for v in values if isinstance(v, torch.Tensor)]))
    return calls


class Calls(TorchDispatchMode):
    """Every ATen op that runs while it is active, with its tensor inputs: eager's backward, as it runs."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls.append((func._opname, [arg for arg in args if isinstance(arg, torch.Tensor)]))
        return func(*args, **(kwargs or {}))


def keeping(graphs: list):
    """A backend that runs AOTAutograd and keeps each graph it compiles as (kind, compiled autograd's captures
    so far, graph): a graph compiled once compiled autograd has begun a capture is the backward it captured."""

    def keep(kind):
        def compiler(graph, example_inputs):
            graphs.append((kind, torch._dynamo.utils.counters["compiled_autograd"]["captures"], graph))
            return make_boxed_func(graph.forward)

        return compiler

    return aot_autograd(fw_compiler=keep("forward"), bw_compiler=keep("backward"))


# --8<-- [start:dtypes]
rows = {}
with sdpa_kernel(SDPBackend.MATH):  # eager, on the math path that the compiled graph takes
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = _harness.default_loss(model(**inputs))
    with Calls() as backward_calls:
        loss.backward()
rows["eager, SDPA's math path"] = product_dtypes(backward_calls.calls)
model.zero_grad(set_to_none=True)

for setting in ("same_as_forward", "off"):
    torch._dynamo.reset()
    graphs = []
    with torch._functorch.config.patch(backward_pass_autocast=setting):
        compiled = torch.compile(model, backend=keeping(graphs))
        _whole_step.backward(compiled, inputs)
    rows[f"torch.compile(model), backward_pass_autocast={setting!r}"] = product_dtypes(
        graph_calls(next(g for kind, _, g in graphs if kind == "backward"))
    )
    model.zero_grad(set_to_none=True)

torch._dynamo.reset()
graphs = []
with torch._dynamo.config.patch(compiled_autograd=True):
    whole_step = torch.compile(lambda: _whole_step.backward(model, inputs), backend=keeping(graphs))
whole_step()
captured = next(graph for _, captures, graph in graphs if captures > 0)  # AOTAutograd sees it as a forward graph
rows["forward and backward under compiled autograd"] = product_dtypes(graph_calls(captured))

# The torch release is in the output's stamp: this line stays the same where the default does
print(f"backward_pass_autocast defaults to {torch._functorch.config.backward_pass_autocast!r}")
print("the backward's matrix products of BERT-base made small (2 layers), bf16 autocast, by input dtype:")
for way, products in rows.items():
    print(f"  {way:<62} {products}")
# --8<-- [end:dtypes]

attention_fp32 = "bmm fp32 x8"  # 2 layers x 4: the attention's two products, each with two gradients
assert attention_fp32 in rows["eager, SDPA's math path"], rows
assert "bmm bf16 x8" in rows["torch.compile(model), backward_pass_autocast='same_as_forward'"], rows
assert attention_fp32 in rows["torch.compile(model), backward_pass_autocast='off'"], rows
assert attention_fp32 in rows["forward and backward under compiled autograd"], rows
# The pooler's two products, for the gradients of its weight and of its input: the compiled model's backward
# computes them (from zeros), eager's and compiled autograd's do not
assert (
    "mm bf16 x24" in rows["eager, SDPA's math path"]
    and "mm bf16 x24" in rows["forward and backward under compiled autograd"]
)
assert "mm bf16 x26" in rows["torch.compile(model), backward_pass_autocast='same_as_forward'"], rows
