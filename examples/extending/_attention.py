"""What the FlexAttention examples share: four attention variants written as FlexAttention mods,
and the same four written as plain PyTorch on the whole score matrix, the reference they are
checked against.
"""

import torch
from torch.nn.attention.flex_attention import and_masks

WINDOW = 256  # the sliding window: each query sees itself and the 255 keys before it


# --8<-- [start:mods]
def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def within_window(b, h, q_idx, kv_idx):
    return q_idx - kv_idx < WINDOW


sliding_window = and_masks(causal, within_window)


def alibi_slopes(n_heads, device):
    """ALiBi's per-head slopes: a geometric series, 2^-1, 2^-2, ... for 8 heads."""
    return torch.exp2(-torch.arange(1, n_heads + 1, device=device) * 8.0 / n_heads)


def make_alibi(slopes):
    def alibi(score, b, h, q_idx, kv_idx):
        return score + slopes[h] * (kv_idx - q_idx)  # a bias that grows with the distance

    return alibi


def make_document_mask(document_ids):
    def same_document(b, h, q_idx, kv_idx):
        return document_ids[q_idx] == document_ids[kv_idx]  # packed sequences do not see each other

    return same_document


# --8<-- [end:mods]


# --8<-- [start:references]
def reference_attention(q, k, v, *, mask=None, bias=None):
    """Attention on the whole (seq x seq) score matrix: what FlexAttention must compute, written out."""
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if bias is not None:
        scores = scores + bias
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def reference_masks(seq_len, document_ids, device):
    """Each variant's mask as a dense boolean matrix, built from torch's matrix helpers."""
    ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)
    return {
        "causal": ones.tril(),
        "sliding window": ones.tril() & ones.triu(-(WINDOW - 1)),
        "document": document_ids[:, None] == document_ids[None, :],
    }


def reference_alibi_bias(seq_len, slopes):
    """ALiBi's bias for every head, query and key: slope * (key position - query position)."""
    positions = torch.arange(seq_len, device=slopes.device)
    return slopes[:, None, None] * (positions[None, None, :] - positions[None, :, None])


# --8<-- [end:references]


def make_qkv(batch, heads, seq_len, head_dim, device, dtype=torch.float32):
    return [torch.randn(batch, heads, seq_len, head_dim, device=device, dtype=dtype) for _ in range(3)]
