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

    # Each Triton kernel's operation compiled on its own and run back to back with itself, as the copy is.
    scores = F.linear(F.gelu(x), weight, bias)
    alone = {
        "triton_poi_": torch.compile(lambda: F.gelu(x)),
        "triton_per_": torch.compile(lambda: torch.softmax(scores, dim=-1)),
        "triton_red_": torch.compile(lambda: torch.logsumexp(logits, dim=-1)),
    }
    alone_us = {prefix: kernel_times_us(fn, calls)[0] for prefix, fn in alone.items()}
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

# --8<-- [start:previous-kernel]
# One thing changes: the kernel that runs just before. The H100's L2 cache (50 MiB) writes back: a
# kernel's writes stay in it as dirty lines, and whoever needs their place later writes them to
# memory first. So each kernel is timed after one that only reads 128 MiB (it leaves clean lines),
# after one that writes 128 MiB (dirty lines), after that write and 1 ms of a GPU busy with no
# memory traffic (does the cache write back while nothing else runs?), and after its neighbour
# in the program (the copy after the pointwise kernel's neighbour, in the pointwise kernel's place).
after_us = {}  # (kernel, what ran before it) -> median us
if device.type == "cuda":
    read_128_mib = torch.randn(2**25, device=device)
    write_128_mib = torch.empty(2**25, device=device)
    sum_of_read = torch.compile(lambda: read_128_mib.sum())  # reads 128 MiB, writes 4 bytes
    copy_256_mib = torch.empty(2**25, device=device), torch.empty(2**25, device=device)
    before = {
        "reads 128 MiB": sum_of_read,
        "writes 128 MiB": lambda: write_128_mib.fill_(1.0),
        "writes, idles 1 ms": lambda: (write_128_mib.fill_(1.0), torch.cuda._sleep(2_000_000)),
    }
    kernels = {  # name -> (run it, its profiler name, its neighbour before it in the program)
        "copy, 256 MiB": (lambda: copy_256_mib[1].copy_(copy_256_mib[0]), "Memcpy", alone["triton_red_"]),
        "pointwise (gelu)": (alone["triton_poi_"], "triton_poi_", alone["triton_red_"]),
        "looped logsumexp": (alone["triton_red_"], "triton_red_", alone["triton_per_"]),
    }
    print(
        f"{'median us, after a kernel that':<30}"
        + "".join(f"{label:>20}" for label in before)
        + f"{'its neighbour':>16}"
    )
    for name, (run, profiled_as, neighbour) in kernels.items():
        for label, previous in {**before, "its neighbour": neighbour}.items():
            after_us[name, label] = kernel_times_us(
                lambda previous=previous, run=run: (previous(), run()), calls, only=profiled_as
            )[0]
        cells = [f"{after_us[name, label]:20.1f}" for label in before]
        print(f"{name:<30}" + "".join(cells) + f"{after_us[name, 'its neighbour']:16.1f}")
# --8<-- [end:previous-kernel]
if device.type == "cuda":
    in_program_us = {card["kind"]: card["bytes"] / card["gbps"] / 1e3 for card in triton_cards}
    clean, dirty = after_us["looped logsumexp", "reads 128 MiB"], after_us["looped logsumexp", "writes 128 MiB"]
    assert dirty > 1.1 * clean, "a kernel that only reads pays for the dirty lines its predecessor left"
    assert after_us["looped logsumexp", "writes, idles 1 ms"] > 1.1 * clean, "an idle GPU does not write them back"
    for name, kind in (("looped logsumexp", "reduction"), ("pointwise (gelu)", "pointwise")):
        neighbour_us = after_us[name, "its neighbour"]
        assert abs(in_program_us[kind] / neighbour_us - 1) < 0.05, f"{name}: after its neighbour as in the program"
    for label in ("reads 128 MiB", "its neighbour"):
        like_for_like = after_us["pointwise (gelu)", label] / after_us["copy, 256 MiB", label]
        assert abs(like_for_like - 1) < 0.05, (
            f"after the same kernel ({label}), the pointwise kernel takes the copy's time"
        )
