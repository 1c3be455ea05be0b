"""The profile diff on a model that breaks its graph, and on one whose graph fails to compile.

Run it as it is: `python examples/benchmarking/diff_bad_input.py`. It runs on the CPU, where the diff
is of CPU ops, and says so.
"""
# execdocs: devices=cpu

import _diff_model
import torch
from torch import nn

torch.manual_seed(0)


class TwoHalves(nn.Module):
    """Two small MLP blocks, with a graph break between them."""

    def __init__(self, width: int = 256):
        super().__init__()
        self.first = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.LayerNorm(width))
        self.second = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.LayerNorm(width))

    def forward(self, x):
        x = self.first(x)
        torch._dynamo.graph_break()  # what a print() or a .item() in a model does to Dynamo
        return self.second(x)


x = torch.randn(64, 256)

# --8<-- [start:breaks]
broken = _diff_model.diff_model(TwoHalves(), x)
# --8<-- [end:breaks]
assert (broken["graphs"], broken["failed"]) == (2, 0), broken
assert "Inductor C++ kernel" in broken["compiled_ops"], "both halves ran Inductor's kernels"

# --8<-- [start:fails]
# A machine without the C++ compiler Inductor needs for CPU kernels: compiling fails
with torch._inductor.config.patch({"cpp.cxx": (None, "no-such-compiler"), "force_disable_caches": True}):
    failing = _diff_model.diff_model(TwoHalves(), x)
# --8<-- [end:fails]
# the failed frame runs eagerly: its break is never reached, and the compiled side runs eager's ops
assert (failing["graphs"], failing["failed"]) == (1, 1), failing
assert failing["compiled_ops"] == failing["eager_ops"], failing
