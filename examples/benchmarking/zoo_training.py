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
BUDGET_S = 420  # start no new model after this: compiling a training step takes 20-60 s per model
# Eight of the ten: Swin-T and MobileNetV2 are left out to keep the run within a 10-minute job.
TRAINING_ZOO = ["BERT-base", "GPT-2", "ViT-B/16", "ResNet-50", "DistilBERT", "T5-small", "Llama-4L-1024", "ConvNeXt-T"]

# --8<-- [start:run]
rows = _zoo.run_zoo(TRAINING_ZOO, device, train=True, budget_s=BUDGET_S, started=started)
# --8<-- [end:run]
if device.type == "cuda":
    assert len(rows) >= 8, f"only {len(rows)} models measured; see the run's FAILED and skipped lines"
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

# --8<-- [start:attribution]
_harness.print_attributions(rows)
# --8<-- [end:attribution]

# --8<-- [start:attention-mask]
import _unpadded  # noqa: E402,F401  registers "sdpa_unpadded": SDPA with no mask built for unpadded batches

FP32_GEMM = "GEMM/conv (fp32)"
for base in [r for r in rows if r["name"] == "ViT-B/16"]:  # the model below 1x in training
    if time.perf_counter() - started > 500:
        print(f"{base['name']}: skipped (time budget)")
        continue
    model = _zoo.build(base["name"], device)
    model.set_attn_implementation("sdpa_unpadded")
    fixed = _harness.measure(model, _zoo.input_maker(base["name"], model, device, train=True), train=True)
    _harness.release(model)
    for tag, r in (("as in the zoo", base), ("no mask built", fixed)):
        print(f"{base['name']:<10} {tag:<14} {r['speedup']:.2f}x, compiled GPU {r['compiled_busy_ms']:.2f} ms, "
              f"of which fp32 GEMM {r['compiled_categories'].get(FP32_GEMM, 0.0):.2f} ms")  # fmt: skip
    if device.type == "cuda":
        assert base["compiled_categories"].get(FP32_GEMM, 0.0) > 1.0, "the masked attention runs as fp32 matmuls"
        assert FP32_GEMM not in fixed["compiled_categories"] and fixed["speedup"] > base["speedup"], base["name"]
# --8<-- [end:attention-mask]

# --8<-- [start:plot-data]
print(json.dumps({"mode": "training step", "models": rows, "geomean": spread}))
# --8<-- [end:plot-data]

# --8<-- [start:total-time]
print(f"total time of this script: {time.perf_counter() - started:.0f} s")
# --8<-- [end:total-time]
