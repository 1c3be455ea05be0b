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
kernel_us = defaultdict(float)  # GPU time per call, by kernel name as the profiler reports it
launches = defaultdict(int)
if device.type == "cuda":
    from torch.profiler import ProfilerActivity, profile

    compiled(*inputs)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            compiled(*inputs)
        torch.cuda.synchronize()
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            kernel_us[event.name] += event.time_range.elapsed_us() / calls
            launches[event.name] += 1

    # The reference: a device-to-device copy of 256 MiB, which reads and writes every byte once.
    src = torch.randn(2**26, device=device)
    dst = torch.empty_like(src)
    copy_ms = compile_tools.timing_ms(dst.copy_, src)["median"]
    copy_gbps = 2 * src.numel() * src.element_size() / copy_ms / 1e6
    print(f"copy bandwidth: {copy_gbps:,.0f} GB/s")
    for event_name, us in kernel_us.items():
        print(
            f"profiled: {us:8.1f} us per call, {launches[event_name] // calls} launch(es) per call: {event_name[:60]}"
        )
# --8<-- [end:measure]

# --8<-- [start:table]
print(f"{'kernel':<48} {'kind':<21} {'MiB':>6} {'us':>8} {'GB/s':>7} {'of copy':>8}")
for card in cards:
    if card["name"].startswith("extern_kernels."):  # every profiled kernel that is not Inductor's
        us = sum(t for event_name, t in kernel_us.items() if not event_name.startswith("triton_"))
    else:
        us = sum(t for event_name, t in kernel_us.items() if event_name.startswith(card["name"]))
    card["gbps"] = card["bytes"] / us / 1e3 if us and card["bytes"] else None
    card["share"] = card["gbps"] / copy_gbps if card["gbps"] else None
    mib = f"{card['bytes'] / 2**20:6.0f}" if card["bytes"] else "     -"
    cells = f"{us:8.1f} {card['gbps']:7.0f} {card['share']:8.0%}" if card["share"] else f"{'-':>8} {'-':>7} {'-':>8}"
    print(f"{card['name'][:48]:<48} {card['kind']:<21} {mib} {cells}")
# --8<-- [end:table]
if device.type == "cuda":
    by_kind = {card["kind"]: card for card in cards}
    for card in triton_cards:
        ran = sum(n for event_name, n in launches.items() if event_name.startswith(card["name"]))
        assert ran == calls, f"{card['name']} ran once per call in the profile ({ran} launches in {calls} calls)"
        assert card["share"] < 1.3, f"{card['name']}: {card['share']:.0%} of copy bandwidth is not plausible"
    assert by_kind["pointwise"]["share"] > 0.5, "the pointwise kernel streams at close to copy bandwidth"
    assert by_kind["extern (library)"]["share"] < 0.5, "the float32 matmul is bound by arithmetic, not bytes"
