# %% [markdown]
# # Lab 3: Fix the graph breaks
#
# A graph break splits a function into several graphs with plain Python in between: each graph
# is compiled on its own, nothing is fused across the break, and the Python in between runs
# uncompiled on every call. `torch.compile(fn, fullgraph=True)` turns every break into an error,
# which makes it the test that a function is captured whole.
#
# Below are three small functions, each breaking for a different reason. Rewrite each one so
# that it computes the same result **and** compiles with `fullgraph=True`.
#
# Background: [Graph breaks](../dynamo/graph_breaks.md).
#
# Graph capture does not depend on the device, and one function below calls NumPy, which needs
# CPU tensors, so this lab runs on the CPU everywhere. The checks use `backend="eager"`: they
# test the capture, and skip compiling kernels.

# %%
import contextlib
import io
import logging

import numpy as np
import torch

torch.manual_seed(0)
x = torch.randn(64)


def with_print(x):
    y = torch.sin(x) * 2
    print("mean of y:", y.mean())  # logging in the middle of the model
    return torch.cos(y)


def with_item(x):
    if x.sum().item() > 0:  # a Python bool from tensor data
        return x * 2
    return x - 1


EDGES = np.array([-1.0, 0.0, 1.0])


def with_numpy(x):
    buckets = np.digitize(x.numpy(), EDGES)  # a NumPy routine Dynamo does not model
    return x * torch.from_numpy(buckets)


originals = {"with_print": with_print, "with_item": with_item, "with_numpy": with_numpy}

# %% [markdown]
# First, see each break and its reason with `torch._dynamo.explain`:

# %%
torch._logging.set_logs(dynamo=logging.ERROR)  # the reasons are printed below; skip Dynamo's own warnings
for name, fn in originals.items():
    report = torch._dynamo.explain(fn)(x)
    reason = str(report.break_reasons[0].reason).splitlines()[0]
    print(f"{name}: {report.graph_count} graphs, {report.graph_break_count} break: {reason}")
    assert report.graph_break_count >= 1

# %% [markdown]
# ## Task: three rewrites
#
# - `with_print`: tensor values do not exist while Dynamo traces, so it cannot print them.
#   Drop the print, or return the value and print it outside the compiled function. Here,
#   just drop it (the end of the lab shows a way to keep it).
# - `with_item`: `.item()` makes a Python number out of tensor data, and the `if` needs it before
#   the tensor exists. Keep the choice inside the graph: compute both branches and pick one with
#   `torch.where`.
# - `with_numpy`: Dynamo translates many NumPy functions to torch, but not `np.digitize`. Use
#   the torch function that does the same thing: `torch.bucketize` (read its `right` argument:
#   `np.digitize` puts a value equal to an edge in the bucket *above* it).
#
# The placeholders below are the originals, so the check fails until you change them.

# %%
# TODO: rewrite each function so that torch.compile(..., fullgraph=True) accepts it.
fixed_print = with_print
fixed_item = with_item
fixed_numpy = with_numpy


# %% tags=["solution"]
def fixed_print(x):
    y = torch.sin(x) * 2
    return torch.cos(y)


def fixed_item(x):
    return torch.where(x.sum() > 0, x * 2, x - 1)


def fixed_numpy(x):
    buckets = torch.bucketize(x, torch.from_numpy(EDGES).to(x.dtype), right=True)
    return x * buckets


# %% tags=["check"]
fixes = {"with_print": fixed_print, "with_item": fixed_item, "with_numpy": fixed_numpy}
for name, fixed in fixes.items():
    torch._dynamo.reset()
    try:
        got = torch.compile(fixed, fullgraph=True, backend="eager")(x)
    except Exception as error:  # fullgraph=True turns the break into this error
        first_line = str(error).strip().splitlines()[0]
        raise AssertionError(f"{name} still breaks the graph: {first_line}") from None
    for sample in (x, -x.abs(), torch.tensor([-1.0, 0.0, 0.5, 1.0, 2.0])):  # both branches, and the edges
        with contextlib.redirect_stdout(io.StringIO()):  # the original with_print prints: not shown here
            expected = originals[name](sample)
        torch.testing.assert_close(torch.compile(fixed, fullgraph=True, backend="eager")(sample), expected)
    print(f"{name}: one graph, same results as the original")

# %% [markdown]
# ## What each fix cost
#
# What each rewrite does, from its definition (the lab does not time them):
#
# - Dropping a `print` is free. If you need the value, return it and print it outside the
#   compiled region, or log less often; or keep the `print` and let Dynamo move it after the
#   graph (next cell).
# - `torch.where` computes **both** branches and selects per element. For two cheap element-wise
#   branches that is a good trade against a break; for expensive branches, look at `torch.cond`,
#   which puts both branches in the graph but runs only one.
# - `torch.bucketize` keeps the computation on the tensor's device, so the NumPy round trip is
#   gone too (on a GPU, that is also a copy to the host and back).
#
# `torch._dynamo.config.reorderable_logging_functions` names functions Dynamo may move to the
# end of the graph instead of breaking it
# ([`_dynamo/config.py`](https://github.com/pytorch/pytorch/blob/v2.13.0/torch/_dynamo/config.py);
# it warns that an object mutated after the call prints its later value). With `print` in it,
# the original `with_print` compiles with `fullgraph=True`, and still prints:


# %%
with torch._dynamo.config.patch(reorderable_logging_functions={print}):
    torch._dynamo.reset()
    kept = torch.compile(with_print, fullgraph=True, backend="eager")(x)
with contextlib.redirect_stdout(io.StringIO()):
    torch.testing.assert_close(kept, with_print(x))
print("with_print, print kept: one graph, same result")

# %% [markdown]
#
# ## What to remember
#
# - `fullgraph=True` is the test that a function is captured in one graph: use it in your tests.
# - Anything that needs a tensor's *value* in Python (`print`, `.item()`, `.tolist()`, a
#   data-dependent `if`) breaks the graph; move the decision into tensor operations.
# - Calls into libraries Dynamo cannot see through break the graph; the torch equivalent keeps
#   the work in the graph.
