"""One card per kernel of the chapter's program: its kind, the operators fused into it, the bytes it
moves, its measured time, and its bandwidth as a share of what a plain copy reaches on the same GPU.

Run it as it is: `python examples/triton-codegen/kernel_cards.py`. The page shows the GPU recording;
on a CPU the script still compiles the program and prints the cards without bytes or times.
"""
# execdocs: devices=cuda

import re
from collections import defaultdict

import torch
import torch.nn.functional as F
from _gpu_events import gpu_events_us
from _program import block, kernel_kind, launch_comments, make_inputs

import compile_tools

torch.manual_seed(0)
device = compile_tools.device()
inputs = make_inputs(device)
x, weight, bias, logits = inputs

# --8<-- [start:cards]
torch._inductor.config.benchmark_kernel = True  # Inductor then writes kernel_num_gb into inductor_meta
compiled = torch.compile(block)
wrapper, *_ = compile_tools.generated_code(compiled, *inputs)
aten_ops = launch_comments(wrapper)  # the "Original ATen:" comment above each launch in call()
cards = []
for name in compile_tools.kernel_names(wrapper):
    num_gb = re.search(r"'kernel_num_gb': ([0-9.e+-]+)", compile_tools.kernel_source(wrapper, name))
    cards.append(
        {
            "name": name,
            "kind": kernel_kind(name),
            "ops": aten_ops.get(name, "?"),
            "bytes": float(num_gb.group(1)) * 1e9 if num_gb else None,
        }
    )
# The matmul is not Inductor's kernel: count its bytes from the shapes (read x, weight, bias; write scores).
matmul = next(call for call in aten_ops if call.startswith("extern_kernels."))
matmul_bytes = (x.numel() + weight.numel() + bias.numel() + x.shape[0] * weight.shape[0]) * x.element_size()
cards.append({"name": matmul, "kind": "extern (library)", "ops": aten_ops[matmul], "bytes": matmul_bytes})
for card in cards:
    moved = f"{card['bytes'] / 2**20:,.0f} MiB" if card["bytes"] else "n/a on CPU"
    print(f"{card['name']}\n    kind: {card['kind']}\n    ops:  {card['ops']}\n    moves: {moved}")
# --8<-- [end:cards]
triton_cards = [card for card in cards if card["name"].startswith("triton_")]
if device.type == "cuda":
    assert len(triton_cards) == 3 and all(card["bytes"] for card in triton_cards), cards


