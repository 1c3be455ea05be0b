"""Ten real architectures, eager against torch.compile, inference in bf16 autocast on a GPU.

Run it as it is: `python examples/benchmarking/zoo_inference.py`. It needs a GPU and takes a few
minutes there, most of it compiling.
"""
# execdocs: devices=cuda

import json
import time

import _harness
import _zoo
import _zoo_causes
import _zoo_run
import host_yardstick

import compile_tools

started = time.perf_counter()
device = compile_tools.device()
BUDGET_S = 330  # start no new model after this: the zoo and its experiments must fit a 10-minute job
# The host yardstick in this process before the first model; the host-drift block measures it again after the last
yardstick_before = host_yardstick.measure()

# --8<-- [start:run]
rows = _zoo_run.run_zoo(_zoo.ZOO, device, train=False, budget_s=BUDGET_S, started=started)
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
work = _harness.geomean([_harness.gpu_work_ratio(r) for r in rows])
print(f"\ngeomean speedup {spread['geomean']:.2f}x over {spread['n']} models "
      f"(min {spread['min']:.2f}x, max {spread['max']:.2f}x, geometric std {spread['gstd']:.2f}); "
      f"GPU work {work['geomean']:.2f}x")  # fmt: skip
# --8<-- [end:table]
if device.type == "cuda":
    eager_kernels, compiled_kernels = (sum(r[f"{k}_launches"] for r in rows) for k in ("eager", "compiled"))
    assert compiled_kernels < eager_kernels, f"fusion: {compiled_kernels} kernels compiled, {eager_kernels} eager"
    assert spread["geomean"] > 1.0, f"compiled inference should be faster on average, geomean {spread['geomean']:.2f}x"
    assert work["geomean"] > 1.0, f"compiled inference should do less GPU work on average, {work['geomean']:.2f}x"

# --8<-- [start:host-drift]
yardstick_after = host_yardstick.measure()
for label, key in (("a small op (eager)", "small_op_us"), ("a small compiled call", "small_compiled_call_us")):
    before, after = yardstick_before[key]["median"], yardstick_after[key]["median"]
    print(f"{label:22} {before:6.1f} us before the first model, {after:6.1f} us after the last ({after / before:.2f}x)")
resnet = next(r for r in rows if r["name"] == "ResNet-50")
for side, key in (("eager", "small_op_us"), ("compiled", "small_compiled_call_us")):
    host_us = 1e3 * resnet[f"{side}_host_ms"]
    units = f"{host_us / yardstick_before[key]['median']:.0f} and {host_us / yardstick_after[key]['median']:.0f}"
    print(f"ResNet-50 {side:8} host {resnet[f'{side}_host_ms']:5.2f} ms: {units} of its yardstick's calls, "
          f"at the rate before and after")  # fmt: skip
# --8<-- [end:host-drift]

# --8<-- [start:attribution]
_harness.print_attributions(rows)
# --8<-- [end:attribution]

# --8<-- [start:outliers]
outliers = {r["name"]: r for r in _zoo_causes.outliers(rows)}
# --8<-- [end:outliers]
CASE_STUDY = "BERT-base"  # its mask cause is walked through, and tested, on the case-study page
GPT2 = "GPT-2"  # two costs of eager GPT-2, each tested on its own, whatever its speedup in this run
if device.type == "cuda":  # the mask's signature in the zoo's own profile: fp32 GEMMs compiled, none eager
    for r in [r for r in rows if r["name"] in _zoo_causes.MASKED]:
        _zoo_causes.check_mask_signature(r)

# --8<-- [start:attention-mask]
by_name = {r["name"]: r for r in rows}
for name in [name for name in _zoo_causes.MASKED if name in by_name and name != CASE_STUDY]:
    fixed = _zoo_causes.mask_experiment(by_name[name], device, train=False)
    if device.type == "cuda":
        _zoo_causes.check_mask_cause(by_name[name], fixed)
# --8<-- [end:attention-mask]

# --8<-- [start:gpt2]
ELEMENTWISE, BF16_GEMM = _zoo_causes.ELEMENTWISE, _zoo_causes.BF16_GEMM
if GPT2 in by_name:
    base = by_name[GPT2]
    # eager GPT-2 computes GELU as a Python formula (activation "gelu_new"): one ATen kernel instead
    fused_gelu = _zoo_run.measure_model(GPT2, device, train=False, activation_function="gelu_pytorch_tanh")
    _zoo_causes.print_change("GPT-2: GELU as one ATen kernel", base, fused_gelu, [ELEMENTWISE])
    # the LM head's vocabulary, 50257, rounded up to a multiple of 64
    padded_vocab = _zoo_run.measure_model(GPT2, device, train=False, vocab_size=50304)
    _zoo_causes.print_change("GPT-2: vocabulary padded to 50304", base, padded_vocab, [BF16_GEMM])
# --8<-- [end:gpt2]
if GPT2 in by_name and device.type == "cuda":
    work = _harness.gpu_work_ratio
    saved = _zoo_causes.gpu_ms(base, "eager", ELEMENTWISE) - _zoo_causes.gpu_ms(fused_gelu, "eager", ELEMENTWISE)
    assert saved > 2.0, f"eager's GELU formula costs {saved:.2f} ms of elementwise kernels"
    assert work(fused_gelu) < work(base), "a fused eager GELU leaves less GPU work for the compiler to remove"
    saved = _zoo_causes.gpu_ms(base, "eager", BF16_GEMM) - _zoo_causes.gpu_ms(padded_vocab, "eager", BF16_GEMM)
    assert saved > 2.0, f"the unaligned LM-head GEMM costs eager {saved:.2f} ms"
    assert work(padded_vocab) < work(base), "an aligned vocabulary leaves less GPU work for the compiler to remove"

# --8<-- [start:launches]
launch_bound = [r for name, r in outliers.items() if name not in (*_zoo_causes.MASKED, GPT2)]
launches = {r["name"]: _zoo_causes.print_launches(r) for r in launch_bound}
# --8<-- [end:launches]
if device.type == "cuda":
    for r in launch_bound:
        _zoo_causes.check_launch_cause(r, launches[r["name"]])

# --8<-- [start:plot-data]
print(json.dumps({"mode": "inference", "models": rows, "geomean": spread}))
# --8<-- [end:plot-data]

# --8<-- [start:total-time]
print(f"total time of this script: {time.perf_counter() - started:.0f} s")
# --8<-- [end:total-time]
