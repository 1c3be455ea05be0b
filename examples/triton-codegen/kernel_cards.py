"""One card per kernel of the chapter's program: its kind, the operators fused into it, the bytes it
moves, its measured time, and its bandwidth as a share of what a plain copy reaches on the same GPU.

Run it as it is: `python examples/triton-codegen/kernel_cards.py`. The page shows the GPU recording;
on a CPU the script still compiles the program and prints the cards without bytes or times.
"""
# execdocs: devices=cuda

import re
from collections import defaultdict

import torch
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

# --8<-- [start:measure]
calls = 20
HBM3_TB_S = 3.35  # the H100 SXM's nominal memory bandwidth
kernel_us = defaultdict(float)  # GPU time per call, by kernel name as the profiler reports it
launches = defaultdict(int)
copies = {}  # the yardstick's bytes moved -> (GB/s, spread of its launches)
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

    # The yardstick: a copy (ATen's copy_) that moves as many bytes as the kernel, read and write
    # together, profiled exactly like the kernels: the same profiler, kernel time only, back to back.
    # Four sizes, because the bandwidth one kernel shows depends on how many bytes it moves.
    for moved_mib in (128, 256, 512, 1024):
        src = torch.empty(moved_mib * 2**20 // 2 // 4, device=device)  # float32: read half, write half
        dst = torch.empty_like(src)
        dst.copy_(src)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as copy_prof:
            for _ in range(calls):
                dst.copy_(src)
            torch.cuda.synchronize()
        gpu_events = [e for e in copy_prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        times = sorted(e.time_range.elapsed_us() for e in gpu_events)
        median_us = times[len(times) // 2]
        gbps = moved_mib * 2**20 / median_us / 1e3
        copies[moved_mib * 2**20] = gbps, (times[-1] - times[0]) / median_us
        print(f"copy moving {moved_mib:5} MiB: median {median_us:6.1f} us over {len(times)} launches "
              f"(spread {copies[moved_mib * 2**20][1]:.1%}), {gbps:,.0f} GB/s, "
              f"{gbps / (HBM3_TB_S * 1e3):.0%} of the nominal {HBM3_TB_S} TB/s")  # fmt: skip
        del src, dst
    for event_name, us in kernel_us.items():
        print(
            f"profiled: {us:8.1f} us per call, {launches[event_name] // calls} launch(es) per call: {event_name[:60]}"
        )
# --8<-- [end:measure]

# --8<-- [start:table]
def same_bytes_copy(moved: float) -> tuple[float, float]:
    """(GB/s, spread) of the profiled copy whose bytes are closest to `moved`."""
    return copies[min(copies, key=lambda size: abs(size - moved))]


print(f"{'kernel':<48} {'kind':<21} {'MiB':>6} {'us':>8} {'GB/s':>7} {'of copy':>8}")
for card in cards:
    if card["name"].startswith("extern_kernels."):  # every profiled kernel that is not Inductor's
        us = sum(t for event_name, t in kernel_us.items() if not event_name.startswith("triton_"))
    else:
        us = sum(t for event_name, t in kernel_us.items() if event_name.startswith(card["name"]))
    card["gbps"] = card["bytes"] / us / 1e3 if us and card["bytes"] else None
    card["share"] = card["gbps"] / same_bytes_copy(card["bytes"])[0] if card["gbps"] else None
    mib = f"{card['bytes'] / 2**20:6.0f}" if card["bytes"] else "     -"
    cells = f"{us:8.1f} {card['gbps']:7.0f} {card['share']:8.0%}" if card["share"] else f"{'-':>8} {'-':>7} {'-':>8}"
    print(f"{card['name'][:48]:<48} {card['kind']:<21} {mib} {cells}")
# --8<-- [end:table]
if device.type == "cuda":
    by_kind = {card["kind"]: card for card in cards}
    for card in triton_cards:
        ran = sum(n for event_name, n in launches.items() if event_name.startswith(card["name"]))
        assert ran == calls, f"{card['name']} ran once per call in the profile ({ran} launches in {calls} calls)"
        share, spread = card["share"], same_bytes_copy(card["bytes"])[1]
        assert share <= 1 + spread, f"{card['name']}: {share:.0%} of a same-bytes copy, beyond its spread"
    assert by_kind["pointwise"]["share"] > 0.5, "the pointwise kernel streams at close to copy bandwidth"
    assert by_kind["extern (library)"]["share"] < 0.5, "the float32 matmul is bound by arithmetic, not bytes"
    sizes = sorted(copies)
    assert copies[sizes[0]][0] > copies[sizes[-1]][0], "a copy that moves fewer bytes shows a higher bandwidth"
