"""Ten real architectures, eager against torch.compile, inference in bf16 autocast on a GPU.

Run it as it is: `python examples/benchmarking/zoo_inference.py`. It needs a GPU and takes a few
minutes there, most of it compiling.
"""
# execdocs: devices=cuda

import json
import time

import _harness
import _zoo
import torch

import compile_tools

started = time.perf_counter()
device = compile_tools.device()
BUDGET_S = 330  # start no new model after this: the whole script must stay under 7 minutes

# --8<-- [start:run]
rows = _zoo.run_zoo(_zoo.ZOO, device, train=False, budget_s=BUDGET_S, started=started)
# --8<-- [end:run]
if device.type == "cuda":
    assert len(rows) >= 8, f"only {len(rows)} models measured; see the run's FAILED and skipped lines"
    for r in rows:
        assert r["graphs"] >= 1 and r["output_finite"], f"{r['name']} did not compile or gave non-finite output"
        error = r["relative_error"]
        assert error < 0.1, f"{r['name']}: compiled output differs from eager by {error:.3f}"

# --8<-- [start:table]
_harness.print_table(rows)
spread = _harness.geomean([r["speedup"] for r in rows])
print(f"\ngeomean speedup {spread['geomean']:.2f}x over {spread['n']} models "
      f"(min {spread['min']:.2f}x, max {spread['max']:.2f}x, geometric std {spread['gstd']:.2f})")  # fmt: skip
# --8<-- [end:table]
if device.type == "cuda":
    eager_kernels, compiled_kernels = (sum(r[f"{k}_launches"] for r in rows) for k in ("eager", "compiled"))
    assert compiled_kernels < eager_kernels, f"fusion: {compiled_kernels} kernels compiled, {eager_kernels} eager"
    assert spread["geomean"] > 1.0, f"compiled inference should be faster on average, geomean {spread['geomean']:.2f}x"

# --8<-- [start:attribution]
_harness.print_attributions(rows)
# --8<-- [end:attribution]

# --8<-- [start:plot-data]
print(json.dumps({"mode": "inference", "models": rows, "geomean": spread}))
# --8<-- [end:plot-data]

# --8<-- [start:total-time]
print(f"total time of this script: {time.perf_counter() - started:.0f} s")
# --8<-- [end:total-time]
