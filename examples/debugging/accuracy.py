"""Is the compiled result right? Compare eager and compiled float32 against a float64 reference,
and the Inductor switches that take one source of difference away at a time.

Run it as it is: `python examples/debugging/accuracy.py`. Rounding differences do not need a GPU
to show, so this example stays on the CPU everywhere.
"""
# CPU tensors only; its checks hold for the CPU build's torch, not for the older torch of the
# GPU image, which therefore shows this run as a recording.
# execdocs: devices=cpu

import copy

import torch
import torch._functorch.config

from debugging._accuracy_model import Block

torch.manual_seed(0)
# Compile afresh every time, so that each config switch below really changes the code that runs.
torch._functorch.config.enable_autograd_cache = False
torch._inductor.config.fx_graph_cache = False


# --8<-- [start:model]
model = Block().eval()
x = torch.randn(64, 256)
# --8<-- [end:model]


# --8<-- [start:fp64-reference]
def errors(out, ref):
    """Largest absolute difference, and the relative error ||out - ref|| / ||ref||, both in float64."""
    diff = out.double() - ref
    return diff.abs().max().item(), (diff.norm() / ref.norm()).item()


with torch.no_grad():
    reference = copy.deepcopy(model).double()(x.double())  # same weights, upcast
    eager = model(x)
    compiled = torch.compile(model)(x)

eager_abs, eager_rel = errors(eager, reference)
compiled_abs, compiled_rel = errors(compiled, reference)
print(f"eager fp32    vs fp64: max abs {eager_abs:.2e}   relative {eager_rel:.2e}")
print(f"compiled fp32 vs fp64: max abs {compiled_abs:.2e}   relative {compiled_rel:.2e}")
print(
    f"compiled vs eager    : max abs {(compiled - eager).abs().max().item():.2e}"
    f"   bitwise equal: {torch.equal(compiled, eager)}"
)
# --8<-- [end:fp64-reference]
assert max(eager_rel, compiled_rel) < 1e-5, "both fp32 results are far below 1e-4 relative error"
assert compiled_rel < 4 * eager_rel, "compiled is as close to the fp64 reference as eager, within a small factor"
torch.testing.assert_close(compiled, eager)  # the default float32 tolerances: rtol 1.3e-6, atol 1e-5


# --8<-- [start:aot-eager]
def compare_backends(fn, *args):
    """Each backend's largest difference from plain eager, compiling from scratch each time."""
    expected = fn(*args)
    for backend in ("eager", "aot_eager", "inductor"):
        torch._dynamo.reset()
        out = torch.compile(fn, backend=backend)(*args)
        print(
            f"{backend:>10}: max abs diff from eager {(out - expected).abs().max().item():.2e}"
            f"   bitwise equal: {torch.equal(out, expected)}"
        )
        yield backend, torch.equal(out, expected)


with torch.no_grad():
    equal = dict(compare_backends(model, x))
# --8<-- [end:aot-eager]
assert equal["eager"] and equal["aot_eager"], "without Inductor, the same ATen kernels run: bit for bit eager"


# --8<-- [start:fallback-random]
def noisy(x):
    return torch.nn.functional.dropout(x * 2.0, p=0.5, training=True) * 3.0


def same_as_eager(fallback_random):
    torch._dynamo.reset()
    with torch._inductor.config.patch(fallback_random=fallback_random):
        compiled_noisy = torch.compile(noisy)
        torch.manual_seed(1)
        out = compiled_noisy(x)
    torch.manual_seed(1)
    expected = noisy(x)
    same_mask = torch.equal(out != 0, expected != 0)
    print(
        f"fallback_random={fallback_random!s:>5}: fraction kept {(out != 0).float().mean().item():.3f}"
        f"   same mask as eager: {same_mask}   bitwise equal: {torch.equal(out, expected)}"
    )
    return same_mask, torch.equal(out, expected)


default_equal = same_as_eager(False)
fallback_equal = same_as_eager(True)
# --8<-- [end:fallback-random]
assert not default_equal[0], "Inductor's own random numbers differ from eager's, for the same seed"
assert all(fallback_equal), "with fallback_random, Inductor calls eager's random kernels: bit for bit the same"


# --8<-- [start:precision-casts]
def bf16_chain(a, b):
    return ((a * b + a) * b - a).sum(dim=-1)


a = torch.randn(64, 1024, dtype=torch.bfloat16)
b = torch.randn(64, 1024, dtype=torch.bfloat16)
bf16_reference = bf16_chain(a.double(), b.double())
bf16_eager = bf16_chain(a, b)
for emulate in (False, True):
    torch._dynamo.reset()
    with torch._inductor.config.patch(emulate_precision_casts=emulate):
        out = torch.compile(bf16_chain)(a, b)
    print(
        f"emulate_precision_casts={emulate!s:>5}: vs eager max abs {(out - bf16_eager).abs().max().item():.3f}"
        f"   vs fp64 relative {errors(out, bf16_reference)[1]:.2e}"
    )
    if emulate:
        emulated = out
    else:
        fused = out
print(f"eager bf16 vs fp64 relative {errors(bf16_eager, bf16_reference)[1]:.2e}")
# --8<-- [end:precision-casts]
fused_rel, emulated_rel, eager_bf16_rel = (errors(t, bf16_reference)[1] for t in (fused, emulated, bf16_eager))
assert (emulated - bf16_eager).abs().max() < (fused - bf16_eager).abs().max(), "emulating the casts moves toward eager"
assert fused_rel < eager_bf16_rel, "skipping the bf16 roundings between fused ops is closer to fp64 than eager"
assert abs(emulated_rel - eager_bf16_rel) < 0.1 * eager_bf16_rel, "emulated: as close as eager"


# --8<-- [start:cpu-contraction]
def multiply_add(a, b, c):
    return a * b + c


generator = torch.Generator().manual_seed(0)
a, b, c = (torch.randn(2**20, generator=generator) for _ in range(3))
torch._dynamo.reset()
contracted = torch.compile(multiply_add)(a, b, c)
print(f"cpp.enable_floating_point_contract_flag: {torch._inductor.config.cpp.enable_floating_point_contract_flag!r}")
print(f"compiled a * b + c on the CPU, bitwise equal to eager: {torch.equal(contracted, multiply_add(a, b, c))}")
# --8<-- [end:cpu-contraction]
assert torch._inductor.config.cpp.enable_floating_point_contract_flag == "off"
assert torch.equal(contracted, multiply_add(a, b, c)), "no contraction in the C++ kernel: two roundings, as in eager"
