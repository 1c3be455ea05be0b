"""Eight real architectures, eager against torch.compile, one training step in bf16 autocast on a GPU.

Run it as it is: `python examples/benchmarking/zoo_training.py`. It needs a GPU and takes a few
minutes there, most of it compiling forward and backward graphs.
"""
# execdocs: devices=cuda

import json
import math
import time

import _harness
import _zoo
import torch

import compile_tools

started = time.perf_counter()
device = compile_tools.device()
BUDGET_S = 360  # start no new model after this: compiling a training step takes 20-60 s per model
# Eight of the ten: Swin-T and MobileNetV2 are left out to keep the run within a 10-minute job.
TRAINING_ZOO = ["BERT-base", "GPT-2", "ViT-B/16", "ResNet-50", "DistilBERT", "T5-small", "Llama-4L-1024", "ConvNeXt-T"]

# --8<-- [start:run]
rows, skipped, failed = [], [], []
for name in [n for n in TRAINING_ZOO if n in _zoo.ZOO]:
    if time.perf_counter() - started > BUDGET_S:
        skipped.append(name)
        continue
    model = None
    try:
        model = _zoo.build(name, device)
        make_inputs = _zoo.input_maker(name, model, device, train=True)
        result = _harness.measure(model, make_inputs, train=True, mode="default", dtype=torch.bfloat16)
        rows.append({"name": name, **result})
        print(f"{name:<14} compiled in {result['compile_s']:5.1f} s, {result['graphs']} graph(s), "
              f"first loss {result['loss']:.3f}, compiled: off by {result['relative_error']:.1e}")  # fmt: skip
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
        assert r["graphs"] >= 1, f"{r['name']} was not compiled"
        assert math.isfinite(r["loss"]) and r["output_finite"], f"{r['name']}: the loss is not finite"
        # dropout draws other random numbers in the compiled step: the losses agree only roughly
        error = r["relative_error"]
        assert error < 0.1, f"{r['name']}: compiled loss differs from eager by {error:.3f}"

# --8<-- [start:table]
_harness.print_table(rows)
spread = _harness.geomean([r["speedup"] for r in rows])
print(f"\ngeomean speedup {spread['geomean']:.2f}x over {spread['n']} models "
      f"(min {spread['min']:.2f}x, max {spread['max']:.2f}x, geometric std {spread['gstd']:.2f})")  # fmt: skip
# --8<-- [end:table]

# --8<-- [start:outliers]
outliers = _harness.print_outliers(rows)
# --8<-- [end:outliers]

# --8<-- [start:plot-data]
print(json.dumps({"mode": "training step", "models": rows, "geomean": spread}))
# --8<-- [end:plot-data]

# --8<-- [start:total-time]
print(f"total time of this script: {time.perf_counter() - started:.0f} s")
# --8<-- [end:total-time]
