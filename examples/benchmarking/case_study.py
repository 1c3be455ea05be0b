"""Why is compiled BERT-base slower than eager? The diagnosis, one executed step at a time.

Run it as it is: `python examples/benchmarking/case_study.py`. It needs a GPU.
"""
# execdocs: devices=cuda

import inspect

import _harness
import _profile_diff
import _zoo
import torch
import transformers

import compile_tools

device = compile_tools.device()


def bert(attention=None):
    model = _zoo.build("BERT-base", device).eval()
    if attention:
        model.set_attn_implementation(attention)
    return model, _zoo.input_maker("BERT-base", model, device, train=False)


def profiles(model, make_inputs):
    """Eager and compiled profiles of one inference call, and the FX graphs Dynamo captured."""
    inputs = make_inputs()
    backend = _profile_diff.InductorKeepingGraphs()
    compiled = torch.compile(model, backend=backend)

    def step_of(module):
        def step():
            with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
                return module(**inputs)

        return step

    return _profile_diff.profile_step(step_of(model)), _profile_diff.profile_step(step_of(compiled)), backend.graphs


def print_measurement(r):
    print(f"eager    {r['eager_ms']:6.2f} ms (rounds {r['eager_range_ms'][0]:.2f}-{r['eager_range_ms'][1]:.2f})")
    print(f"compiled {r['compiled_ms']:6.2f} ms (rounds {r['compiled_range_ms'][0]:.2f}-{r['compiled_range_ms'][1]:.2f})")
    print(f"speedup  {r['speedup']:.2f}x, {r['graphs']} graph(s), GPU busy {r['eager_busy_ms']:.2f} -> "
          f"{r['compiled_busy_ms']:.2f} ms, kernels {r['eager_launches']} -> {r['compiled_launches']}")  # fmt: skip


# --8<-- [start:measure]
model, make_inputs = bert()
before = _harness.measure(model, make_inputs)
print_measurement(before)
# --8<-- [end:measure]
if device.type == "cuda":
    assert before["graphs"] == 1, "a graph break is not the cause here: Dynamo captured one graph"
    assert before["speedup"] < 1.0, f"compiled BERT-base was not slower this time: {before['speedup']:.2f}x"
    assert before["compiled_busy_ms"] > before["eager_busy_ms"], "the compiled GPU work should have grown"

# --8<-- [start:profile-diff]
eager, compiled, graphs = profiles(model, make_inputs)
change = _profile_diff.print_diff(eager, compiled)
# --8<-- [end:profile-diff]
fp32_gemm, attention = "GEMM/conv (fp32)", [key for key in eager.by_category() if key.startswith("attention")]
if device.type == "cuda":
    assert max(change, key=change.get) == fp32_gemm, "the largest growth should be fp32 matrix products"
    assert fp32_gemm not in eager.by_category(), "eager BERT-base runs no fp32 matrix product"
    assert attention and not any(key.startswith("attention") for key in compiled.by_category()), (
        "eager uses a fused SDPA kernel, compiled none"
    )

# --8<-- [start:sources]
culprits = _profile_diff.print_sources(compiled, graphs, top=2)
# --8<-- [end:sources]
if device.type == "cuda":
    top = culprits[0]
    assert "bmm" in top["site"] or any("bmm" in op for op in top["aten"]), "the top kernel is a batched matmul"
    assert any("sdpa_attention.py" in line for line in top["sources"]), "...from the model's SDPA call"
    assert any("masking_utils.py" in line for c in culprits for line in c["sources"]), "...fed by a built mask"

# --8<-- [start:why]
from transformers import masking_utils  # noqa: E402

source = inspect.getsource(masking_utils._ignore_bidirectional_mask_sdpa)
print(f"transformers {transformers.__version__}, masking_utils._ignore_bidirectional_mask_sdpa:")
compile_tools.print_lines(source, lambda line: "is_tracing" in line or "return" in line or "def " in line,
                          "the docstring and comments")  # fmt: skip
# --8<-- [end:why]
assert "is_tracing" in source

# --8<-- [start:fix]
import _unpadded  # noqa: E402,F401  registers "sdpa_unpadded": SDPA, and no mask for an unpadded batch

_harness.release(model)
model, make_inputs = bert("sdpa_unpadded")
after = _harness.measure(model, make_inputs)
print_measurement(after)
eager_fixed, compiled_fixed, _ = profiles(model, make_inputs)
print("compiled GPU ms by category:", {k: round(v, 2) for k, v in sorted(compiled_fixed.by_category().items())})
# --8<-- [end:fix]
if device.type == "cuda":
    assert fp32_gemm not in compiled_fixed.by_category(), "with no mask, no fp32 matmul is left"
    assert any(key.startswith("attention") for key in compiled_fixed.by_category()), "the fused kernel is back"
    assert after["speedup"] > 1.3, f"the fix should make compiling pay: {after['speedup']:.2f}x"
    assert after["relative_error"] < 0.05
