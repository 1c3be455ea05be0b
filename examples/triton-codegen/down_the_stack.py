"""One Triton kernel, down the compiler stack: Triton IR, TritonGPU IR, LLVM IR, PTX, and the cubin.

Run it as it is: `python examples/triton-codegen/down_the_stack.py`. On a GPU it launches the
hand-written residual add + LayerNorm kernel and reads the artifacts of the kernel it ran. Without
a GPU it still works: it asks Triton to compile the same kernel for an H100 (sm_90) without
running it, with the specialisations a launch would have chosen.
"""
# execdocs: devices=cuda

import os
import re

import torch
import triton

import _fused_pattern as fused
import compile_tools

torch.manual_seed(0)
device = compile_tools.device()
n_rows, n_cols = 4096, 768
BLOCK = triton.next_power_of_2(n_cols)


def without_locations(ir: str) -> str:
    """MLIR text without its source locations: the `loc(...)` suffixes and the `#loc` definitions."""
    ir = re.sub(r" loc\((?:[^()]|\([^()]*\))*\)", "", ir)
    return "\n".join(line for line in ir.splitlines() if not line.startswith("#loc"))


def short(line: str, width: int = 150) -> str:
    return line if len(line) <= width else line[: width - 4] + " ..."


# --8<-- [start:launch]
x, residual, weight, bias = fused.make_inputs(n_rows, n_cols, device)
if device.type == "cuda":
    out = torch.empty_like(x)
    # Launching a @triton.jit function returns the CompiledKernel it ran (compiled on first launch).
    kernel = fused.add_layernorm_kernel[(n_rows,)](
        x, residual, weight, bias, out, n_cols, 1e-5, BLOCK=BLOCK, num_warps=4
    )
    torch.testing.assert_close(out, fused.add_layernorm(x, residual, weight, bias))
else:
    # No GPU: compile for an H100 without launching. A launch would mark the pointers and n_cols
    # (768 = 48 * 16) as divisible by 16 ("tt.divisibility"); say so by hand.
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    signature = {name: "*fp32" for name in ("x_ptr", "res_ptr", "w_ptr", "b_ptr", "out_ptr")}
    signature |= {"n_cols": "i32", "eps": "fp32", "BLOCK": "constexpr"}
    source = ASTSource(
        fused.add_layernorm_kernel,
        signature,
        constexprs={"BLOCK": BLOCK},
        attrs={(i,): [["tt.divisibility", 16]] for i in range(6)},
    )
    kernel = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
print("kernel:", kernel.name, "| target:", kernel.metadata.target, "| warps:", kernel.metadata.num_warps)
print("stages kept in kernel.asm:", ", ".join(kernel.asm.keys()))
for stage in ("ttir", "ttgir", "llir", "ptx"):
    print(f"{stage:>6}: {len(kernel.asm[stage].splitlines()):4} lines")
print(f" cubin: {len(kernel.asm['cubin'])} bytes")
print("files in Triton's cache:", ", ".join(sorted(os.path.basename(path) for path in kernel.metadata_group.values())))
# --8<-- [end:launch]
assert {"ttir", "ttgir", "llir", "ptx", "cubin"} <= set(kernel.asm), kernel.asm.keys()
assert isinstance(kernel.asm["cubin"], bytes) and kernel.metadata.num_warps == 4
assert all(os.path.exists(path) for path in kernel.metadata_group.values()), "every stage is a file in the cache"

# --8<-- [start:ttir]
ttir = without_locations(kernel.asm["ttir"])
compile_tools.print_lines(
    ttir,
    keep=lambda line: re.search(
        r"tt\.get_program_id|tt\.make_range|arith\.cmpi|tt\.load|\"tt\.reduce\"|tt\.store", line
    ),
    why_cut="the pointer arithmetic (tt.splat, tt.addptr), the reductions' bodies and the arithmetic; "
    "source locations removed",
)
# --8<-- [end:ttir]
assert ttir.count("tt.load") == 4 and ttir.count("tt.store") == 1, "x, residual, weight, bias in; out out"
assert ttir.count('"tt.reduce"') == 2, "two tl.sum: the mean and the variance"
assert "tensor<1024xf32>" in ttir and "#blocked" not in ttir, "whole-block tensors, no layout yet"
assert "tt.divisibility = 16" in ttir, "the launch specialised the arguments on 16-byte alignment"

