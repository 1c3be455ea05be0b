# %% [markdown]
# # Lab 7: Turn a library call into an operator
#
# Some code is out of Dynamo's reach: a NumPy routine it does not translate, a C library. Each
# call breaks the graph. Rewriting it in torch is one fix; when that is not possible, or not worth
# it, register the function as a **custom operator** with a **fake implementation**, and the
# whole model compiles as one graph, with the library call as one node.
#
# Background: [Custom operators](../extending/custom_ops.md).
#
# The function hands its tensor to NumPy, so this lab runs on the CPU everywhere. The checks use
# `backend="eager"`: they test the capture, and skip compiling kernels.

# %%
import logging

import numpy as np
import torch

torch.manual_seed(0)
x = torch.randn(64)

# A tone curve, as a lookup table: values in [0, 1] are mapped through it, piecewise linearly.
CURVE_IN = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
CURVE_OUT = np.array([0.0, 0.1, 0.45, 0.85, 1.0])


def tone_numpy(x: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.interp(x.numpy(), CURVE_IN, CURVE_OUT)).to(x.dtype)


def model_numpy(x):
    return tone_numpy(torch.sigmoid(x)) * 2


torch._logging.set_logs(dynamo=logging.ERROR)  # the reason is printed below; skip Dynamo's own warnings
report = torch._dynamo.explain(model_numpy)(x)
reason = report.break_reasons[0].reason.splitlines()[0]
print(f"{report.graph_count} graphs, {report.graph_break_count} breaks: {reason}")
print("operations in each graph:", [[getattr(op, "__name__", str(op)) for op in ops] for ops in report.ops_per_graph])
for break_reason in report.break_reasons:
    frame = break_reason.user_stack[-1]
    print(f"  break reason in {frame.name}, line {frame.lineno}: {break_reason.reason.splitlines()[0]}")

# %% [markdown]
# One NumPy call, four graphs. `graph_break_count` is `graph_count - 1`, not a count of breaks
# (see [explain and the logs](../debugging/explain_and_logs.md)). The break happens twice at the
# same line, `np.interp`, once per Python frame: Dynamo first traces `model_numpy` with
# `tone_numpy` inlined, meets the call, and splits `model_numpy` around the call to `tone_numpy`
# (a graph with the `sigmoid` before it, one with the `* 2` after it); then `tone_numpy` runs as a
# frame of its own, and Dynamo splits it around `np.interp` too (the `x.numpy()` before, whose
# graph holds no `call_function`, and the `torch.from_numpy(...)` after, `as_tensor`).

# %% [markdown]
# ## Task: an operator with a fake implementation
#
# Define `tone` as a custom operator named `"lab::tone"` with `torch.library.custom_op`: its body
# calls `tone_numpy`, its type hints give the schema (`x: torch.Tensor -> torch.Tensor`), and it
# mutates none of its arguments. Then register a fake implementation with `tone.register_fake`:
# a function of the same arguments that returns an empty tensor of the output's shape, dtype and
# device, computing nothing.
#
# The placeholder below is the NumPy function itself, so the check fails until you replace it.

# %%
# TODO: make `tone` a custom operator "lab::tone" with a fake implementation.
tone = tone_numpy


# %% tags=["solution"]
@torch.library.custom_op("lab::tone", mutates_args=())
def tone(x: torch.Tensor) -> torch.Tensor:
    return tone_numpy(x)


@tone.register_fake
def _(x):
    return torch.empty_like(x)


# %% tags=["check"]
def model(x):
    return tone(torch.sigmoid(x)) * 2


torch._dynamo.reset()
try:
    got = torch.compile(model, fullgraph=True, backend="eager")(x)
except Exception as error:  # fullgraph=True turns a graph break into this error
    first_line = str(error).strip().splitlines()[0]
    raise AssertionError(f"the model still breaks the graph: {first_line}") from None
torch.testing.assert_close(got, model_numpy(x))
assert isinstance(tone, torch._library.custom_ops.CustomOpDef), "tone compiles, but is not a custom operator"
results = torch.library.opcheck(tone, (torch.rand(8),))
assert set(results.values()) == {"SUCCESS"}, f"opcheck found a problem: {results}"
print("one graph, the same result as the NumPy version; opcheck:", results)

# %% [markdown]
# The graph Dynamo captured, and what Inductor makes of it: the operator is one node, and Inductor
# calls it as it is, between the kernels it generates for what comes before and after it. (The
# first kernel's name lists `tone` among the graph nodes Inductor credits it with; the operator
# itself runs on the next line, `torch.ops.lab.tone.default(...)`, outside any generated kernel.)

# %%
import compile_tools  # noqa: E402
from torch._inductor.utils import run_and_get_code  # noqa: E402

if isinstance(tone, torch._library.custom_ops.CustomOpDef):
    recorder = compile_tools.GraphRecorder()
    torch._dynamo.reset()
    torch.compile(model, fullgraph=True, backend=recorder)(x)
    print(recorder.graphs[0].code.strip())
    torch._dynamo.reset()
    _, sources = run_and_get_code(torch.compile(model, fullgraph=True), x)
    call_body = compile_tools.lines_between(sources[0], "def call(", "return (")
    print("\nInductor's call():")
    calls = [line for line in call_body.splitlines() if not line.strip().startswith("assert")]
    print("\n".join(line for line in calls if "cpp_fused" in line or "torch.ops.lab" in line))
else:
    print("solve the task first: tone is not a custom operator yet")

# %% [markdown]
# ## What to remember
#
# - A custom operator is **one node** of the graph: Dynamo does not trace into it, and its body
#   runs unchanged on real tensors.
# - The fake implementation is what tracing runs instead: it only has to get the output's
#   **shape, dtype and device** right. `torch.library.opcheck` checks that it does.
# - Inductor cannot fuse across the operator: it calls it between its own kernels, as the last
#   cell shows. Where a rewrite in torch exists, it lets Inductor fuse the work with its
#   neighbours (this lab does not time the two).
