"""Eager against three torch.compile modes across batch sizes: where compiling starts to pay off.

Run it as it is: `python examples/benchmarking/batch_sweep.py`. It needs a GPU for its claims;
on a CPU it runs the same code with small sizes, without CUDA graphs or timing claims.
"""
# execdocs: devices=cuda

import json
import time

import torch
from torch import nn
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

import compile_tools

started = time.perf_counter()
torch.manual_seed(0)
device = compile_tools.device()
on_gpu = device.type == "cuda"
dtype = torch.bfloat16 if on_gpu else torch.float32
width, heads, seq = (512, 8, 256) if on_gpu else (64, 4, 32)
batches = [1, 4, 16, 64, 256] if on_gpu else [1, 4]  # sequences per call
autotune_batches = [batches[-1]]  # max-autotune tunes every matmul shape: the largest batch only


# --8<-- [start:model]
class SelfAttention(nn.Module):
    """Self-attention written out, as many models still do: projections, scores, softmax, mix."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        batch, seq, width = x.shape
        q, k, v = self.qkv(x).view(batch, seq, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) * (q.shape[-1] ** -0.5)  # (batch, heads, seq, seq)
        mixed = scores.softmax(dim=-1) @ v
        return self.norm(x + self.out(mixed.transpose(1, 2).reshape(batch, seq, width)))


model = SelfAttention(width, heads).to(device, dtype).eval()
# --8<-- [end:model]


def sync():
    if on_gpu:
        torch.cuda.synchronize()


# --8<-- [start:latency]
def per_call_ms(fn, x, repeats=5):
    """Wall-clock milliseconds per call of back-to-back calls, median of `repeats` runs.

    Each run waits for the GPU at both ends, so it counts whatever limits the rate of calls: the
    GPU's work, or the CPU's launching when the GPU waits for it.
    """
    fn(x)
    sync()
    t0 = time.perf_counter()
    for _ in range(5):
        fn(x)
    sync()
    calls = max(5, int(0.02 / ((time.perf_counter() - t0) / 5)))  # about 20 ms per run
    runs = []
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(x)
        sync()
        runs.append((time.perf_counter() - t0) * 1e3 / calls)
    return sorted(runs)[repeats // 2]


# --8<-- [end:latency]


# --8<-- [start:busy]
def gpu_ms_per_call(fn, x, calls=20):
    """Milliseconds per call during which a GPU kernel ran: the kernels' durations, from torch.profiler."""
    fn(x)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn(x)
        torch.cuda.synchronize()
    kernel_us = sum(e.device_time_total for e in prof.events() if e.device_type == DeviceType.CUDA)
    return kernel_us / 1e3 / calls


# --8<-- [end:busy]


# --8<-- [start:sweep]
modes = ["default", "reduce-overhead", "max-autotune"] if on_gpu else ["default"]
latency = {"eager": {}}  # mode -> batch -> median ms
launches = {}  # mode -> GPU kernels per call at batch 1
kernel_ms = {}  # mode -> {batch: GPU busy ms per call}
with torch.no_grad():
    for batch in batches:
        x = torch.randn(batch, seq, width, device=device, dtype=dtype)
        latency["eager"][batch] = per_call_ms(model, x)
        if on_gpu:
            kernel_ms.setdefault("eager", {})[batch] = gpu_ms_per_call(model, x)
            if batch == 1:
                launches["eager"] = compile_tools.gpu_kernel_launches(model, x)
    for mode in modes:
        torch._dynamo.reset()  # each mode starts from an empty Dynamo cache
        compiled = torch.compile(model, mode=mode, dynamic=False)  # one compile per batch size
        latency[mode] = {}
        for batch in autotune_batches if mode == "max-autotune" else batches:
            x = torch.randn(batch, seq, width, device=device, dtype=dtype)
            t0 = time.perf_counter()
            for _ in range(3):  # the first call compiles; reduce-overhead records its CUDA graph on a later one
                compiled(x)
            compile_s = time.perf_counter() - t0
            latency[mode][batch] = per_call_ms(compiled, x)
            print(f"{mode:>16} batch {batch:5}: compiled in {compile_s:5.1f} s, {latency[mode][batch]:.4f} ms per call")
            if on_gpu:
                kernel_ms.setdefault(mode, {})[batch] = gpu_ms_per_call(compiled, x)
                if batch == 1:
                    launches[mode] = compile_tools.gpu_kernel_launches(compiled, x)
# --8<-- [end:sweep]

# --8<-- [start:sweep-data]
print(json.dumps({"width": width, "seq": seq, "dtype": str(dtype), "latency_ms": latency}))
# --8<-- [end:sweep-data]
# JSON turns the batch sizes into strings; keep using the dicts above.
largest, smallest = batches[-1], batches[0]
speedup = {mode: {b: latency["eager"][b] / ms for b, ms in latency[mode].items()} for mode in latency}
if on_gpu:
    assert speedup["default"][largest] > 1.0, "at the largest batch, compiled beats eager"
    assert speedup["default"][largest] > speedup["default"][smallest], "compile pays more as the batch grows"
    assert latency["reduce-overhead"][smallest] < latency["default"][smallest], "CUDA graphs win at batch 1"

# --8<-- [start:table]
header = f"{'batch':>6}" + "".join(f"{mode:>17}" for mode in latency)
print("speedup over eager (eager ms / mode ms)")
print(header)
for batch in batches:
    cells = [latency["eager"][batch] / latency[mode][batch] if batch in latency[mode] else None for mode in latency]
    print(f"{batch:6}" + "".join(f"{c:16.2f}x" if c else f"{'-':>17}" for c in cells))
for mode in modes:
    wins = [b for b in latency[mode] if latency["eager"][b] / latency[mode][b] >= 1.1]
    print(f"{mode:>16}: first 1.1x faster than eager at batch", wins[0] if wins else "- (never)")
# --8<-- [end:table]

# --8<-- [start:overhead]
if on_gpu:
    print(f"at batch {smallest}:")
    print(f"{'':16}{'kernels/call':>13}{'GPU busy ms':>13}{'latency ms':>12}{'busy share':>12}")
    for mode in [mode for mode in latency if smallest in latency[mode]]:
        busy = kernel_ms[mode][smallest]
        lat = latency[mode][smallest]
        print(f"{mode:16}{launches[mode]:13d}{busy:13.4f}{lat:12.4f}{busy / lat:12.0%}")
    print(f"at batch {largest}:")
    for mode in latency:
        if largest in kernel_ms[mode]:
            busy, lat = kernel_ms[mode][largest], latency[mode][largest]
            print(f"{mode:16}{'':13}{busy:13.4f}{lat:12.4f}{busy / lat:12.0%}")
# --8<-- [end:overhead]
if on_gpu:
    assert kernel_ms["eager"][smallest] / latency["eager"][smallest] < 0.5, "eager at batch 1: the GPU mostly waits"
    assert kernel_ms["eager"][largest] / latency["eager"][largest] > 0.6, "at the largest batch the GPU is busy"

# --8<-- [start:took]
print(f"this example ran in {time.perf_counter() - started:.0f} s on {device.type}")
# --8<-- [end:took]
