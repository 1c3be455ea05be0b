"""FlexAttention in training, on the GPU: what create_block_mask costs against a training step and whether
building the mask once pays; the backward pass, its kernels and its gradients; and the compiles that a
changing sequence length costs.

Run it as it is on a GPU: `python examples/extending/flex_training.py`.
"""
# execdocs: devices=cuda

import functools
import statistics
import time

import torch
import torch.nn.functional as F
from torch._dynamo.testing import CompileCounterWithBackend
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

import _attention as attention
import compile_tools
from benchmarking import _profile_diff

torch.manual_seed(0)
device = compile_tools.device()
batch, heads, head_dim = 4, 16, 64


def qkv(seq_len):
    """Queries, keys and values in bfloat16 that take gradients, as a training step's are."""
    tensors = attention.make_qkv(batch, heads, seq_len, head_dim, device, dtype=torch.bfloat16)
    return [tensor.requires_grad_() for tensor in tensors]


def documents(seq_len):
    """Document ids of one packed batch, on the GPU: eight documents of random lengths, new in every batch."""
    cuts = torch.randint(1, seq_len, (7,), device=device).sort().values
    return torch.bucketize(torch.arange(seq_len, device=device), cuts, right=True)


# --8<-- [start:step]
compiled_flex = torch.compile(flex_attention, dynamic=False)


def training_step(q, k, v, block_mask):
    """Attention's share of a training step: forward, then backward from a loss."""
    compiled_flex(q, k, v, block_mask=block_mask).sum().backward()


def step_with_new_mask(q, k, v, build):
    training_step(q, k, v, build())
# --8<-- [end:step]


# --8<-- [start:mask-cost]
def mask_builders(seq_len):
    """Masks a training loop builds: causal (the same every step) and packed documents (new every batch),
    the latter also with create_block_mask's own compiled path (_compile=True)."""

    def document_mask(compile_it=False):
        mask_mod = attention.make_document_mask(documents(seq_len))
        return create_block_mask(mask_mod, None, None, seq_len, seq_len, device=device, _compile=compile_it)

    return {
        "causal": lambda: create_block_mask(attention.causal, None, None, seq_len, seq_len, device=device),
        "documents": document_mask,
        "documents, _compile": functools.partial(document_mask, compile_it=True),
    }


print(f"batch {batch}, {heads} heads of {head_dim}, bfloat16; ms per call, median of interleaved blocks (10th-90th)")
print(f"{'length':>6} {'mask':>19} {'build the mask':>22} {'step, mask built once':>24} {'step, mask rebuilt':>22}"
      f" {'compiles':>9}")  # fmt: skip
costs, graphs_before = {}, torch._dynamo.utils.counters["stats"]["unique_graphs"]
for seq_len in (1024, 2048, 4096):
    q, k, v = qkv(seq_len)
    for name, build in mask_builders(seq_len).items():
        graphs_before_row = torch._dynamo.utils.counters["stats"]["unique_graphs"]
        built_once = build()
        steps = {
            "build": build,
            "once": functools.partial(training_step, q, k, v, built_once),
            "rebuilt": functools.partial(step_with_new_mask, q, k, v, build),
        }
        times = _profile_diff.paired_times(steps, pairs=11, block_ms=50.0)
        cells, costs[seq_len, name] = [], {}
        for side, blocks in times.items():
            per_block = [statistics.median(wall for _, wall in block) for block in blocks]
            deciles = statistics.quantiles(per_block, n=10)
            costs[seq_len, name][side] = statistics.median(per_block)
            cells.append(f"{statistics.median(per_block):.3f} ({deciles[0]:.3f}-{deciles[-1]:.3f})")
        row_graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"] - graphs_before_row
        print(f"{seq_len:>6} {name:>19} {cells[0]:>22} {cells[1]:>24} {cells[2]:>22} {row_graphs:9}")
    q.grad = k.grad = v.grad = None
graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"] - graphs_before
print(f"compiled_flex compiled {graphs} graphs in all, for 3 lengths x 3 masks, each rebuilt in every rebuilt step")
# --8<-- [end:mask-cost]
for (seq_len, name), cost in costs.items():
    assert cost["rebuilt"] > cost["once"], f"{seq_len} {name}: rebuilding the mask adds its cost to the step"
assert graphs <= 9, "a new mask of the same length and mask_mod: no recompile"

# --8<-- [start:backward]
seq_len = 2048
q, k, v = qkv(seq_len)
causal_mask = create_block_mask(attention.causal, None, None, seq_len, seq_len, device=device)


