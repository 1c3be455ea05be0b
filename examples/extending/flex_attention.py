"""FlexAttention: four attention variants written as score_mod / mask_mod, each compiled into one
generated attention kernel, checked against plain PyTorch, and the block mask that lets the
kernel skip whole blocks of the score matrix.

Run it as it is: `python examples/extending/flex_attention.py` (on a GPU if torch sees one).
"""

import functools

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

import _attention as attention
import compile_tools

torch.manual_seed(0)
device = compile_tools.device()
batch, heads, seq_len, head_dim = 1, 8, 1024, 64
q, k, v = attention.make_qkv(batch, heads, seq_len, head_dim, device)
# Three packed sequences of 300, 500 and 224 tokens in one row of 1024.
document_ids = torch.repeat_interleave(torch.arange(3, device=device), torch.tensor([300, 500, 224], device=device))

# --8<-- [start:check]
slopes = attention.alibi_slopes(heads, device)
masks = attention.reference_masks(seq_len, document_ids, device)
variants = {  # name: (score_mod, mask_mod, the reference's mask, the reference's bias)
    "causal": (None, attention.causal, masks["causal"], None),
    "sliding window": (None, attention.sliding_window, masks["sliding window"], None),
    "alibi": (attention.make_alibi(slopes), None, None, attention.reference_alibi_bias(seq_len, slopes)),
    "document": (None, attention.make_document_mask(document_ids), masks["document"], None),
}
compiled_flex = torch.compile(flex_attention, dynamic=False)
differences = {}
for name, (score_mod, mask_mod, mask, bias) in variants.items():
    block_mask = create_block_mask(mask_mod, None, None, seq_len, seq_len, device=device) if mask_mod else None
    out = compiled_flex(q, k, v, score_mod=score_mod, block_mask=block_mask)
    expected = attention.reference_attention(q, k, v, mask=mask, bias=bias)
    torch.testing.assert_close(out, expected, atol=1e-3, rtol=1e-3)  # float32, another order of sums
    differences[name] = (out - expected).abs().max().item()
    print(f"{name:>15}: largest difference from plain PyTorch {differences[name]:.1e}")
# --8<-- [end:check]

# --8<-- [start:kernel]
torch._dynamo.reset()
causal_mask = create_block_mask(attention.causal, None, None, seq_len, seq_len, device=device)
wrapper, *_ = compile_tools.generated_code(functools.partial(compiled_flex, block_mask=causal_mask), q, k, v)
kernels = compile_tools.kernel_names(wrapper)
print("kernels in the output code:", kernels)
if device.type == "cuda":
    template_kernels = [name for name in kernels if name.startswith("triton_tem_")]
    source = compile_tools.kernel_source(wrapper, template_kernels[0])
    compile_tools.print_lines(
        source,
        keep=lambda line: line.strip().startswith(("@triton", "def ")) or "tl.dot(" in line,
        why_cut="the body, apart from its decorators, its functions and their matrix products",
    )
else:
    template_kernels = [name for name in kernels if "flex_attention" in name]
    source = compile_tools.kernel_source(wrapper, template_kernels[0])
    compile_tools.print_lines(source, keep=lambda line: line.startswith(("inline void", "void kernel(")),
                              why_cut="the C++ bodies; only the heads of its functions are kept")
print(f"{template_kernels[0]}: {len(source.splitlines())} lines of generated source, called by the wrapper as")
launches = [line.strip() for line in compile_tools.lines_between(wrapper, "def call(", "return (").splitlines()
            if template_kernels[0] in line and not line.strip().startswith("#")]
print(*launches, sep="\n")
# --8<-- [end:kernel]
assert len(template_kernels) == 1, f"one generated attention kernel per call: {kernels}"
if device.type == "cuda":
    assert template_kernels[0].startswith("triton_tem_")
    assert source.count("tl.dot(") >= 2, "two matrix products per block: q @ k^T, then p @ v"
    assert "KV_NUM_BLKS" in source and "FULL_KV_IDX" in source, "the block mask's tensors are kernel arguments"
else:
    assert "micro_gemm" in source, "small matrix-multiply helpers for the two products"
    assert "kv_num_blocks" in source and "full_kv_indices" in source, "the block mask's tensors are arguments"


# --8<-- [start:block-mask]
def tiles(dense_mask, block=128):
    """Count the (block x block) tiles of a dense mask: with any position kept, and with all kept."""
    n = dense_mask.shape[0] // block
    tile_view = dense_mask.reshape(n, block, n, block).transpose(1, 2)
    return tile_view.any(-1).any(-1).sum().item(), tile_view.all(-1).all(-1).sum().item()


print(f"{'':>15}  {'computed':>8}  {'of them full':>12}  {'skipped':>7}  (blocks of 128 x 128, of 64)")
block_counts = {}
for name in ("causal", "sliding window", "document"):
    block_mask = create_block_mask(variants[name][1], None, None, seq_len, seq_len, device=device)
    partial = block_mask.kv_num_blocks.sum().item()  # blocks where the mask must be evaluated
    full = block_mask.full_kv_num_blocks.sum().item()  # blocks that are kept whole: no mask needed
    total = (seq_len // 128) ** 2
    block_counts[name] = (partial + full, full, tiles(masks[name]))
    print(f"{name:>15}  {partial + full:>8}  {full:>12}  {total - partial - full:>7}")
# --8<-- [end:block-mask]
for name, (computed, full, (tiles_any, tiles_all)) in block_counts.items():
    assert (computed, full) == (tiles_any, tiles_all), f"{name}: the block mask matches the dense mask's tiles"
assert block_counts["causal"][:2] == (36, 28), "causal: 8 diagonal blocks to mask, 28 below kept whole"
assert block_counts["sliding window"][0] == 21, "a window of 256 needs at most 3 key blocks per query block"
