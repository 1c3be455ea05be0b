"""The benchmark harness pointed at a model of your own: a two-layer MLP, in inference.

Run it as it is: `python examples/benchmarking/harness.py` (on a GPU if torch sees one; the site records it on
the CPU). Copy `examples/benchmarking/_harness.py`, `_profile_diff.py` and `examples/compile_tools.py` next to
your code to do the same with your model.
"""

# execdocs: devices=cpu

# --8<-- [start:own-model]
import torch
from torch import nn

import compile_tools
from benchmarking import _harness

device = compile_tools.device()
model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64)).to(device)
result = _harness.measure(model, lambda: (torch.randn(32, 64, device=device),), train=False)
print(f"eager {result['eager_ms']:.3f} ms, compiled {result['compiled_ms']:.3f} ms, "
      f"{result['speedup']:.2f}x, compiled in {result['compile_s']:.1f} s")  # fmt: skip
_harness.release(model)
# --8<-- [end:own-model]
assert result["graphs"] == 1 and result["relative_error"] < 0.05, "one graph, and the compiled output is eager's"
