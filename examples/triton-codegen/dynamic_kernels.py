"""What a dynamic size changes in the Triton kernel Inductor writes for a row softmax: which sizes become
arguments, which masks appear, and whether the reduction over a row is persistent or a loop, with what
Inductor knew when it chose; then whether an upper bound on the dynamic width changes that choice.

Run it as it is on a GPU: `python examples/triton-codegen/dynamic_kernels.py`.
"""
# execdocs: devices=cuda

import functools
import re

import torch
from torch._inductor.choices import InductorChoices
from torch._inductor.codegen.triton import TritonKernel
from torch._inductor.virtualized import V
from torch.utils._sympy.value_ranges import bound_sympy

import compile_tools
from benchmarking import _profile_diff

torch.manual_seed(0)
device = compile_tools.device()
# The choices below are made only while Inductor writes a kernel: no compiled graph from a cache.
torch._inductor.config.fx_graph_cache = False
torch._functorch.config.enable_autograd_cache = False


# --8<-- [start:cases]
def softmax_rows(x):
    return torch.softmax(x, dim=-1)


x = torch.randn(16384, 512, device=device)  # 16384 rows of 512: a reduction over each row
MARKS = {
    "static": {},
    "rows dynamic": {"index": 0},
    "width dynamic": {"index": 1},
    "width dynamic, at most 1024": {"index": 1, "min": 2, "max": 1024},
}


def compile_with(marks, inputs=x):
    """A fresh compile of softmax_rows, with one dimension of its input marked dynamic (or none)."""
    torch._dynamo.reset()
    marked = inputs.clone()
    if marks:
        torch._dynamo.mark_dynamic(marked, **marks)
    compiled = torch.compile(softmax_rows)
    (code,) = [source for source in compile_tools.generated_code(compiled, marked) if "def call(" in source]
    return compiled, marked, code
# --8<-- [end:cases]


# --8<-- [start:decision]
# Inductor writes a persistent kernel (the whole row in one block) only if TritonKernel.has_persistent_RBLOCK finds
# a power-of-2 block that provably holds the row, and InductorChoices.should_use_persistent_reduction says yes.
# Both wrapped: each also notes what it was asked and what it answered.
has_block, ask = TritonKernel.has_persistent_RBLOCK, InductorChoices.should_use_persistent_reduction
decisions = []


def noting_block(numel):
    found = has_block(numel)
    decisions.append(f"has_persistent_RBLOCK({numel}): {found}")
    return found


def noting_decision(features, cooperative_reduction):
    persistent = ask(features, cooperative_reduction)
    numel = features.reduction_numel
    bounds = bound_sympy(numel)  # the range the compile knows for the row length
    decisions.append(f"should_use_persistent_reduction: row length {numel} in [{bounds.lower}, {bounds.upper}], "
                     f"<= 1024: {V.graph.sizevars.statically_known_leq(numel, 1024)}, answer {persistent}")  # fmt: skip
    return persistent


TritonKernel.has_persistent_RBLOCK = staticmethod(noting_block)
InductorChoices.should_use_persistent_reduction = staticmethod(noting_decision)
# --8<-- [end:decision]


# --8<-- [start:kernels]
SHOWN = re.compile(r"^\s*(def |xnumel = |r0_numel = |R0_BLOCK: tl.constexpr = |xmask = |r0_mask = |for r0_offset)")
HINT = re.compile(r"reduction_hint=ReductionHint\.(\w+)")


def kernel_lines(code: str, name: str) -> list[str]:
    """The lines of one generated kernel that show what it knows when it is compiled, and its launch."""
    source = compile_tools.kernel_source(code, name)
    launch = next(line.strip() for line in code.splitlines() if line.strip().startswith(f"{name}.run("))
    shown = [line.strip() for line in source.splitlines() if SHOWN.match(line)]
    return [f"reduction hint: {HINT.search(source).group(1)}", *shown, f"launch: {launch}"]


def describe(case, marks, inputs=x) -> dict:
    decisions.clear()
    compiled, marked, code = compile_with(marks, inputs)
    names = compile_tools.kernel_names(code)
    kernel_ms = _profile_diff.profile_step(functools.partial(compiled, marked), calls=20).per_call_ms()
    lines = [line for name in names for line in kernel_lines(code, name)]
    print(f"{case}: {', '.join(names)}; GPU {kernel_ms * 1e3:.1f} us per call")
    for line in [*lines, *(f"asked {decision}" for decision in dict.fromkeys(decisions))]:
        print(f"    {line[:116]}")
    return {"kinds": [name.split("_fused")[0] for name in names], "lines": lines, "ms": kernel_ms}


results = {case: describe(case, marks) for case, marks in MARKS.items()}
# --8<-- [end:kernels]
kinds = {case: result["kinds"] for case, result in results.items()}
assert kinds["static"] == kinds["rows dynamic"] == ["triton_per"], "a 512-wide row: one persistent block"
assert kinds["width dynamic"] == ["triton_red"], "a width with no bound: a loop over the row"
assert kinds["width dynamic, at most 1024"] == ["triton_per"], "a width known to be <= 1024: one block"
assert "R0_BLOCK: tl.constexpr = 1024" in results["width dynamic, at most 1024"]["lines"], "a block for the bound"
assert results["width dynamic, at most 1024"]["ms"] > 1.2 * results["width dynamic"]["ms"], "half the block idle"
assert any("for r0_offset" in line for line in results["width dynamic"]["lines"])
assert not any("xnumel = 16384" in line for line in results["rows dynamic"]["lines"]), "rows: an argument"
assert any("xnumel = 16384" in line for line in results["static"]["lines"]), "static: a constant"

# --8<-- [start:bound]
narrow = torch.randn(16384, 64, device=device)  # rows of 64
bounded = {
    "width 64, dynamic": describe("width 64, dynamic", {"index": 1}, narrow),
    "width 64, dynamic, 33 to 64": describe("width 64, dynamic, 33 to 64", {"index": 1, "min": 33, "max": 64}, narrow),
}
# --8<-- [end:bound]
assert bounded["width 64, dynamic"]["kinds"] == ["triton_red"]
assert bounded["width 64, dynamic, 33 to 64"]["kinds"] == ["triton_per"]
assert "R0_BLOCK: tl.constexpr = 64" in bounded["width 64, dynamic, 33 to 64"]["lines"]
