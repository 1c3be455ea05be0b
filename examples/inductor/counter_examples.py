"""Where fusion stops: three cases, each with the kernel count and the time before and after a change.

Run it as it is: `python examples/inductor/counter_examples.py` (on a GPU if torch sees one).
"""

import re

import torch

import compile_tools
from _fusion import compile_and_log

torch.manual_seed(0)
device = compile_tools.device()
on_gpu = device.type == "cuda"
if not on_gpu:
    # One thread: on a CPU shared with other work, OpenMP's barriers between loop nests would
    # dominate the times below; with one thread they compare the loops themselves.
    torch.set_num_threads(1)


times_ms = {}  # label -> median ms, for the passes section at the end


def report(label, compiled, fn, *args):
    """One line: the scheduler nodes before and after fusion, the kernels, and the median time."""
    ms = compile_tools.timing_ms(torch.compile(fn), *args)
    times_ms[label.strip()] = ms["median"]
    before, after = len(compiled.nodes_before), len(compiled.nodes_after)
    print(f"{label}: {before} nodes -> {after} after fusion, {len(compiled.kernels)} kernel(s), {ms['median']:.3f} ms")
    for name in compiled.kernels:
        print(f"    {name}")


# --8<-- [start:outer-reduction]
def normalize_columns(x):  # each column divided by its sum: a reduction over the outer dimension
    return x / x.sum(dim=0, keepdim=True)


def normalize_rows(x):  # the same arithmetic along the inner, contiguous dimension
    return x / x.sum(dim=1, keepdim=True)


# Many columns on the GPU: with fewer than about 64 per SM, Inductor would also split the column sums.
x = torch.rand(*((2048, 16384) if on_gpu else (1024, 512)), device=device)
x_t = x.t().contiguous()  # the same numbers, stored so that each column of x is a row
columns = compile_and_log(normalize_columns, x)
report("columns of x  ", columns, normalize_columns, x)
rows = compile_and_log(normalize_rows, x_t)
report("rows of x.t() ", rows, normalize_rows, x_t)
print()
print("how the column version's two nodes use buf0 (the column sums), before fusion:")
buf0_lines = [line for line in columns.pre_fusion.splitlines() if "MemoryDep('buf0'" in line]
print("\n".join(buf0_lines))
print("the Scheduler's decisions for the column version:")
decisions = [line for line in columns.fusion.splitlines() if line.startswith(("cannot fuse", "fusing", "====="))]
print("\n".join(decisions))
print("after fusion:", columns.nodes_after)
print(
    "\n".join(line for line in columns.post_fusion.splitlines() if re.match(r"op1\.(sizes|unmet_dependencies) =", line))
)
# --8<-- [end:outer-reduction]
torch.testing.assert_close(normalize_columns(x).t(), normalize_rows(x_t))
assert len(rows.nodes_after) == 1 and len(rows.kernels) == 1, (rows.nodes_after, rows.kernels)
assert "cannot fuse op0 with op1: no shared data" in decisions, "the first rounds refuse the column pair"
assert any(".writes" in line and re.search(r"'buf0', [cd]0,", line) for line in buf0_lines), buf0_lines
assert any("unmet_dependencies" in line and re.search(r"'buf0', [cd]1,", line) for line in buf0_lines), buf0_lines
complete = next(i for i, line in enumerate(decisions) if line.startswith("===== fusion complete"))
if on_gpu:  # Triton: after the rounds, one more round reorders op1's loops and the pair fuses
    assert columns.nodes_after == [("op0_op1", "FusedSchedulerNode")] and len(columns.kernels) == 1, columns.kernels
    assert decisions[complete + 1 :] == ["fusing op0 with op1"], decisions
    assert not any(line.startswith("fusing") for line in decisions[:complete]), decisions
    assert f"op1.sizes = (({x.shape[1]}, {x.shape[0]}), ())" in columns.post_fusion, "columns outside, now"
    assert f"op1.unmet_dependencies = [MemoryDep('buf0', c0, {{c0: {x.shape[1]}}})]" in columns.post_fusion
else:  # C++: no loop reordering on the CPU, so the two loop nests stay apart
    assert len(columns.nodes_after) == 2, columns.nodes_after
    assert not any(line.startswith("fusing") for line in decisions), decisions


# --8<-- [start:matmul-epilogue]
def linear_relu(x, w, b):
    return torch.relu(x @ w + b)


n = 2048 if on_gpu else 256
dtype = torch.float16 if on_gpu else torch.float32
x = torch.randn(n, n, device=device, dtype=dtype)
w = torch.randn(n, n, device=device, dtype=dtype)
b = torch.randn(n, device=device, dtype=dtype)

default = compile_and_log(linear_relu, x, w, b)
report("default     ", default, linear_relu, x, w, b)
print("  ", *[line.strip() for line in default.call().splitlines() if "extern_kernels" in line])

