"""The zoo's outliers, explained: for each, the cause the profile diff points at, and an experiment
that changes one thing and moves the speedup the way the cause predicts.

Run it as it is: `python examples/benchmarking/zoo_causes.py`. It needs a GPU.
"""
# execdocs: devices=cuda

import time

import _profile_diff
import _unpadded  # noqa: F401  registers the attention "sdpa_unpadded": SDPA with no mask for unpadded batches
import _zoo
import torch

import compile_tools

started = time.perf_counter()
device = compile_tools.device()
FP32_GEMM, ELEMENTWISE, BF16_GEMM = "GEMM/conv (fp32)", "ATen elementwise/copy/norm", "GEMM/conv (bf16)"


def run(name, *, attention=None, batch=None, **config):
    """Eager against compiled inference for one zoo model, with one thing changed (or none)."""
    model = _zoo.build(name, device, **config).eval()
    if attention:
        model.set_attn_implementation(attention)
    inputs = _zoo.input_maker(name, model, device, train=False, batch=batch)()
    compiled = _profile_diff.inference_step(torch.compile(model), inputs)
    compiled()  # compiles
    result = _profile_diff.compare(_profile_diff.inference_step(model, inputs), compiled)
    torch._dynamo.reset()
    return result


def ms(r, side, category):
    return r[side]["categories"].get(category, 0.0)


def print_pair(label, base, changed, categories):
    print(label)
    for tag, r in (("as in the zoo", base), ("changed", changed)):
        shown = ", ".join(f"{c} {ms(r, 'eager', c):.2f}/{ms(r, 'compiled', c):.2f}" for c in categories)
        print(f"  {tag:<14}eager {r['eager']['ms']:6.2f} ms, compiled {r['compiled']['ms']:6.2f} ms, "
              f"{r['speedup']:.2f}x; GPU ms eager/compiled: {shown}")  # fmt: skip


# --8<-- [start:attention-mask]
for name in ("DistilBERT", "ViT-B/16"):  # BERT-base: see the case study
    base, fixed = run(name), run(name, attention="sdpa_unpadded")
    attention = sorted(k for k in fixed["compiled"]["categories"] if k.startswith("attention"))
    print_pair(f"{name}: no attention mask built under compile", base, fixed, [FP32_GEMM, *attention])
    print(f"  compiled GPU busy {base['compiled']['busy_ms']:.2f} -> {fixed['compiled']['busy_ms']:.2f} ms")
    if device.type == "cuda":
        assert ms(base, "compiled", FP32_GEMM) > 0.5 and ms(base, "eager", FP32_GEMM) == 0, name
        assert attention and ms(fixed, "compiled", FP32_GEMM) == 0, f"{name}: the fused attention is back"
        saved = base["compiled"]["busy_ms"] - fixed["compiled"]["busy_ms"]
        assert saved > 0.5 * ms(base, "compiled", FP32_GEMM), f"{name}: compiled GPU time fell by {saved:.2f} ms"
        assert fixed["compiled"]["ms"] < 1.05 * base["compiled"]["ms"], f"{name}: the compiled call got no slower"
# --8<-- [end:attention-mask]

# --8<-- [start:gpt2]
base = run("GPT-2")
fused_gelu = run("GPT-2", activation_function="gelu_pytorch_tanh")  # one ATen kernel instead of a Python formula
padded_vocab = run("GPT-2", vocab_size=50304)  # 50257 rounded up to a multiple of 64
print_pair("GPT-2: GELU as one ATen kernel", base, fused_gelu, [ELEMENTWISE])
print_pair("GPT-2: vocabulary padded to 50304", base, padded_vocab, [BF16_GEMM])
# --8<-- [end:gpt2]
if device.type == "cuda":
    assert ms(base, "eager", ELEMENTWISE) - ms(fused_gelu, "eager", ELEMENTWISE) > 2.0, "eager's GELU costs ms"
    assert fused_gelu["speedup"] < base["speedup"], "a faster eager GELU leaves less for the compiler to win"
    assert ms(base, "eager", BF16_GEMM) - ms(padded_vocab, "eager", BF16_GEMM) > 2.0, "eager's LM-head GEMM"
    assert padded_vocab["speedup"] < base["speedup"], "an aligned vocabulary leaves less for the compiler to win"

# --8<-- [start:mobilenet]
base, large_batch = run("MobileNetV2"), run("MobileNetV2", batch=256)
for tag, r in (("batch 32", base), ("batch 256", large_batch)):
    busy = r["eager"]["busy_ms"] / r["eager"]["ms"]
    print(f"MobileNetV2 {tag:<10}eager {r['eager']['ms']:6.2f} ms, GPU busy {100 * busy:3.0f}% of it; "
          f"compiled {r['compiled']['ms']:6.2f} ms; {r['speedup']:.2f}x")  # fmt: skip
# --8<-- [end:mobilenet]
if device.type == "cuda":
    assert base["eager"]["busy_ms"] < 0.5 * base["eager"]["ms"], "at batch 32 eager leaves the GPU idle"
    assert large_batch["eager"]["busy_ms"] > 0.8 * large_batch["eager"]["ms"], "at batch 256 the GPU is busy"
    assert large_batch["speedup"] < base["speedup"], "with launch overhead hidden, less is left to win"

# --8<-- [start:total-time]
print(f"total time of this script: {time.perf_counter() - started:.0f} s")
# --8<-- [end:total-time]
