"""Eager against three torch.compile modes across batch sizes: where compiling starts to pay off.

Run it as it is: `python examples/benchmarking/batch_sweep.py`. It needs a GPU for its claims;
on a CPU it runs the same code with small sizes, without CUDA graphs or timing claims.
"""
# execdocs: devices=cuda

import functools
import json
import re
import time

import torch
from torch import nn
from torch._dynamo.utils import counters
from torch._inductor.utils import fresh_cache

import _profile_diff
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


# --8<-- [start:compile]
def compile_for(compiled, x) -> str:
    """Call `compiled` until it is ready for x (reduce-overhead records its CUDA graph on a later call than the
    first), and say how long that took and how many of its Triton kernels were built, not found in memory."""
    inductor = counters["inductor"]
    requested, reused = inductor["async_compile_cache_miss"], inductor["async_compile_cache_hit"]
    sync()
    t0 = time.perf_counter()
    for _ in range(3):
        compiled(x)
    sync()
    # Every kernel Inductor asks for counts as a miss; the ones already compiled in this process count as hits too.
    requested, reused = inductor["async_compile_cache_miss"] - requested, inductor["async_compile_cache_hit"] - reused
    seconds = time.perf_counter() - t0
    return f"compiled in {seconds:4.1f} s, Triton kernels built {requested - reused:2d}, reused {reused:2d}"


# --8<-- [end:compile]

# --8<-- [start:sweep]
modes = ["default", "reduce-overhead", "max-autotune"] if on_gpu else ["default"]
results = {}  # mode -> batch -> _profile_diff.compare(eager, compiled): paired speedup, and per side host/GPU ms
# fresh_cache(): an empty cache folder for this run, so the first compile of each kernel is cold, in every run.
with torch.no_grad(), fresh_cache():
    for mode in modes:
        torch._dynamo.reset()  # each mode starts from an empty Dynamo cache
        compiled = torch.compile(model, mode=mode, dynamic=False)  # one compile per batch size
        results[mode] = {}
        for batch in autotune_batches if mode == "max-autotune" else batches:
            x = torch.randn(batch, seq, width, device=device, dtype=dtype)
            built = compile_for(compiled, x)
            result = results[mode][batch] = _profile_diff.compare(
                functools.partial(model, x), functools.partial(compiled, x)
            )
            low, high = result["speedup_range"]
            print(f"{mode:>15} batch {batch:3}: {built}; {result['speedup']:.2f}x [{low:.2f}-{high:.2f}]")
# --8<-- [end:sweep]

# --8<-- [start:sweep-data]
sides = ("ms", "host_ms", "busy_ms")
print(
    json.dumps(
        {
            "eager": {b: {k: results["default"][b]["eager"][k] for k in sides} for b in batches},
            "modes": {
                mode: {
                    b: {"speedup": r["speedup"], "range": r["speedup_range"], **{k: r["compiled"][k] for k in sides}}
                    for b, r in by_batch.items()
                }  # fmt: skip
                for mode, by_batch in results.items()
            },
        }
    )
)
# --8<-- [end:sweep-data]
smallest, largest = batches[0], batches[-1]


# --8<-- [start:table]
def paired(result) -> str:
    low, high = result["speedup_range"]
    return f"{result['speedup']:5.2f}x [{low:.2f}-{high:.2f}]"


print("per call, ms: wall clock | host (until the call returns) | GPU busy; the bound; paired speedup over eager")
for batch in batches:
    print(f"batch {batch}")
    eager = results["default"][batch]["eager"]
    rows = [("eager", eager, "")] + [
        (mode, r[batch]["compiled"], paired(r[batch])) for mode, r in results.items() if batch in r
    ]
    for name, side, speedup in rows:
        times = f"{side['ms']:7.4f} | {side['host_ms']:7.4f} | {side['busy_ms']:7.4f}"
        print(f"  {name:>15} {times}  {side['bound']:12} {speedup}")
