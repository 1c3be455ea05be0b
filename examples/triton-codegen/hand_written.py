"""A residual add + LayerNorm written by hand in Triton, checked against eager PyTorch and set
next to the kernel Inductor generates for the same function.

Run it as it is: `python examples/triton-codegen/hand_written.py`. Without a GPU the Triton kernel
runs under Triton's interpreter (TRITON_INTERPRET=1), on CPU tensors: slow, but the same code.
"""

import os
import re

import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"  # before the kernel's module is imported: @triton.jit reads it

import _fused_pattern as fused  # noqa: E402
from _gpu_events import gpu_events_us  # noqa: E402
import compile_tools  # noqa: E402

torch.manual_seed(0)
device = compile_tools.device()
# A row of 768 floats (BERT-base's width: not a power of two, so masks matter). On the GPU, enough
# rows to make the kernel bound by memory bandwidth; on a CPU, few, for the interpreter.
n_rows, n_cols = (16384, 768) if device.type == "cuda" else (128, 768)

# --8<-- [start:check]
x, residual, weight, bias = fused.make_inputs(n_rows, n_cols, device)
expected = fused.add_layernorm(x, residual, weight, bias)
mine = fused.add_layernorm_triton(x, residual, weight, bias)
torch.testing.assert_close(mine, expected)
print(f"rows x cols: {n_rows} x {n_cols}, one program per row, BLOCK = {fused.triton.next_power_of_2(n_cols)}")
print("interpreter:", os.environ.get("TRITON_INTERPRET") == "1")
print("largest difference from eager:", f"{(mine - expected).abs().max().item():.2e}")
# --8<-- [end:check]

# --8<-- [start:inductor]
torch._dynamo.reset()
compiled = torch.compile(fused.add_layernorm)
wrapper, *_ = compile_tools.generated_code(compiled, x, residual, weight, bias)
kernels = compile_tools.kernel_names(wrapper)
print("generated kernels:", kernels)
print()
inductor_kernel = compile_tools.kernel_source(wrapper, kernels[0])
print(inductor_kernel)
# --8<-- [end:inductor]
assert len(kernels) == 1, f"the add and the LayerNorm fuse into one kernel: {kernels}"
torch.testing.assert_close(compiled(x, residual, weight, bias), expected)
if device.type == "cuda":
    assert kernels[0].startswith("triton_per_"), "a persistent reduction: the whole row stays in registers"
    assert "XBLOCK" in inductor_kernel and "R0_BLOCK" in inductor_kernel, "two block sizes: rows and columns"
    assert "xindex" in inductor_kernel and "r0_index" in inductor_kernel, "rows on one axis, columns on the other"
    assert re.search(r"tl\.sum\(\w+, 1\)", inductor_kernel), "reductions over axis 1, the columns"
    assert inductor_kernel.count("tl.sum(") >= 2, "two sums, as in ours: the mean, then the squared differences"
    assert re.search(r"tl\.where\([^,]*r0_mask", inductor_kernel), "masked lanes zeroed before reducing"
    assert "evict_last" in inductor_kernel, "a cache eviction hint on the loads every row shares"
    assert "persistent_reduction" in inductor_kernel, "the heuristics decorator that autotunes it"
else:
    assert "at::vec::Vectorized<float>" in inductor_kernel, "vectorized over the columns"
    assert len(re.findall(r"for\(int64_t x1=", inductor_kernel)) == 3, "mean, variance, output: three loops"

# --8<-- [start:timing]
candidates = {"eager": fused.add_layernorm, "torch.compile": compiled}
if device.type == "cuda":
    candidates["hand-written"] = fused.add_layernorm_triton  # the interpreter is far too slow to time
times = {name: compile_tools.timing_ms(fn, x, residual, weight, bias) for name, fn in candidates.items()}
moved_gb = 4 * n_rows * n_cols * 3 / 1e9  # read x and residual, write the output (weight and bias are tiny)
print(f"{'':>14}  {'median ms':>9}  {'p20-p80 ms':>13}  {'GB/s at 3 passes':>16}")
for name, t in times.items():
    print(f"{name:>14}  {t['median']:9.3f}  {t['p20']:6.3f}-{t['p80']:6.3f}  {moved_gb / (t['median'] / 1e3):16.0f}")
# --8<-- [end:timing]
if device.type == "cuda":
    for name in ("torch.compile", "hand-written"):
        speedup = times["eager"]["median"] / times[name]["median"]
        assert speedup > 1.2, (
            f"{name}: one pass over memory instead of two kernels; expected > 1.2x, got {speedup:.2f}x"
        )

# --8<-- [start:eager-kernels]
if device.type == "cuda":
    calls = 20
    eager_us = {}  # kernel name -> microseconds per call
    for name, us in gpu_events_us(lambda: fused.add_layernorm(x, residual, weight, bias), calls):
        eager_us[name] = eager_us.get(name, 0.0) + us / calls
    pass_gb = 4 * n_rows * n_cols / 1e9  # one read or write of a 16384 x 768 float tensor
    print(f"eager, kernel by kernel (do_bench timed the whole call at {times['eager']['median'] * 1e3:.1f} us):")
    for name, us in eager_us.items():
        passes = 3 if "add" in name else 2  # the add reads x and residual and writes h; the norm reads h, writes out
        short = re.search(r"(\w+_kernel)", name).group(1)
        print(f"  {short:32} {us:6.1f} us  {passes} passes  {passes * pass_gb / (us / 1e6):6.0f} GB/s")
# --8<-- [end:eager-kernels]
if device.type == "cuda":
    add_us = next(us for name, us in eager_us.items() if "add" in name)
    norm_us = next(us for name, us in eager_us.items() if "layer_norm" in name)
    assert len(eager_us) == 2, f"eager runs two kernels: {list(eager_us)}"
    assert 2 / norm_us < 0.8 * 3 / add_us, "the layer-norm kernel moves its bytes more slowly than the add"
    assert add_us + norm_us > 0.85 * times["eager"]["median"] * 1e3, "the two kernels are most of eager's time"
