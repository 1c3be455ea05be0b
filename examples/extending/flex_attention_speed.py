"""FlexAttention against SDPA and against attention written out in PyTorch, on the GPU, across
sequence lengths: causal attention, with and without a block mask.

Run it as it is on a GPU: `python examples/extending/flex_attention_speed.py`.
"""
# execdocs: devices=cuda

import functools
import json

import torch
import torch.nn.functional as F
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

import _attention as attention
import compile_tools

torch.manual_seed(0)
device = compile_tools.device()
batch, heads, head_dim = 4, 16, 64
seq_lens = (1024, 2048, 4096)


# --8<-- [start:candidates]
def causal_score(score, b, h, q_idx, kv_idx):
    return torch.where(q_idx >= kv_idx, score, float("-inf"))  # the mask as a score_mod: no block skipped


compiled_flex = torch.compile(flex_attention, dynamic=False)


def candidates(seq_len):
    block_mask = create_block_mask(attention.causal, None, None, seq_len, seq_len, device=device)
    return {
        "flex, block mask": functools.partial(compiled_flex, block_mask=block_mask),
        "flex, no block mask": functools.partial(compiled_flex, score_mod=causal_score),
        "SDPA (is_causal)": functools.partial(F.scaled_dot_product_attention, is_causal=True),
        "eager reference": functools.partial(
            attention.reference_attention, mask=torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()
        ),
    }


# --8<-- [end:candidates]

# --8<-- [start:sweep]
times = {}
for seq_len in seq_lens:
    q, k, v = attention.make_qkv(batch, heads, seq_len, head_dim, device, dtype=torch.bfloat16)
    for name, fn in candidates(seq_len).items():
        times.setdefault(name, {})[seq_len] = compile_tools.timing_ms(fn, q, k, v)
print(f"batch {batch}, {heads} heads, head dim {head_dim}, bfloat16, causal; median ms (p20-p80)")
print(f"{'':>20}" + "".join(f"{seq_len:>26}" for seq_len in seq_lens))
for name, by_len in times.items():
    cells = "".join(f"{t['median']:.3f} ({t['p20']:.3f}-{t['p80']:.3f})".rjust(26) for t in by_len.values())
    print(f"{name:>20}{cells}")
# --8<-- [end:sweep]
longest = seq_lens[-1]
flex_ms = times["flex, block mask"][longest]["median"]
assert times["flex, no block mask"][longest]["median"] / flex_ms > 1.2, "skipping half the blocks pays off"
assert times["eager reference"][longest]["median"] / flex_ms > 1.0, "one kernel beats the written-out matrices"

# --8<-- [start:sweep-data]
medians = {name: [round(t["median"], 4) for t in by_len.values()] for name, by_len in times.items()}
print(json.dumps({"seq_lens": seq_lens, "median_ms": medians}))
# --8<-- [end:sweep-data]
