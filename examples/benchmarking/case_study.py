"""Why is compiled BERT-base slower than eager? The diagnosis, one executed step at a time.

Run it as it is: `python examples/benchmarking/case_study.py`. It needs a GPU.
"""
# execdocs: devices=cuda

import inspect

import _profile_diff
import _zoo
import torch
import transformers

import compile_tools

device = compile_tools.device()


def bert(attention=None):
    """The zoo's BERT-base, one batch of 16 x 512 tokens, eager and compiled steps, and the compiler's graphs."""
    model = _zoo.build("BERT-base", device).eval()
    if attention:
        model.set_attn_implementation(attention)
    inputs = _zoo.input_maker("BERT-base", model, device, train=False)()
    backend = _profile_diff.InductorKeepingGraphs()
    eager = _profile_diff.inference_step(model, inputs)
    compiled = _profile_diff.inference_step(torch.compile(model, backend=backend), inputs)
    compiled()  # compiles
    return eager, compiled, backend.graphs


def print_measurement(r):
    for name in ("eager", "compiled"):
        side = r[name]
        print(f"{name:<9}{side['ms']:6.2f} ms a call: host {side['host_ms']:5.2f} ms, "
              f"GPU busy {side['busy_ms']:5.2f} ms, {side['launches']} kernels: {side['bound']}")  # fmt: skip
    low, high = r["speedup_range"]
    work = r["eager"]["busy_ms"] / r["compiled"]["busy_ms"]
    print(f"speedup  {r['speedup']:.2f}x (10th-90th percentile of {r['pairs']} pairs: {low:.2f}-{high:.2f}x), "
          f"GPU work {work:.2f}x")  # fmt: skip


# --8<-- [start:measure]
eager_step, compiled_step, graphs = bert()
before = _profile_diff.compare(eager_step, compiled_step)
print_measurement(before)
print(f"{len(graphs)} graph(s)")
# --8<-- [end:measure]
if device.type == "cuda":
    assert len(graphs) == 1, "a graph break is not the cause here: Dynamo captured one graph"
    work = before["eager"]["busy_ms"] / before["compiled"]["busy_ms"]
    assert work < 0.7, f"the compiled GPU work should have grown by half or more: GPU work {work:.2f}x"
    assert before["compiled"]["bound"] == "GPU-bound", "compiled BERT-base's time is its GPU work"

# --8<-- [start:profile-diff]
eager, compiled = before["eager"]["profile"], before["compiled"]["profile"]
change = _profile_diff.print_diff(eager, compiled)
# --8<-- [end:profile-diff]
FP32_GEMM = "GEMM/conv (fp32)"
if device.type == "cuda":
    assert max(change, key=change.get) == FP32_GEMM, "the largest growth should be fp32 matrix products"
    assert FP32_GEMM not in eager.by_category(), "eager BERT-base runs no fp32 matrix product"
    assert any(k.startswith("attention") for k in eager.by_category()), "eager runs a fused SDPA kernel"
    assert not any(k.startswith("attention") for k in compiled.by_category()), "compiled runs none"

# --8<-- [start:sources]
culprits = _profile_diff.print_sources(compiled, graphs, top=2)
# --8<-- [end:sources]
if device.type == "cuda":
    assert FP32_GEMM in _profile_diff.label(compiled.by_kernel()[culprits[0]["kernel"]][0])

# --8<-- [start:why]
from transformers import masking_utils  # noqa: E402

source = inspect.getsource(masking_utils._ignore_bidirectional_mask_sdpa)
print(f"transformers {transformers.__version__}, masking_utils._ignore_bidirectional_mask_sdpa:")
compile_tools.print_lines(
    source, lambda line: "is_tracing" in line or "return" in line or "def " in line, "docstring, comments, checks"
)
# --8<-- [end:why]
assert "is_tracing" in source

# --8<-- [start:fix]
import _unpadded  # noqa: E402,F401  registers "sdpa_unpadded": SDPA, with no mask built for an unpadded batch

masked_eager_step = eager_step
eager_step, compiled_step, graphs = bert(attention="sdpa_unpadded")
after = _profile_diff.compare(eager_step, compiled_step)
print_measurement(after)
print("compiled GPU ms by category:", {k: round(v, 2) for k, v in sorted(after["compiled"]["categories"].items())})
# --8<-- [end:fix]
if device.type == "cuda":
    assert FP32_GEMM not in after["compiled"]["categories"], "with no mask, no fp32 matmul is left"
    assert any(k.startswith("attention") for k in after["compiled"]["categories"]), "the fused kernel is back"
    work = after["eager"]["busy_ms"] / after["compiled"]["busy_ms"]
    assert work > 1.15, f"with no mask, the compiled GPU work should fall below eager's: GPU work {work:.2f}x"
    assert after["speedup"] > 1.0, f"the fix should make compiling pay: {after['speedup']:.2f}x"

# --8<-- [start:replay]
import _harness  # noqa: E402

replays = {}
if device.type == "cuda":
    for label, step, r in (("as built", masked_eager_step, before), ("sdpa_unpadded", eager_step, after)):
        replays[label] = replay = _harness.replay_from_cuda_graph(step, r["eager"]["profile"])
        print(f"eager BERT-base, attention {label}: stepped, GPU busy {r['eager']['busy_ms']:.2f} ms; replayed "
              f"from a CUDA graph, {replay['ms']:.2f} ms with GPU busy {replay['busy_ms']:.2f} ms")  # fmt: skip
        for kernel, ms in replay["new_kernels"]:
            print(f"  in the replay only: {ms:5.2f} ms  {kernel[:80]}")
# --8<-- [end:replay]
if device.type == "cuda":
    masked, unpadded = replays["as built"], replays["sdpa_unpadded"]
    assert masked["busy_ms"] > 1.3 * before["eager"]["busy_ms"], "captured, eager BERT-base runs the masked path"
    assert masked["new_kernels"], "the replay runs kernels the eager step does not"
    assert unpadded["busy_ms"] < 1.1 * after["eager"]["busy_ms"], "with no mask to build, the replay is the step"