def kernel_times_us(fn, calls: int, only: str = "") -> tuple[float, float]:
    """Median GPU time (us) of the GPU activities of fn() whose name contains `only`, over `calls` calls
    back to back under the profiler, and their spread ((slowest - fastest) / median)."""
    times = sorted(us for name, us in gpu_events_us(fn, calls) if only in name)
    median = times[len(times) // 2]
    return median, (times[-1] - times[0]) / median


# --8<-- [start:measure]
calls = 20
HBM3_TB_S = 3.35  # the H100 SXM's nominal memory bandwidth
kernel_us = defaultdict(float)  # GPU time per call, by kernel name as the profiler reports it
launches = defaultdict(int)
copies = {}  # the yardstick's bytes moved -> (GB/s, spread of its launches)
alone_us = {}  # each Triton kernel run alone, back to back: its median us, by name prefix
if device.type == "cuda":
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            compiled(*inputs)
        torch.cuda.synchronize()
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            kernel_us[event.name] += event.time_range.elapsed_us() / calls
            launches[event.name] += 1

    # The yardstick: a copy that moves as many bytes as the kernel, read and write together, profiled
    # exactly like the kernels: the same profiler, GPU time only, back to back. For a contiguous tensor,
    # ATen's copy_ is a device-to-device cudaMemcpyAsync; the profiler names it "Memcpy DtoD".
    # Four sizes, to see whether the bandwidth depends on how many bytes a kernel moves.
    for moved_mib in (128, 256, 512, 1024):
        src = torch.empty(moved_mib * 2**20 // 2 // 4, device=device)  # float32: read half, write half
        dst = torch.empty_like(src)
        median_us, spread = kernel_times_us(lambda dst=dst, src=src: dst.copy_(src), calls)
        gbps = moved_mib * 2**20 / median_us / 1e3
        copies[moved_mib * 2**20] = gbps, spread
        print(f"copy moving {moved_mib:5} MiB: median {median_us:6.1f} us over {calls} launches "
              f"(spread {spread:.1%}), {gbps:,.0f} GB/s, "
              f"{gbps / (HBM3_TB_S * 1e3):.0%} of the nominal {HBM3_TB_S} TB/s")  # fmt: skip
        del src, dst

    # The one thing changed: the neighbours. In the program, each kernel follows a different one; the
    # copy above follows itself. Here each Triton kernel runs alone, back to back with itself, and the
    # copy runs between matrix products, which write little and take over a millisecond each.
    scores = F.linear(F.gelu(x), weight, bias)
    alone = {
        "triton_poi_": torch.compile(lambda: F.gelu(x)),
        "triton_per_": torch.compile(lambda: torch.softmax(scores, dim=-1)),
        "triton_red_": torch.compile(lambda: torch.logsumexp(logits, dim=-1)),
    }
    alone_times = {prefix: kernel_times_us(fn, calls) for prefix, fn in alone.items()}
    alone_us = {prefix: median for prefix, (median, _) in alone_times.items()}
    src = torch.empty(2**25, device=device)  # 128 MiB read, 128 MiB written
    dst, a = torch.empty_like(src), torch.randn(4096, 4096, device=device)

    def copy_between_matmuls():
        a @ a
        dst.copy_(src)

    def gelu_between_matmuls():
        a @ a
        alone["triton_poi_"]()

    def gelu_between_waits():  # a kernel that spins for about a millisecond, reading and writing nothing
        torch.cuda._sleep(2_000_000)
        alone["triton_poi_"]()

    copy_after_matmul_us = kernel_times_us(copy_between_matmuls, calls, only="Memcpy")[0]
    copy_after_matmul_gbps = 2 * src.numel() * 4 / copy_after_matmul_us / 1e3
    print(f"copy moving   256 MiB, each launch after a matmul: median {copy_after_matmul_us:6.1f} us, "
          f"{copy_after_matmul_gbps:,.0f} GB/s")  # fmt: skip
    gelu_alone_us, gelu_alone_spread = alone_times["triton_poi_"]
    gelu_after_matmul_us = kernel_times_us(gelu_between_matmuls, calls, only="triton_poi_")[0]
    gelu_after_wait_us = kernel_times_us(gelu_between_waits, calls, only="triton_poi_")[0]
    print(f"pointwise kernel back to back: median {gelu_alone_us:6.1f} us (spread {gelu_alone_spread:.1%}); "
          f"each launch after a matmul: {gelu_after_matmul_us:6.1f} us; "
          f"each launch after a kernel that moves no bytes: {gelu_after_wait_us:6.1f} us")  # fmt: skip
    for event_name, us in kernel_us.items():
        print(
            f"profiled: {us:8.1f} us per call, {launches[event_name] // calls} launch(es) per call: {event_name[:60]}"
        )
# --8<-- [end:measure]


# --8<-- [start:table]
def same_bytes_copy(moved: float) -> tuple[float, float]:
    """(GB/s, spread) of the profiled copy whose bytes are closest to `moved`."""
    return copies[min(copies, key=lambda size: abs(size - moved))]


print(f"{'kernel':<48} {'kind':<21} {'MiB':>6} {'us':>8} {'GB/s':>7} {'of copy':>8} {'alone':>7}")
for card in cards:
    if card["name"].startswith("extern_kernels."):  # every profiled kernel that is not Inductor's
        us = sum(t for event_name, t in kernel_us.items() if not event_name.startswith("triton_"))
    else:
        us = sum(t for event_name, t in kernel_us.items() if event_name.startswith(card["name"]))
    card["gbps"] = card["bytes"] / us / 1e3 if us and card["bytes"] else None
    card["share"] = card["gbps"] / same_bytes_copy(card["bytes"])[0] if card["gbps"] else None
    alone_time = next((t for prefix, t in alone_us.items() if card["name"].startswith(prefix)), None)
    card["alone_share"] = card["bytes"] / alone_time / 1e3 / same_bytes_copy(card["bytes"])[0] if alone_time else None
    mib = f"{card['bytes'] / 2**20:6.0f}" if card["bytes"] else "     -"
    cells = f"{us:8.1f} {card['gbps']:7.0f} {card['share']:8.0%}" if card["share"] else f"{'-':>8} {'-':>7} {'-':>8}"
    cells += f" {card['alone_share']:7.0%}" if card["alone_share"] else f" {'-':>7}"
    print(f"{card['name'][:48]:<48} {card['kind']:<21} {mib} {cells}")
# --8<-- [end:table]
if device.type == "cuda":
    by_kind = {card["kind"]: card for card in cards}
    for card in triton_cards:
        ran = sum(n for event_name, n in launches.items() if event_name.startswith(card["name"]))
        assert ran == calls, f"{card['name']} ran once per call in the profile ({ran} launches in {calls} calls)"
        share, spread = card["alone_share"], same_bytes_copy(card["bytes"])[1]
        assert share <= 1 + spread, f"{card['name']} alone: {share:.0%} of a same-bytes copy, beyond its spread"
    assert by_kind["pointwise"]["share"] > 0.5, "the pointwise kernel streams at close to copy bandwidth"
    assert by_kind["extern (library)"]["share"] < 0.5, "the float32 matmul is bound by arithmetic, not bytes"
    bandwidths = [gbps for gbps, _ in copies.values()]
    assert max(bandwidths) < 1.05 * min(bandwidths), "from 128 MiB to 1 GiB, the copy's bandwidth hardly moves"
    assert by_kind["pointwise"]["share"] > 1 + same_bytes_copy(by_kind["pointwise"]["bytes"])[1], "in the program"
