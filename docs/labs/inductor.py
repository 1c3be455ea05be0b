# %% [markdown]
# # Lab 4: Read what Inductor generated
#
# Inductor turns the ATen graph into source code: one Python *wrapper* that allocates buffers and
# calls kernels in order, and the kernels themselves, Triton on a GPU and C++ on a CPU. Reading
# that code is the surest way to know what was fused. In this lab you fetch the generated code,
# list its kernels, and say which operations ended up in one kernel and which went to a library.
#
# Background: [What Inductor generated](../index.md#what-inductor-generated) in the overview,
# and [The TORCH_COMPILE_DEBUG folder](../debugging/debug_folder.md), which holds the same code
# on disk.

# %%
import re

import compile_tools
import torch
from torch._inductor.utils import run_and_get_code

device = compile_tools.device()
torch.manual_seed(0)


def scores(x, w):
    h = x @ w
    return (torch.relu(h) + 1).sum(dim=-1)


x = torch.randn(256, 128, device=device)
w = torch.randn(128, 64, device=device)

# %% [markdown]
# ## Task 1: get the generated code
#
# `torch._inductor.utils.run_and_get_code(fn, *args)` runs `fn(*args)` and returns its result
# together with the list of source files Inductor wrote while doing so. Write
# `generated_wrapper(fn, *args)`: compile `fn` with `torch.compile`, run it through
# `run_and_get_code`, and return the **first** source file (the wrapper, with the kernels
# embedded in it). Reset Dynamo first, so that the function is compiled afresh and code is written.


# %%
def generated_wrapper(fn, *args):
    # TODO: reset Dynamo, compile fn, run it with run_and_get_code and return the first source file.
    return ""


# %% tags=["solution"]
def generated_wrapper(fn, *args):
    torch._dynamo.reset()
    _, sources = run_and_get_code(torch.compile(fn), *args)
    return sources[0]


# %% tags=["check"]
code = generated_wrapper(scores, x, w)
assert code, "generated_wrapper returned an empty string: return run_and_get_code's first source file"
assert "def call(" in code, "this is not Inductor's wrapper: it defines call(args), the function that runs the graph"
call_body = compile_tools.lines_between(code, "def call(", "return (")
compile_tools.print_lines(
    call_body,
    keep=lambda line: "extern_kernels" in line or "cpp_fused" in line or ".run(" in line or "def call" in line,
    why_cut="buffer allocations, size asserts and stream handling",
)

# %% [markdown]
# That is the body of `call`, the function the compiled graph runs on every call, with only its
# calls kept: one to a library matrix multiply (`extern_kernels.mm`) and one to a generated
# kernel.
#
# ## Task 2: list the generated kernels
#
# Write `kernel_names_in(code)`, returning the names of the generated kernels in the order they
# are defined. Inductor defines each one at the top level of the wrapper:
#
# - on a GPU, a Triton kernel is a function: `def triton_<kind>_fused_<ops>_<n>(...)` inside a
#   string, at the start of a line;
# - on a CPU, a C++ kernel is assigned: `cpp_fused_<ops>_<n> = async_compile.cpp_pybinding(...)`.
#
# A regular expression with `re.findall(..., re.MULTILINE)` does it. The lab runs on the build's
# device (the line under each output names it), so on a CPU only the C++ half of the solution
# finds something; Triton names from a GPU recording, `triton_red_fused_sum_0` and
# `triton_per_fused_sum_1`, are on the
# [accuracy page](../debugging/accuracy.md#split-reductions).


# %%
def kernel_names_in(code):
    # TODO: return the names of the Triton or C++ kernels defined in `code`, in order.
    return []


# %% tags=["solution"]
def kernel_names_in(code):
    triton = re.findall(r"^def (triton_\w+)\(", code, re.MULTILINE)
    cpp = re.findall(r"^(cpp_fused_\w+) = async_compile", code, re.MULTILINE)
    return triton + cpp


# %% tags=["check"]
names = kernel_names_in(code)
reference = compile_tools.kernel_names(code)
assert names, "kernel_names_in found no kernel: look for lines starting with `def triton_` or `cpp_fused_`"
assert names == reference, f"expected {reference}, got {names}"
print(names)
print(compile_tools.kernel_source(code, names[0]))

