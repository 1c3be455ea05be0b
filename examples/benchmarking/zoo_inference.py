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
rows, skipped, failed = [], [], []
for name in _zoo.ZOO:
    if time.perf_counter() - started > BUDGET_S:
        skipped.append(name)
        continue
    model = None
    try:
        model = _zoo.build(name, device)
        make_inputs = _zoo.input_maker(name, model, device, train=False)
        result = _harness.measure(model, make_inputs, train=False, mode="default", dtype=torch.bfloat16)
        params_m = sum(p.numel() for p in model.parameters()) / 1e6
        rows.append({"name": name, "params_m": params_m, "attention": _zoo.attention_implementation(model), **result})
        print(f"{name:<14} {params_m:6.1f} M parameters, attention {rows[-1]['attention']:<6} "
              f"compiled in {result['compile_s']:5.1f} s, {result['graphs']} graph(s), "
              f"relative error vs eager {result['relative_error']:.1e}")  # fmt: skip
        for reason in result["graph_breaks"]:
            print(f"{'':<14} graph break: {reason}")
    except Exception as error:  # one model that fails must not hide the others' results
        failed.append(name)
        message = (str(error).splitlines() or ["(no message)"])[0][:200]
        print(f"{name:<14} FAILED: {type(error).__name__}: {message}")
    _harness.release(model)
print("failed:", ", ".join(failed) or "none")
print("skipped (time budget):", ", ".join(skipped) or "none")
# --8<-- [end:run]
if device.type == "cuda":
    assert len(rows) >= 8, f"only {len(rows)} models measured; failed {failed}, skipped {skipped}"
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
    eager_kernels, compiled_kernels = (sum(r[f"{k}_kernels"] for r in rows) for k in ("eager", "compiled"))
    assert compiled_kernels < eager_kernels, f"fusion: {compiled_kernels} kernels compiled, {eager_kernels} eager"
    assert spread["geomean"] > 1.0, f"compiled inference should be faster on average, geomean {spread['geomean']:.2f}x"

# --8<-- [start:outliers]
outliers = _harness.print_outliers(rows)
# --8<-- [end:outliers]

# --8<-- [start:plot-data]
print(json.dumps({"mode": "inference", "models": rows, "geomean": spread}))
# --8<-- [end:plot-data]

# --8<-- [start:total-time]
print(f"total time of this script: {time.perf_counter() - started:.0f} s")
# --8<-- [end:total-time]
