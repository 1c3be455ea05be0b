"""Six real architectures, eager against torch.compile, one training step in bf16 autocast on a GPU.

Run it as it is: `python examples/benchmarking/zoo_training.py`. It needs a GPU and takes a few
minutes there, most of it compiling forward and backward graphs.
"""
# execdocs: devices=cuda

import json
import math
import time

import _harness
import _zoo_causes
import _zoo_run

import compile_tools

started = time.perf_counter()
device = compile_tools.device()
BUDGET_S = 420  # start no new model after this: compiling a training step takes 15-60 s per model
# Six of the ten, so that the run and its experiments fit a 10-minute job: Swin-T, MobileNetV2 and T5-small
# are the slowest to compile, and DistilBERT is BERT-base with half its layers.
TRAINING_ZOO = ["BERT-base", "GPT-2", "ViT-B/16", "ResNet-50", "Llama-4L-1024", "ConvNeXt-T"]

# --8<-- [start:run]
rows = _zoo_run.run_zoo(TRAINING_ZOO, device, train=True, budget_s=BUDGET_S, started=started)
# --8<-- [end:run]
if device.type == "cuda":
    assert len(rows) == len(TRAINING_ZOO), f"only {len(rows)} models measured; see the run's FAILED and skipped lines"
    for r in rows:
        assert r["graphs"] >= 1, f"{r['name']} was not compiled"
        assert math.isfinite(r["loss"]) and r["output_finite"], f"{r['name']}: the loss is not finite"
        # dropout draws other random numbers in the compiled step: the losses agree only roughly
        error = r["relative_error"]
        assert error < 0.1, f"{r['name']}: compiled loss differs from eager by {error:.3f}"

# --8<-- [start:table]
_harness.print_table(rows)
spread = _harness.geomean([r["speedup"] for r in rows])
work = _harness.geomean([_harness.gpu_work_ratio(r) for r in rows])
print(f"\ngeomean speedup {spread['geomean']:.2f}x over {spread['n']} models "
      f"(min {spread['min']:.2f}x, max {spread['max']:.2f}x, geometric std {spread['gstd']:.2f}); "
      f"GPU work {work['geomean']:.2f}x")  # fmt: skip
# --8<-- [end:table]

# --8<-- [start:attribution]
_harness.print_attributions(rows)
# --8<-- [end:attribution]

# --8<-- [start:outliers]
outliers = _zoo_causes.outliers(rows)
# --8<-- [end:outliers]

if device.type == "cuda":  # the mask's signature; the inference zoo and the case study test its cause
    for r in [r for r in rows if r["name"] in _zoo_causes.MASKED]:
        _zoo_causes.check_mask_signature(r)

# --8<-- [start:launches]
launch_bound = [r for r in outliers if r["name"] not in _zoo_causes.MASKED]
launches = {r["name"]: _zoo_causes.print_launches(r) for r in launch_bound}
# --8<-- [end:launches]
if device.type == "cuda":
    for r in launch_bound:
        _zoo_causes.check_launch_cause(r, launches[r["name"]])

# --8<-- [start:plot-data]
print(json.dumps({"mode": "training step", "models": rows, "geomean": spread}))
# --8<-- [end:plot-data]

# --8<-- [start:total-time]
print(f"total time of this script: {time.perf_counter() - started:.0f} s")
# --8<-- [end:total-time]