def flex_forward():
    with torch.no_grad():
        compiled_flex(q, k, v, block_mask=causal_mask)


def sdpa_forward():
    with torch.no_grad():
        F.scaled_dot_product_attention(q, k, v, is_causal=True)


def sdpa_step():
    F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()


sides = {"FlexAttention": (flex_forward, functools.partial(training_step, q, k, v, causal_mask))}
sides["SDPA (is_causal)"] = (sdpa_forward, sdpa_step)
print(f"causal, length {seq_len}; GPU ms per call, from the profiler:  forward  forward+backward  backward's share")
profiles = {}
for name, (forward, step) in sides.items():
    forward_ms = _profile_diff.profile_step(forward, calls=10).per_call_ms()
    profiles[name] = _profile_diff.profile_step(step, calls=10)
    step_ms = profiles[name].per_call_ms()
    print(f"{name:>16} {forward_ms:44.3f} {step_ms:17.3f} {1 - forward_ms / step_ms:16.0%}")
print("FlexAttention's step, its kernels by GPU ms per call:")
flex_kernels = profiles["FlexAttention"].by_kernel()
for kernel, launches in sorted(flex_kernels.items(), key=lambda item: -sum(launch.us for launch in item[1])):
    print(f"  {sum(launch.us for launch in launches) / 1e3 / 10:7.3f} ms  {kernel[:80]}")
# --8<-- [end:backward]
generated = [kernel for kernel in flex_kernels if kernel.startswith("triton_tem_fused_flex_attention")]
assert len(generated) == 2 and any("backward" in kernel for kernel in generated), "a forward and a backward template"
q.grad = k.grad = v.grad = None
training_step(q, k, v, causal_mask)

# --8<-- [start:gradients]
flex_grads = [tensor.grad for tensor in (q, k, v)]
q.grad = k.grad = v.grad = None
F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
sdpa_grads = [tensor.grad for tensor in (q, k, v)]
q32, k32, v32 = (tensor.detach().float().requires_grad_() for tensor in (q, k, v))
full = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()
attention.reference_attention(q32, k32, v32, mask=full).sum().backward()
errors = {}
for name, grads in (("FlexAttention", flex_grads), ("SDPA", sdpa_grads)):
    exact = (q32.grad, k32.grad, v32.grad)
    differences = [(grad.float() - e).abs() for grad, e in zip(grads, exact, strict=True)]
    errors[name] = [difference.mean().item() for difference in differences]
    print(f"{name:>13}: dq, dk, dv against float32, mean | largest error: " + ", ".join(
        f"{d.mean().item():.2e} | {d.max().item():.4f}" for d in differences))  # fmt: skip
same = [(flex == sdpa).float().mean().item() for flex, sdpa in zip(flex_grads, sdpa_grads, strict=True)]
print("FlexAttention's and SDPA's bfloat16 gradients, share of elements equal: " + ", ".join(f"{s:.1%}" for s in same))
# --8<-- [end:gradients]
assert all(flex <= 2 * sdpa for flex, sdpa in zip(errors["FlexAttention"], errors["SDPA"], strict=True)), errors

# --8<-- [start:lengths]
print("four training steps at lengths 1024, 1536, 2048, 2560; a new block mask for each length")
compiles = {}
for dynamic in (False, None):
    torch._dynamo.reset()
    torch._inductor.config.force_disable_caches = True  # compile for real: no graph from an earlier run's cache
    counter = CompileCounterWithBackend("inductor")
    flex = torch.compile(flex_attention, backend=counter, dynamic=dynamic)
    first_calls = []
    for seq_len in (1024, 1536, 2048, 2560):
        q, k, v = qkv(seq_len)
        block_mask = create_block_mask(attention.causal, None, None, seq_len, seq_len, device=device)
        before = counter.frame_count
        torch.cuda.synchronize()
        start = time.perf_counter()
        flex(q, k, v, block_mask=block_mask).sum().backward()
        torch.cuda.synchronize()
        compiled_now = " (compiled)" if counter.frame_count > before else ""
        first_calls.append(f"{seq_len}: {time.perf_counter() - start:5.2f} s{compiled_now}")
    compiles[dynamic] = counter.frame_count
    print(f"dynamic={dynamic!s:5}: {counter.frame_count} compiles; first step at " + ", ".join(first_calls))
# --8<-- [end:lengths]
assert compiles[False] == 4, "dynamic=False: one compile per length"
assert compiles[None] < compiles[False], "automatic dynamic: the length becomes a symbol after it changes"
