"""How close the chapter's kernels come to the machine's limits, measured in the same run.

Run it as it is: `python examples/benchmarking/roofline.py`. It needs a GPU for its claims; on a
CPU it runs the same code with small sizes and float32 matmuls.
"""
# execdocs: devices=cuda

import json
import time

import torch

import _profile_diff
import compile_tools

started = time.perf_counter()
torch.manual_seed(0)
device = compile_tools.device()
on_gpu = device.type == "cuda"
numel = 2**26 if on_gpu else 2**22  # 256 MiB of float32 on the GPU: far larger than the L2 cache
row = 4096
mm_dtype = torch.bfloat16 if on_gpu else torch.float32
peak_n = 8192 if on_gpu else 1024
width = 1024  # the MLP of the batch-sweep page: width 1024, hidden 4096


def ms(fn, *args):
    return compile_tools.timing_ms(fn, *args)["median"]


# --8<-- [start:ceilings]
src = torch.randn(numel, device=device)
dst = torch.empty_like(src)
copy_ms = ms(dst.copy_, src)
copy_gbs = 2 * numel * src.element_size() / copy_ms / 1e6  # one read and one write per element

a = torch.randn(peak_n, peak_n, device=device, dtype=mm_dtype)
b = torch.randn(peak_n, peak_n, device=device, dtype=mm_dtype)
peak_tflops = 2 * peak_n**3 / ms(torch.mm, a, b) / 1e9
ridge = peak_tflops * 1e12 / (copy_gbs * 1e9)  # FLOP per byte where the two ceilings meet
print(f"copy bandwidth (dst.copy_(src), {numel * 4 / 2**20:.0f} MiB): {copy_gbs:8.0f} GB/s")
print(f"matmul throughput ({peak_n}^3, {str(mm_dtype).removeprefix('torch.')}): {peak_tflops:8.1f} TFLOP/s")
print(f"ridge point: {ridge:.0f} FLOP per byte")
# --8<-- [end:ceilings]


# --8<-- [start:kernels]
def scale_shift(x):
    return x * 2.0 + 1.0


def row_sum(x):
    return x.sum(dim=-1)


def softmax(x):
    return torch.softmax(x, dim=-1)


x = torch.randn(numel // row, row, device=device)
n, e = x.numel(), x.element_size()
# name: (function, arguments, FLOPs, bytes moved at least once); FLOPs of softmax counted as
# max, subtract, exp, sum and divide per element.
kernels = {
    "pointwise x*2+1": (torch.compile(scale_shift), (x,), 2 * n, 2 * n * e),
    "row sum": (torch.compile(row_sum), (x,), n, n * e),
    "softmax": (torch.compile(softmax), (x,), 5 * n, 2 * n * e),
}
for batch in (1, 4096):  # the MLP's up-projection, (batch, 1024) @ (1024, 4096)
    act = torch.randn(batch, width, device=device, dtype=mm_dtype)
    w = torch.randn(width, 4 * width, device=device, dtype=mm_dtype)
    flops = 2 * batch * width * 4 * width
    moved = (act.numel() + w.numel() + batch * 4 * width) * act.element_size()
    kernels[f"matmul batch {batch}"] = (torch.mm, (act, w), flops, moved)

results = []
for name, (fn, args, flops, moved) in kernels.items():
    t = ms(fn, *args)
    gbs, tflops, intensity = moved / t / 1e6, flops / t / 1e9, flops / moved
    memory_bound = intensity < ridge
    share = gbs / copy_gbs if memory_bound else tflops / peak_tflops
    limit = "memory" if memory_bound else "compute"
    results.append({"name": name, "intensity": intensity, "tflops": tflops, "gbs": gbs, "share": share})
    print(
        f"{name:20} {t:9.4f} ms  {intensity:7.1f} FLOP/B  {gbs:7.0f} GB/s  {tflops:7.2f} TFLOP/s  "
        f"{limit:>7}-bound, {share:4.0%} of the {limit} ceiling"
    )
# --8<-- [end:kernels]
by_name = {r["name"]: r for r in results}
if on_gpu:
    for r in results:
        assert 0 < r["share"] <= 1.3, r
    for name in ("pointwise x*2+1", "row sum", "softmax"):
        assert by_name[name]["intensity"] < ridge, name
    assert by_name["matmul batch 4096"]["intensity"] > ridge
    assert by_name["matmul batch 1"]["intensity"] < ridge, "a batch-1 matmul reads a weight matrix per row"

# --8<-- [start:small-matmul]
flush = torch.empty(numel, device=device)  # as large as the copy's source: clearing it empties the L2 cache


def matmul_kernel_ms(act, w):
    """The matrix product's own kernel time per call, from the profiler, with the L2 cache emptied before each
    call as do_bench does; what do_bench adds around the kernel is left out."""

    def step():
        flush.zero_()
        torch.mm(act, w)

    profile = _profile_diff.profile_step(step, calls=20)
    return sum(launch.us for launch in profile.launches if launch.category == _profile_diff.GEMM) / 1e3 / profile.calls


header = ("MiB", 6), ("do_bench ms", 13), ("kernel ms", 11), ("do_bench share", 16), ("kernel share", 14)
print(f"{'batch-1 matmul, weight':24}" + "".join(f"{name:>{w}}" for name, w in header))
small = []
for k, n in ((width, 4 * width), (2 * width, 8 * width), (4 * width, 16 * width)):  # the weight grows 4x, then 16x
    act = torch.randn(1, k, device=device, dtype=mm_dtype)
    w = torch.randn(k, n, device=device, dtype=mm_dtype)
    moved = (act.numel() + w.numel() + n) * act.element_size()
    whole, alone = ms(torch.mm, act, w), matmul_kernel_ms(act, w)
    small.append((moved, whole, alone))
    shares = [moved / t / 1e6 / copy_gbs if t else 0.0 for t in (whole, alone)]
    print(f"{f'({k}, {n})':24}{moved / 2**20:6.0f}{whole:13.4f}{alone:11.4f}{shares[0]:16.0%}{shares[1]:14.0%}")
if on_gpu:  # two points of the kernel's time against its bytes: a fixed part, and a rate beyond it
    (bytes_small, _, kernel_small), (bytes_large, _, kernel_large) = small[0], small[-1]
    rate = (bytes_large - bytes_small) / (kernel_large - kernel_small) / 1e6  # GB/s
    fixed_us = 1e3 * (kernel_small - bytes_small / rate / 1e6)
    print(f"kernel time = {fixed_us:.1f} us + bytes at {rate:.0f} GB/s ({rate / copy_gbs:.0%} of the copy's)")
# --8<-- [end:small-matmul]
if on_gpu:
    (moved_1, whole_1, alone_1), (moved_16, _, alone_16) = small[0], small[-1]
    assert alone_1 < 0.8 * whole_1, "do_bench's time holds more than the kernel"
    assert moved_16 / alone_16 > 1.5 * moved_1 / alone_1, "a larger weight reaches a larger share of the bandwidth"

# --8<-- [start:roofline-data]
print(json.dumps({"copy_gbs": copy_gbs, "peak_tflops": peak_tflops, "kernels": results}))
# --8<-- [end:roofline-data]

# --8<-- [start:took]
print(f"this example ran in {time.perf_counter() - started:.0f} s on {device.type}")
# --8<-- [end:took]
