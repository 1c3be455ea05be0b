"""The C++/OpenMP code Inductor writes for the chapter's program on a CPU.

Run it as it is: `python examples/triton-codegen/cpu_codegen.py`. It always runs on the CPU, even
where there is a GPU: this page is about Inductor's C++ backend.
"""
# execdocs: devices=cpu

import re

import torch
from _program import block, make_inputs

import compile_tools

torch.manual_seed(0)
# --8<-- [start:threads]
# Inductor writes C++ for the thread count it sees. Fix the count, so that every machine shows this code.
torch.set_num_threads(4)
print("threads:", torch.get_num_threads())
print("config.cpp.min_chunk_size:", torch._inductor.config.cpp.min_chunk_size)
# --8<-- [end:threads]
cpu = torch.device("cpu")
inputs = make_inputs(cpu)  # the CPU sizes: x is 2048 x 196, logits 256 x 4096


def readable(line: str) -> str:
    """A C++ line without the static_cast<int64_t>(...) around every index and bound."""
    return re.sub(r"static_cast<int64_t>\(([^()]*)\)", r"\1", line)


# --8<-- [start:kernels]
compiled = torch.compile(block)
wrapper, *_ = compile_tools.generated_code(compiled, *inputs)
kernels = compile_tools.kernel_names(wrapper)
print("C++ kernels:", kernels)
call = compile_tools.lines_between(wrapper, "def call(", "return (")
compile_tools.print_lines(
    call,
    keep=lambda line: "cpp_fused_" in line or "extern_kernels." in line,
    why_cut="allocations, size checks and dels",
)
# --8<-- [end:kernels]
assert len(kernels) == 2, kernels
gelu_kernel, reductions_kernel = kernels
assert "gelu" in gelu_kernel and "softmax" in reductions_kernel and "logsumexp" in reductions_kernel, kernels
torch.testing.assert_close(compiled(*inputs), block(*inputs), rtol=1e-4, atol=1e-4)

# --8<-- [start:gelu]
print("CPU capability:", torch.backends.cpu.get_cpu_capability())
gelu_source = compile_tools.kernel_source(wrapper, gelu_kernel)
print(gelu_source)
# --8<-- [end:gelu]
step = int(re.search(r"x0\+=static_cast<int64_t>\((\d+)L\)", gelu_source).group(1))
assert gelu_source.count("#pragma omp parallel") == 1 and gelu_source.count("#pragma omp for") == 1
assert "at::vec::Vectorized<float>::loadu" in gelu_source, "vector loads"
assert step in (8, 16), f"the loop steps by one vector of floats: 8 (AVX2) or 16 (AVX-512), got {step}"
assert "erf" in gelu_source, "gelu's exact formula, 0.5 * x * (1 + erf(x / sqrt(2)))"

# --8<-- [start:skeleton]
reductions_source = compile_tools.kernel_source(wrapper, reductions_kernel)
compile_tools.print_lines(
    "\n".join(readable(line) for line in reductions_source.splitlines()),
    keep=lambda line: re.search(r"#pragma|\bfor\(|C10_(UN)?LIKELY|\.store\(|(out_ptr\d|in_out_ptr0)\[.*\] =", line),
    why_cut="the arithmetic inside the loops, declarations, braces",
)
# --8<-- [end:skeleton]
assert reductions_source.count("#pragma omp parallel") == 1, "one parallel region for the whole function"
assert reductions_source.count("#pragma omp for") == 3, "softmax rows, then the two passes of logsumexp"
assert reductions_source.count("#pragma omp single") == 1, "the last log + max over 256 values: one thread"
softmax_part = reductions_source.split("#pragma omp for")[1]
assert len(re.findall(r"for\(int64_t x1=", softmax_part)) == 3, "max, exp-and-sum, divide: three passes over a row"
assert "C10_UNLIKELY" in softmax_part, "a tail branch for the last columns of 196"
assert "local_buffer_data_0" in softmax_part, "the exponentials of one row stay in a per-thread buffer"
assert "max_masked_reduce" in softmax_part and "sum_masked_reduce" in softmax_part, "partial vectors reduced with masks"
assert re.search(r"loadu\(.*, static_cast<int64_t>\(4L\)\)", softmax_part), "the tail loads only the last 4 floats"
assert "tmp_acc0_vec" in reductions_source and "vec_reduce_all" in reductions_source, "vector accumulators"
# 256 results over 4 threads: too little work per thread to open a parallel loop for them
assert 256 // torch.get_num_threads() < torch._inductor.config.cpp.min_chunk_size

# --8<-- [start:tail]
# The lines of the softmax's reductions that the skeleton cut: the masked tail, and the end of a row.
wanted = ("x0, 4L);", "max_masked_reduce", "sum_masked_reduce", "tmp_acc0 + at::vec::vec_reduce_all")
shown = set()
for line in softmax_part.splitlines():
    line = readable(line).strip()
    for text in wanted:
        if text in line and text not in shown:
            shown.add(text)
            print(line)
# --8<-- [end:tail]
assert shown == set(wanted), shown

# --8<-- [start:one-thread]
torch.set_num_threads(1)
torch._dynamo.reset()
one_thread_wrapper, *_ = compile_tools.generated_code(torch.compile(block), *inputs)
for name in compile_tools.kernel_names(one_thread_wrapper):
    source = compile_tools.kernel_source(one_thread_wrapper, name)
    print(f"{name}: pragmas {sorted({line.strip() for line in source.splitlines() if '#pragma' in line})}")
torch.set_num_threads(4)
# --8<-- [end:one-thread]
assert "#pragma omp" not in one_thread_wrapper, "one thread: no OpenMP"
