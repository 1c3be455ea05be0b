"""A hand-written Triton kernel inside a compiled function, two ways: behind an opaque custom op,
which Inductor calls as it is, and as a `torch.library.triton_op`, whose kernel Inductor sees and
launches among its own.

Run it as it is: `python examples/extending/triton_ops.py`. Without a GPU the kernel runs under
Triton's interpreter (TRITON_INTERPRET=1), on CPU tensors.
"""

import functools
import os

import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported: @triton.jit reads it

import triton
import triton.language as tl
from torch._inductor.utils import fresh_cache
from torch.library import triton_op, wrap_triton

import compile_tools
from benchmarking import _profile_diff

torch.manual_seed(0)
device = compile_tools.device()
interpreted = os.environ.get("TRITON_INTERPRET") == "1"


# --8<-- [start:kernel]
@triton.jit
def quick_gelu_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * tl.sigmoid(1.702 * x), mask=mask)


def launch_quick_gelu(kernel, x):
    """Allocate the output and launch one program per block of 1024 values."""
    out = torch.empty_like(x)
    n_elements = x.numel()
    kernel[(triton.cdiv(n_elements, 1024),)](x, out, n_elements, BLOCK=1024)
    return out


# --8<-- [end:kernel]

# --8<-- [start:check]
def quick_gelu_reference(x):
    return x * torch.sigmoid(1.702 * x)


x = torch.randn(4096, device=device)
mine = launch_quick_gelu(quick_gelu_kernel, x)
torch.testing.assert_close(mine, quick_gelu_reference(x))
print("interpreter:", interpreted)
print("largest difference from eager:", f"{(mine - quick_gelu_reference(x)).abs().max().item():.2e}")
# --8<-- [end:check]


# --8<-- [start:two-ops]
@torch.library.custom_op("extending::quick_gelu_opaque", mutates_args=())
def quick_gelu_opaque(x: torch.Tensor) -> torch.Tensor:
    return launch_quick_gelu(quick_gelu_kernel, x)  # Inductor will call this function as it is


@quick_gelu_opaque.register_fake
def _(x):
    return torch.empty_like(x)


@triton_op("extending::quick_gelu", mutates_args=())
def quick_gelu(x: torch.Tensor) -> torch.Tensor:
    # wrap_triton makes the launch traceable: no fake is needed, the function is its own.
    return launch_quick_gelu(wrap_triton(quick_gelu_kernel), x)


def block_opaque(x, bias):
    return quick_gelu_opaque(x + bias) * 2


def block(x, bias):
    return quick_gelu(x + bias) * 2


# --8<-- [end:two-ops]
bias = torch.randn(4096, device=device)
expected = quick_gelu_reference(x + bias) * 2

# --8<-- [start:opaque]
torch._dynamo.reset()
compiled_opaque = torch.compile(block_opaque, fullgraph=True, dynamic=False)  # fullgraph: a break would raise
opaque_wrapper, *_ = compile_tools.generated_code(compiled_opaque, x, bias)
call = compile_tools.lines_between(opaque_wrapper, "def call(", "return (")
compile_tools.print_lines(call, keep=lambda line: "quick_gelu" in line and not line.strip().startswith("assert_"),
                          why_cut="allocations, size checks and comments")
print("kernels Inductor generated:", compile_tools.kernel_names(opaque_wrapper))
# --8<-- [end:opaque]
torch.testing.assert_close(compiled_opaque(x, bias), expected)
assert "torch.ops.extending.quick_gelu_opaque.default(" in call, "an extern call: the wrapper calls the op as it is"
assert "def quick_gelu_kernel" not in opaque_wrapper, "the kernel's source is not part of the generated code"
assert len(compile_tools.kernel_names(opaque_wrapper)) == 2, "one kernel for the add, one for the product"

# --8<-- [start:triton-op]
torch._dynamo.reset()
compiled = torch.compile(block, fullgraph=True, dynamic=False)
try:
    # An empty cache: a graph Inductor finds in its cache is not lowered again, so its post-grad graph is not logged
    with fresh_cache(), compile_tools.captured_logs(post_grad_graphs=True) as graph_log:
        wrapper, *_ = compile_tools.generated_code(compiled, x, bias)
    triton_op_error = None
except Exception as error:  # noqa: BLE001 - under the interpreter, as the reader would see it
    triton_op_error = f"{type(error).__name__}: {str(error).strip().splitlines()[1].strip()}"
if triton_op_error:
    print(triton_op_error)
else:
    print("in the post-grad graph:")
    compile_tools.print_lines(graph_log.getvalue(), keep=lambda line: "triton_kernel_wrapper" in line and "=" in line,
                              why_cut="the rest of the graph")
    print("in the wrapper:")
    compile_tools.print_lines(wrapper, keep=lambda line: "quick_gelu_kernel" in line or "user_autotune" in line,
                              why_cut="the rest of the output code")
    print("kernels Inductor generated:", compile_tools.kernel_names(wrapper))
# --8<-- [end:triton-op]
if interpreted:
    assert triton_op_error and "Cannot access data pointer" in triton_op_error, triton_op_error
else:
    torch.testing.assert_close(compiled(x, bias), expected)
    assert "triton_kernel_wrapper" in graph_log.getvalue(), "the kernel is a node of the graph Inductor receives"
    assert "def quick_gelu_kernel" in wrapper, "the kernel's source is part of the generated code"
    assert "torch.ops.extending.quick_gelu" not in compile_tools.lines_between(wrapper, "def call(", "return ("), (
        "no call to the custom op: Inductor launches the kernel itself"
    )
    assert len(compile_tools.kernel_names(wrapper)) == 2, "Inductor's own kernels around it are the same two"

# --8<-- [start:timing]
if device.type == "cuda":  # under the interpreter, a time would measure Python, not the kernel
    # The Benchmarking chapter's paired timing: blocks of calls of the two, interleaved, host and GPU time apart
    print(f"{'elements':>10}  {'opaque / triton_op':>18}  {'p10-p90':>9}   host us per call  GPU us per call")
    paired = {}
    for n_elements in (2**12, 2**24):
        x, bias = torch.randn(n_elements, device=device), torch.randn(n_elements, device=device)
        pair = _profile_diff.compare(functools.partial(compiled_opaque, x, bias), functools.partial(compiled, x, bias))
        opaque, op = pair["eager"], pair["compiled"]  # compare() names its two sides eager and compiled
        low, high = pair["speedup_range"]
        print(f"{n_elements:>10}  {pair['speedup']:18.2f}  {low:4.2f}-{high:4.2f}   "
              f"{1e3 * opaque['host_ms']:6.1f} / {1e3 * op['host_ms']:5.1f}    "
              f"{1e3 * opaque['busy_ms']:6.1f} / {1e3 * op['busy_ms']:5.1f}")
        paired[n_elements] = pair
# --8<-- [end:timing]
if device.type == "cuda":
    small, large = paired[2**12], paired[2**24]
    assert small["eager"]["host_ms"] > small["compiled"]["host_ms"], "the opaque op's Python dispatch costs host time"
    assert small["speedup"] > 1.0, "small input: the opaque op's call takes longer"
    gpu_ratio = large["eager"]["busy_ms"] / large["compiled"]["busy_ms"]
    assert 0.8 < gpu_ratio < 1.25, f"large input: the same kernel does the work, as fast: {gpu_ratio:.2f}"
    assert 0.8 < large["speedup"] < 1.25, "large input: the GPU's work sets the time, the same for both"
