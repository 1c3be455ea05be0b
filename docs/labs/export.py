# %% [markdown]
# # Lab 6: Make a model exportable
#
# `torch.compile` forgives: where Dynamo cannot follow your code, it breaks the graph and runs that
# part in Python. `torch.export` does not: it must produce one graph that runs without Python,
# so it refuses a data-dependent branch, and with a dynamic batch it refuses code that only
# works for the batch size it was traced with.
#
# The model below has both problems. Your task is to rewrite its `forward` so that it exports
# with a dynamic batch, from 1 row to 1024, and computes the same result as the original.
#
# Background: [torch.export](../deploying/export.md).

# %%
import contextlib
import io
import logging

import compile_tools
import torch
from torch.export import Dim

device = compile_tools.device()
torch.manual_seed(0)


class Scorer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(32, 32)

    def forward(self, x):
        h = self.proj(x).view(8, 4, 8)  # the batch size of the example, written in
        scores = h.amax(dim=-1)
        if scores.mean() > 0:  # a Python branch on tensor data
            return scores
        return -scores


model = Scorer().to(device).eval()
x = torch.randn(8, 32, device=device)

# %% [markdown]
# First, see the refusal, without and with a dynamic batch. Both calls stop at the same line, the
# branch on tensor data (the cell prints the line of `forward` each error names): export reports
# the first problem it meets.

# %%
# The refusals are printed below; the shape system would also log a warning and print the whole graph.
logging.getLogger("torch.fx.experimental.symbolic_shapes").setLevel(logging.ERROR)
for dynamic_shapes in (None, {"x": {0: Dim("batch", min=1, max=1024)}}):
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            torch.export.export(model, (x,), dynamic_shapes=dynamic_shapes)
    except Exception as error:
        print(f"dynamic_shapes={dynamic_shapes}:\n  {type(error).__name__}: {str(error).strip().splitlines()[0]}")
        lines = str(error).splitlines()
        at = [i for i, line in enumerate(lines) if line.strip().startswith("File ") and "in forward" in line]
        if at:
            print(f"  at: {lines[at[-1] + 1].strip()}")

# %% [markdown]
# How to read the first line: tracing, `scores.mean() > 0` is a boolean tensor whose value depends
# on the data, so export stands for it with a symbol, `u0`, a value unknown until the model runs.
# The Python `if` needs a `bool`, which asks whether `u0` is 1 (true): `Eq(u0, 1)`. Export cannot
# decide that without the data, and stops.
#
# The batch written into `view` is a second problem, which export reports once the branch is gone.
# Here it is, with only the branch replaced:


# %%
class BranchFixed(Scorer):
    def forward(self, x):
        scores = self.proj(x).view(8, 4, 8).amax(dim=-1)  # still the batch of the example
        return torch.where(scores.mean() > 0, scores, -scores)


try:
    with contextlib.redirect_stderr(io.StringIO()):
        torch.export.export(BranchFixed(), (x,), dynamic_shapes={"x": {0: Dim("batch", min=1, max=1024)}})
except Exception as error:
    print("\n".join(str(error).strip().splitlines()[:2]))

# %% [markdown]
# ## Task: rewrite `forward`
#
# - The reshape: let the batch come from the input (`x.shape[0]`, or `-1`) instead of `8`.
# - The branch: keep the choice inside the graph. Both sides are cheap, so
#   `torch.where(condition, a, b)` computes both and picks one; `torch.cond` would also do.
#
# Then write `dynamic_shapes`: a dictionary from the argument's name to `{dimension: Dim(...)}`.
# The placeholders below are the original model and no dynamic dimension, so the check fails until
# you change them.

# %%
# TODO: a fixed model, and the dynamic_shapes that give it a batch from 1 to 1024 rows.
fixed_model = model
dynamic_shapes = None


# %% tags=["solution"]
class FixedScorer(Scorer):
    def forward(self, x):
        scores = self.proj(x).view(x.shape[0], 4, 8).amax(dim=-1)
        return torch.where(scores.mean() > 0, scores, -scores)


fixed_model = FixedScorer().to(device).eval()
fixed_model.load_state_dict(model.state_dict())
dynamic_shapes = {"x": {0: Dim("batch", min=1, max=1024)}}

# %% tags=["check"]
try:
    exported = torch.export.export(fixed_model, (x,), dynamic_shapes=dynamic_shapes)
except Exception as error:
    raise AssertionError(f"export still refuses: {str(error).strip().splitlines()[0]}") from None
batch_size = next(n for n in exported.graph.nodes if n.op == "placeholder" and n.name == "x").meta["val"].shape[0]
assert isinstance(batch_size, torch.SymInt), "the batch is still fixed: pass dynamic_shapes with a Dim for dimension 0"
for _ in range(3):  # random inputs, at the one batch size the original accepts
    sample = torch.randn(8, 32, device=device)
    torch.testing.assert_close(exported.module()(sample), model(sample))
for rows in (1, 37, 1024):
    got = exported.module()(torch.randn(rows, 32, device=device))
    assert got.shape == (rows, 4), f"a batch of {rows} gave shape {tuple(got.shape)}"
print("one graph, any batch from 1 to 1024, and the original's result at 8 rows")

# %% [markdown]
# ## What to remember
#
# - `torch.export` makes one graph that runs without Python, so it refuses what `torch.compile`
#   would break the graph for: a Python `if` on tensor data is a `GuardOnDataDependentSymNode`.
#   Keep the choice in the graph with `torch.where` (both sides computed) or `torch.cond`.
# - A dynamic dimension is declared with `Dim` in `dynamic_shapes`; code that fixes its size
#   (a literal batch in `view`) makes export refuse with "Constraints violated": take the size
#   from the input.
# - Export reports one problem at a time: fix it, and export again.