# %% [markdown]
# Inductor names each kernel after the ATen operators it holds (`fused_<op>_<op>_...`, sorted),
# and on a GPU after its kind too: `poi` for pointwise, `red` for a reduction, `per` for a
# *persistent* reduction whose whole row fits in one block.
#
# On a CPU, three things in the kernel's C++ are not the model's operators: `relu` appears as
# `at::vec::clamp_min(..., 0)`, its vectorized form (the name in the kernel's name is the ATen
# operator's, not the C++ call's); the `#pragma omp` lines spread the loop over the CPU's threads
# with OpenMP; and `inductor_cpu_integer_div_error` is a flag the kernel would set on an integer
# division by zero, checked after the loops, that every C++ kernel carries.
#
# ## Task 3: what was fused?
#
# From the wrapper and the kernel names, fill in two sets of ATen operator names (no `aten.`
# prefix):
#
# - `FUSED`: the operators that ended up **together in the one generated kernel**;
# - `LIBRARY`: the operators that Inductor did not generate code for, and called from a library
#   instead (the calls on `extern_kernels`).

# %%
# TODO: fill in both sets, e.g. {"sin", "cos"}.
FUSED = set()
LIBRARY = set()

# %% tags=["solution"]
FUSED = {"relu", "add", "sum"}
LIBRARY = {"mm"}

# %% tags=["check"]
assert len(names) == 1, f"this graph should give exactly one generated kernel, found {names}"
fused_in_name = set(re.sub(r"^(triton_\w+?_fused|cpp_fused)_|_\d+$", "", names[0]).split("_"))
library_calls = set(re.findall(r"extern_kernels\.(\w+)\(", call_body))
assert FUSED == fused_in_name, f"the kernel {names[0]} holds {sorted(fused_in_name)}, your FUSED is {sorted(FUSED)}"
assert LIBRARY == library_calls, f"the wrapper calls extern_kernels.{sorted(library_calls)}, your LIBRARY is {LIBRARY}"
print(f"one kernel for {sorted(FUSED)}, a library call for {sorted(LIBRARY)}")

# %% [markdown]
# The ReLU, the `+ 1` and the row sum are one loop nest: each element of `h` is read once, and the
# intermediate results never go to memory. The matrix multiply stays a library call
# (cuBLAS on a GPU, a BLAS library on a CPU), because without `mode="max-autotune"` Inductor does
# not try to generate its own matrix multiply (`max_autotune_gemm` in
# [`config.py`](https://github.com/pytorch/pytorch/blob/v2.13.0/torch/_inductor/config.py) is off
# by default); so the product is written to memory, and the kernel reads it back.
#
# ## Try it
#
# Change `scores`, run the cells again, and predict before you look: add a `torch.sigmoid` before
# the sum (still one kernel?), or return both `h` and the sum (what does the wrapper return?).
# The next cell runs both, to check your prediction against.


# %%
def with_sigmoid(x, w):
    h = x @ w
    return torch.sigmoid(torch.relu(h) + 1).sum(dim=-1)


def with_h_too(x, w):
    h = x @ w
    return h, (torch.relu(h) + 1).sum(dim=-1)


for variant in (with_sigmoid, with_h_too):
    variant_code = generated_wrapper(variant, x, w)
    if not variant_code:
        print("solve Task 1 first")
        break
    returned = [line.strip() for line in compile_tools.lines_between(variant_code, "def call(").splitlines()
                if line.strip().startswith("return (")][0]  # fmt: skip
    print(f"{variant.__name__}: kernels {compile_tools.kernel_names(variant_code)}; call() ends with {returned}")

# %% [markdown]
# ## What to remember
#
# - `run_and_get_code` returns the wrapper and its kernels as text; `TORCH_LOGS=output_code`
#   prints the same code while your own program runs.
# - Kernel names list the ATen operators fused into them.
# - Library calls (`extern_kernels.*`) are where fusion stops: the data goes to memory before
#   and after them.
