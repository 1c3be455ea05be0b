"""Is the compiled result right, on a GPU? TF32 matrix products, fused multiply-adds in Triton's
code, split reductions, and atomics that change the result from one run to the next.

Run it as it is: `python examples/debugging/accuracy_gpu.py`. It is meant for a GPU. On a CPU it
runs too, but there is no TF32, no Triton and no GPU atomic there, so the checks that need them
are skipped and the numbers it prints say little.
"""
# execdocs: devices=cuda

import copy
import re
import textwrap
import warnings

import torch
import torch._functorch.config

import compile_tools
from debugging._accuracy_model import Block

torch.manual_seed(0)
torch.set_grad_enabled(False)  # inference only
# Compile afresh every time, so that each setting below really changes the code that runs (and
# Inductor's TF32 warning, which is given while it generates code, is not skipped by a cache hit).
torch._functorch.config.enable_autograd_cache = False
torch._inductor.config.fx_graph_cache = False
device = compile_tools.device()
on_gpu = device.type == "cuda"


def relative_error(out, ref):
    """||out - ref|| / ||ref||, in float64."""
    return ((out.double() - ref).norm() / ref.norm()).item()


# --8<-- [start:tf32]
model = Block(1024).to(device).eval()
x = torch.randn(256, 1024, device=device)
reference = copy.deepcopy(model).double()(x.double())  # same weights, float64