# --8<-- [start:ttgir]
ttgir = without_locations(kernel.asm["ttgir"])
compile_tools.print_lines(
    ttgir,
    keep=lambda line: line.startswith("#") or "module attributes" in line or re.search(r"tt\.load|tt\.store", line),
    why_cut="the same operations as in Triton IR, now typed with a layout",
)
layout = re.search(r"sizePerThread = \[(\d+)\], threadsPerWarp = \[(\d+)\], warpsPerCTA = \[(\d+)\]", ttgir)
per_thread, threads_per_warp, warps = map(int, layout.groups())
values_per_thread = BLOCK // (threads_per_warp * warps)
print(
    f"{BLOCK} values / ({threads_per_warp} threads x {warps} warps) = {values_per_thread} values per thread, "
    f"in runs of {per_thread} contiguous values"
)
# --8<-- [end:ttgir]
assert "#ttg.blocked" in ttgir and "tensor<1024xf32, #blocked>" in ttgir, "every tensor now has a layout"
assert warps == 4 and threads_per_warp == 32

# --8<-- [start:llir]
llir = kernel.asm["llir"]
compile_tools.print_lines(
    llir,
    keep=lambda line: line.startswith("declare") and "@llvm.nvvm" in line,
    why_cut="the body; counts of what it does follow",
)
print("inline-asm ld.global.v4:", len(re.findall(r"asm sideeffect [^\n]*ld\.global\.v4", llir)))
shuffle_distances = [
    int(d) for d in re.findall(r"@llvm\.nvvm\.shfl\.sync\.bfly\.i32\(i32 -1, i32 %\d+, i32 (\d+),", llir)
]
print("warp shuffles (llvm.nvvm.shfl.sync.bfly):", len(shuffle_distances))
print("shuffle distances, in order:", shuffle_distances)
print("block barriers:", llir.count("call void @llvm.nvvm.barrier"))
print("shared-memory loads and stores (inline asm):", len(re.findall(r"(?:st|ld)\.shared", llir)))
# --8<-- [end:llir]
assert "@llvm.nvvm.read.ptx.sreg.tid.x" in llir and "@llvm.nvvm.read.ptx.sreg.ctaid.x" in llir
assert "@llvm.nvvm.shfl.sync.bfly" in llir, "the tl.sum become warp shuffles"
assert "ld.global" in llir, "the masked loads are emitted as predicated inline PTX"
assert shuffle_distances[:5] == [16, 8, 4, 2, 1], "a butterfly across the 32 lanes of a warp"
assert "__nv_sqrtf" in llir and "__nvvm_reflect" in llir, "tl.sqrt comes from libdevice"

# --8<-- [start:ptx]
ptx = kernel.asm["ptx"]
compile_tools.print_lines(
    ptx,
    keep=lambda line: re.match(
        r"\s*(\.target|\.reqntid|@%p\d+ (ld|st)\.global|shfl\.sync\.bfly\.b32\s+%r\d+, %r\d+, 16,)", line
    ),
    why_cut="address arithmetic, the rest of the shuffles, shared memory, arithmetic",
)
vector_loads = len(re.findall(r"ld\.global\.v4\.b32", ptx))
vector_stores = len(re.findall(r"st\.global\.v4\.b32", ptx))
print(
    f"ld.global.v4.b32: {vector_loads}, st.global.v4.b32: {vector_stores}, "
    f"shfl.sync.bfly: {ptx.count('shfl.sync.bfly')}, bar.sync: {ptx.count('bar.sync')}"
)
# --8<-- [end:ptx]
# Each thread holds values_per_thread values of each tensor, in runs of per_thread = 4 floats = 16 bytes.
assert ".reqntid 128" in ptx and values_per_thread == 8
assert per_thread == 4 and vector_loads == 4 * values_per_thread // 4, (per_thread, vector_loads)
assert vector_stores == values_per_thread // 4, vector_stores
assert "shfl.sync.bfly" in ptx and "bar.sync" in ptx, "reductions: within a warp, then across warps"

# --8<-- [start:sass]
try:
    sass = kernel.asm["sass"]  # disassembled from the cubin with cuobjdump, which Triton ships
except Exception as error:  # noqa: BLE001 - only a missing tool, and the page says so
    sass = ""
    print("no SASS:", error)
if sass:
    instructions = re.findall(r"\b(LDG\.E\.\d+|STG\.E\.\d+|SHFL\.BFLY|BAR\.SYNC)", sass)
    for name in sorted(set(instructions)):
        print(f"{name:>10}: {instructions.count(name)}")
# --8<-- [end:sass]
if sass:
    assert "LDG.E.128" in sass and "STG.E.128" in sass, "128-bit global loads and stores: the v4 of the PTX"