# On a GPU, only Triton's matmul templates may compete, so the epilogue can go into the template;
# benchmark_epilogue_fusion=False fuses it without timing the fused and unfused versions first.
autotune = {"max_autotune": True}
if on_gpu:
    autotune |= {"max_autotune_gemm_backends": "TRITON", "benchmark_epilogue_fusion": False}
tuned = compile_and_log(linear_relu, x, w, b, **autotune)
with torch._inductor.config.patch(autotune):
    report("max-autotune", tuned, linear_relu, x, w, b)
library_calls = [line.strip() for line in tuned.call().splitlines() if "extern_kernels" in line]
print("   library calls left:", library_calls or "none")
# --8<-- [end:matmul-epilogue]
assert any("extern_kernels." in line for line in default.call().splitlines()), "the default uses a library matmul"
if on_gpu:
    assert len(default.kernels) == 1, "cuBLAS, then one Triton kernel for the bias and the relu"
    assert not library_calls, "max-autotune with Triton-only GEMM backends leaves no library call"
    assert len(tuned.kernels) == 1 and "_tem_" in tuned.kernels[0], f"one template kernel: {tuned.kernels}"


# --8<-- [start:reduce-broadcast]
def center(x):
    return x - x.mean(dim=-1, keepdim=True)


shapes = [(8192, 1024), (1024, 8192), (16, 1 << 20)] if on_gpu else [(2048, 256), (256, 2048), (4, 1 << 18)]
centered = {}
for shape in shapes:
    x = torch.randn(shape, device=device)
    centered[shape] = compile_and_log(center, x)
    report(f"{str(shape):14} split_reductions=True ", centered[shape], center, x)
with torch._inductor.config.patch(split_reductions=False):
    unsplit = compile_and_log(center, x)
    report(f"{str(shape):14} split_reductions=False", unsplit, center, x)
refusals = dict.fromkeys(line for line in centered[shape].fusion.splitlines() if line.startswith("cannot fuse"))
print(f"why {shape} with split_reductions=True did not fuse further:", *refusals or ["(nothing refused)"], sep="\n  ")
# --8<-- [end:reduce-broadcast]
if not on_gpu:
    assert all(len(c.nodes_after) == 1 and len(c.kernels) == 1 for c in [*centered.values(), unsplit])
if on_gpu:
    persistent, looped, split = (centered[shape].kernels for shape in shapes)
    assert len(persistent) == 1 and persistent[0].startswith("triton_per_"), persistent
    assert len(looped) == 1 and looped[0].startswith("triton_red_"), looped
    assert len(split) == 3 and len(centered[shapes[2]].nodes_after) == 3, f"partial sums, their sum, the sub: {split}"
    assert split[0].startswith("triton_red_") and split[2].startswith("triton_poi_"), split
    assert any("numel/rnumel mismatch (reduce)" in line for line in refusals), refusals
    assert "cannot fuse op2 with op1: nodes numel incompatibility" in refusals, refusals
    assert len(unsplit.kernels) == 1 and unsplit.kernels[0].startswith("triton_red_"), unsplit.kernels

# --8<-- [start:passes]
# How often did a kernel read its input from memory? A kernel cannot move bytes faster than a copy does, so its
# time bounds the number of passes over memory it can have made; more than that, and a pass came from the cache.
if on_gpu:
    src = torch.empty(2**26, device=device)  # 256 MiB, far larger than the L2 cache
    dst = torch.empty_like(src)
    copy_gbs = 2 * src.numel() * src.element_size() / compile_tools.timing_ms(dst.copy_, src)["median"] / 1e6
    print(f"copy bandwidth: {copy_gbs:.0f} GB/s")
    tensor_bytes = {  # every case reads one float tensor and writes one of the same size
        "columns of x": 2048 * 16384 * 4,
        "rows of x.t()": 2048 * 16384 * 4,
        f"{shapes[0]}": shapes[0][0] * shapes[0][1] * 4,
        f"{shapes[1]}": shapes[1][0] * shapes[1][1] * 4,
    }
    needed = {}  # (label, passes) -> GB/s that many passes over memory would take in the measured time
    for label, size in tensor_bytes.items():
        ms = next(ms for name, ms in times_ms.items() if name.startswith(label))
        needed |= {(label, passes): passes * size / ms / 1e6 for passes in (2, 3)}
        cells = ", ".join(
            f"{p} passes {needed[label, p]:5.0f} GB/s ({needed[label, p] / copy_gbs:4.0%})" for p in (2, 3)
        )
        print(f"{label:14} {ms:.3f} ms: {cells}")
# --8<-- [end:passes]
if on_gpu:  # read, read again, write: three passes are faster than the copy for the row-wise kernels
    for label in ("rows of x.t()", f"{shapes[1]}"):
        assert needed[label, 3] > copy_gbs, f"{label}: its second walk over each row came from the cache"
    assert needed["columns of x", 2] < 0.8 * copy_gbs < needed["columns of x", 3], "columns: about three passes"