errors, warned, matmuls = {}, {}, {}
print("relative error vs fp64               eager  compiled")
for precision in ("highest", "high"):
    torch.set_float32_matmul_precision(precision)  # "high" lets float32 matmuls use TF32
    torch._dynamo.reset()
    compiled_model = torch.compile(model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (code,) = compile_tools.generated_code(compiled_model, x)
    warned[precision] = [str(w.message) for w in caught if "TensorFloat32" in str(w.message)]
    matmuls[precision] = sorted(set(re.findall(r"extern_kernels\.\w*mm\b", code)))
    errors[precision] = relative_error(model(x), reference), relative_error(compiled_model(x), reference)
    setting = f'"{precision}" (fp32_precision={torch.backends.cuda.matmul.fp32_precision})'
    print(f"{setting:<34} {errors[precision][0]:.1e}   {errors[precision][1]:.1e}")
torch.set_float32_matmul_precision("highest")  # back to the default for the sections below
print(f"matmuls in the compiled code: {', '.join(matmuls['high']) or 'none from extern_kernels'}")
for precision in ("highest", "high"):
    print(f'warning while compiling under "{precision}":{"" if warned[precision] else " none"}')
    for message in warned[precision]:
        print(textwrap.fill(message, width=96, initial_indent="  ", subsequent_indent="  "))
# --8<-- [end:tf32]
assert max(errors["highest"]) < 1e-5, "without TF32, both float32 results are far below 1e-4 relative error"
if on_gpu:
    for side, name in enumerate(("eager", "compiled")):
        assert errors["high"][side] > 100 * errors["highest"][side], f"TF32: {name}'s error over 100 times larger"
    assert 0.25 < errors["high"][1] / errors["high"][0] < 4, "compiled follows the setting: TF32 error like eager's"
    assert matmuls["high"] == matmuls["highest"] != [], "the compiled code calls cuBLAS under either setting"
    assert len(warned["highest"]) == 1 and not warned["high"], "Inductor warns once, while TF32 is off"


# --8<-- [start:fma]
def multiply_add(a, b, c):
    return a * b + c


a, b, c = (torch.randn(2**20, device=device) for _ in range(3))
fma_reference = multiply_add(a.double(), b.double(), c.double())  # a * b is exact in float64
eager_fma = multiply_add(a, b, c)  # two kernels: a * b is rounded to float32 before the add

fma_outputs, fusion, arithmetic = {}, {}, {}
for emulate in (False, True):
    torch._dynamo.reset()
    with torch._inductor.config.patch(emulate_precision_casts=emulate):
        compiled_fma = torch.compile(multiply_add)
        (code,) = compile_tools.generated_code(compiled_fma, a, b, c)
        fma_outputs[emulate] = compiled_fma(a, b, c)
    flag = re.search(r"'enable_fp_fusion': (\w+)", code)  # in the Triton kernel's triton_meta
    fusion[emulate] = flag[1] if flag else "-"
    arithmetic[emulate] = [
        line.strip() for line in code.splitlines() if re.search(r"tmp\d+ = tmp\d+ [*+] tmp\d+", line)
    ]

print("                               enable_fp_fusion  elements != eager  relative error vs fp64")
for emulate, out in fma_outputs.items():
    changed, error = (out != eager_fma).float().mean().item(), relative_error(out, fma_reference)
    print(f"emulate_precision_casts={emulate!s:<5}  {fusion[emulate]:<17} {changed:>17.1%}  {error:.2e}")
print(f"eager: mul, then add {'':>47}{relative_error(eager_fma, fma_reference):.2e}")
print("\n".join(arithmetic[False]))
# --8<-- [end:fma]
fused, emulated = fma_outputs[False], fma_outputs[True]
assert hasattr(torch._inductor.config, "emulate_precision_casts"), "the switch exists in this torch"
assert arithmetic[False] == arithmetic[True] != [], "the same multiply and add in the code, with either setting"
assert torch.equal(emulated, eager_fma), "emulate_precision_casts: bit for bit eager's result"
if on_gpu:
    assert fusion == {False: "True", True: "False"}, "emulate_precision_casts turns Triton's fp fusion off"
    assert (fused != eager_fma).float().mean() > 0.01, "with fp fusion on, many elements differ from eager"
    assert relative_error(fused, fma_reference) < relative_error(eager_fma, fma_reference), "the FMA is closer to fp64"
    fused_worst, eager_worst = ((t.double() - fma_reference).abs().max() for t in (fused, eager_fma))
    assert fused_worst <= eager_worst, "and its worst element is no farther from fp64 than eager's"


# --8<-- [start:split-reduction]
rows = torch.rand(64, 2**18, device=device)  # 2**24 positive values: the sums do not cancel
row_sums = torch.compile(lambda t: t.sum(dim=-1))
(code,) = compile_tools.generated_code(row_sums, rows)
kernels = compile_tools.kernel_names(code)
sizes = []
for name in kernels:
    source = compile_tools.kernel_source(code, name)
    sizes.append({key: int(value) for key, value in re.findall(r"^\s+(\w*numel) = (\d+)$", source, re.M)})
    print(f"{name}: {', '.join(f'{key} {value}' for key, value in sizes[-1].items()) or 'one C++ loop nest'}")

sum_reference = rows.double().sum(dim=-1)
eager_sums, compiled_sums = rows.sum(dim=-1), row_sums(rows)
worst = {
    name: ((sums.double() - sum_reference).abs() / sum_reference).max().item()
    for name, sums in (("eager", eager_sums), ("compiled", compiled_sums))
}
print(f"row sums that differ from eager's: {(compiled_sums != eager_sums).sum().item()} of {len(rows)}")
print(f"largest relative error vs fp64: eager {worst['eager']:.1e}  compiled {worst['compiled']:.1e}")
runs = torch.stack([row_sums(rows) for _ in range(20)])
print(f"20 compiled runs bitwise identical: {bool((runs == runs[0]).all())}")
# --8<-- [end:split-reduction]
assert max(worst.values()) < 1e-5, "both summation orders are accurate"
assert bool((runs == runs[0]).all()), "a split reduction is deterministic from run to run: no atomics"
if on_gpu:
    assert max(worst.values()) < 1e-6, "on the GPU, both within a few units in the last place of the sum"
    assert len(kernels) == 2, "Inductor splits the reduction: partial sums, then their sum"
    first, second = sizes
    assert first["xnumel"] == second["xnumel"] * second["r0_numel"], "the second kernel adds the first's partials"
    assert (compiled_sums != eager_sums).any(), "another summation order: some row sums differ in the last bits"


# --8<-- [start:atomics]
bins = 16
index = torch.randint(0, bins, (2**22,), device=device)  # about 2**18 values land in each bin
values = torch.randn(2**22, device=device)


def bin_sums(index, values):
    return torch.zeros(bins, device=values.device).index_add_(0, index, values)


def distinct_results(fn, runs=20):
    return len({tuple(fn(index, values).tolist()) for _ in range(runs)})


# a call: Triton's tl.atomic_add(...) or C++'s atomic_add_vec<...>(...); not a kernel's metadata, 'atomic_add_found'
atomic_add_call = re.compile(r"\batomic_add\w*(<[^(]*>)?\(")
adding_call = re.compile(atomic_add_call.pattern + r"|\bindex_put_\(")
distinct, atomics = {}, {}
settings = ("default", "config.deterministic=True", "use_deterministic_algorithms(True)")
print("distinct results of 20 runs         eager  compiled  atomic_add in the code")
try:
    for setting in settings:
        torch.use_deterministic_algorithms(setting.startswith("use_deterministic"))
        torch._dynamo.reset()
        with torch._inductor.config.patch(deterministic=setting.startswith("config")):
            compiled_bins = torch.compile(bin_sums)
            (code,) = compile_tools.generated_code(compiled_bins, index, values)
            compiled_distinct = distinct_results(compiled_bins)
        # Inductor's config changes nothing in eager, so that row has no eager column
        eager_distinct = None if setting.startswith("config") else distinct_results(bin_sums)
        distinct[setting] = eager_distinct, compiled_distinct
        atomics[setting] = bool(atomic_add_call.search(code))
        print(f"{setting:<34} {eager_distinct or '-':>6} {compiled_distinct:>9}  {atomics[setting]}")
        if setting.startswith("use_deterministic"):  # what the deterministic code adds with
            adding = [line.strip() for line in code.splitlines() if adding_call.search(line)]
finally:
    torch.use_deterministic_algorithms(False)
print("under use_deterministic_algorithms(True), the lines of the code that add:", *adding[:4], sep="\n  ")
# --8<-- [end:atomics]
default, inductor_deterministic, torch_deterministic = settings
assert atomics[default] and atomics[inductor_deterministic], "index_add_ compiles to atomic adds"
assert distinct[torch_deterministic] == (1, 1), "deterministic algorithms: one result, eager and compiled"
assert not atomics[torch_deterministic], "deterministic algorithms: no atomic add in the compiled code"
if on_gpu:
    assert min(distinct[default]) > 1, "float atomics on the GPU: the result changes from run to run"
    assert distinct[inductor_deterministic][1] > 1, "Inductor's deterministic config leaves the atomics alone"
