"""What the hand-written kernel pages share: a residual add followed by a LayerNorm, in eager
PyTorch and as one hand-written Triton kernel.

Import this module after deciding whether Triton runs for real or under its interpreter: the
`@triton.jit` decorator reads TRITON_INTERPRET when it runs, at import.
"""

import torch
import torch.nn.functional as F
import triton
import triton.language as tl


# --8<-- [start:eager]
def add_layernorm(x, residual, weight, bias, eps=1e-5):
    h = x + residual
    return F.layer_norm(h, (h.shape[-1],), weight, bias, eps)


# --8<-- [end:eager]


# --8<-- [start:kernel]
@triton.jit
def add_layernorm_kernel(x_ptr, res_ptr, w_ptr, b_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)  # one program per row
    cols = tl.arange(0, BLOCK)  # BLOCK is a power of two >= n_cols
    mask = cols < n_cols  # the lanes past the end of the row do nothing
    offsets = row * n_cols + cols
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    r = tl.load(res_ptr + offsets, mask=mask, other=0.0)
    h = x + r  # the residual add, never written to memory
    mean = tl.sum(h, axis=0) / n_cols
    diff = tl.where(mask, h - mean, 0.0)  # masked lanes must not count in the variance
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + offsets, diff * rstd * w + b, mask=mask)


def add_layernorm_triton(x, residual, weight, bias, eps=1e-5):
    n_rows, n_cols = x.shape
    assert x.is_contiguous() and residual.is_contiguous()
    out = torch.empty_like(x)
    block = triton.next_power_of_2(n_cols)
    add_layernorm_kernel[(n_rows,)](x, residual, weight, bias, out, n_cols, eps, BLOCK=block, num_warps=4)
    return out


# --8<-- [end:kernel]


def make_inputs(n_rows, n_cols, device):
    """The inputs of both versions: activations, the residual stream, LayerNorm's weight and bias."""
    x = torch.randn(n_rows, n_cols, device=device)
    residual = torch.randn(n_rows, n_cols, device=device)
    weight = torch.rand(n_cols, device=device) + 0.5
    bias = torch.randn(n_cols, device=device)
    return x, residual, weight, bias