# --8<-- [end:table]
if on_gpu:
    default, graphs = results["default"], results["reduce-overhead"]
    for batch in (smallest, 4):  # both sides wait for the host, and compiling did not shorten the host's part
        assert default[batch]["eager"]["bound"] == default[batch]["compiled"]["bound"] == "launch-bound", batch
        assert default[batch]["compiled"]["host_ms"] > 0.8 * default[batch]["eager"]["host_ms"], batch
        assert default[batch]["speedup_range"][0] < 1.1, f"at batch {batch}, default is not reliably faster"
    assert default[largest]["eager"]["bound"] == "GPU-bound", "at the largest batch, eager waits on the GPU"
    # default's GPU is busy for about 80% of its call there, on the line between GPU-bound and mixed
    assert default[largest]["compiled"]["busy_ms"] > 0.75 * default[largest]["compiled"]["ms"], "mostly GPU work"
    assert default[largest]["speedup_range"][0] > 1.2, "at the largest batch, default beats eager in every pair"
    assert default[largest]["eager"]["busy_ms"] > 1.3 * default[largest]["compiled"]["busy_ms"], "fusion cut GPU work"
    for batch in batches[:-1]:  # CUDA graphs take the kernel launches off the host
        assert graphs[batch]["compiled"]["host_ms"] < 0.6 * graphs[batch]["eager"]["host_ms"], batch
    for batch in batches[:3]:
        assert graphs[batch]["speedup_range"][0] > 1.1, f"reduce-overhead beats eager at batch {batch}"


# --8<-- [start:kernels]
def readable(kernel: str) -> str:
    """A library kernel's name without its template arguments, but with the innermost functor that names the work."""
    if "<" not in kernel:
        return kernel
    templates = [name.split("::")[-1] for name in re.findall(r"[\w:]+(?=<)", kernel.split(">(")[0])]
    return f"{templates[0]}<...{templates[-1]}...>" if len(templates) > 1 else f"{templates[0]}<...>"


def kernels_per_call(profile) -> dict[str, float]:
    """Microseconds per call of each kernel a profile saw, by name."""
    return {name: sum(k.us for k in launches) / profile.calls for name, launches in profile.by_kernel().items()}


if on_gpu:
    named = {  # batch -> mode -> kernel -> us per call
        batch: {
            mode: kernels_per_call(results[mode][batch]["compiled"]["profile"])
            for mode in ("default", "reduce-overhead")
        }
        for batch in (smallest, largest)
    }
    for batch, by_mode in named.items():
        print(f"batch {batch}: kernels per call, us ({'default':>7} {'reduce-overhead':>15})")
        for name in sorted(set().union(*by_mode.values()), key=lambda n: -max(k.get(n, 0) for k in by_mode.values())):
            cells = "".join(f"{by_mode[mode][name]:{w}.2f}" if name in by_mode[mode] else f"{'-':>{w}}"
                            for mode, w in (("default", 8), ("reduce-overhead", 16)))  # fmt: skip
            print(f"  {_profile_diff.short(readable(name), 70):70}{cells}")
    print("inputs copied into a CUDA graph's own buffers (graphs recorded with such an input):",
          counters["inductor"]["cudagraph_recorded_non_static_inputs"])  # fmt: skip
# --8<-- [end:kernels]
if on_gpu:
    extra = {  # batch -> the kernels reduce-overhead runs and default does not
        batch: {name: us for name, us in by_mode["reduce-overhead"].items() if name not in by_mode["default"]}
        for batch, by_mode in named.items()
    }
    assert all(kernels and all("Copy" in name for name in kernels) for kernels in extra.values()), (
        f"the only extra kernel copies: {extra}"
    )
    gap_us = 1e3 * (
        results["reduce-overhead"][largest]["compiled"]["busy_ms"] - results["default"][largest]["compiled"]["busy_ms"]
    )
    copy_us = sum(extra[largest].values())
    assert copy_us > 0.6 * gap_us, (
        f"the input copy is most of reduce-overhead's extra GPU time: {copy_us:.1f} of {gap_us:.1f} us"
    )

# --8<-- [start:took]
print(f"this example ran in {time.perf_counter() - started:.0f} s on {device.type}")
# --8<-- [end:took]
