"""The program every page of the Triton-codegen chapter compiles, with its inputs and a few readers of
Inductor's output code. Examples import it: `from _program import block, make_inputs`.
"""

import re

import torch
import torch.nn.functional as F


# --8<-- [start:program]
def block(x, weight, bias, logits):
    hidden = F.gelu(x)  # elementwise; the matmul needs it in memory
    scores = F.linear(hidden, weight, bias)  # a matmul with a bias: a library kernel
    probs = torch.softmax(scores, dim=-1)  # a reduction over a short row (width)
    lse = torch.logsumexp(logits, dim=-1)  # a reduction over a long row (vocab)
    return probs, lse


def make_inputs(device):
    # GPU: x, the hidden and score tensors and logits take 128 MiB each, far more than the 50 MiB L2 cache.
    # CPU: smaller, and a width of 196, not a multiple of 8 or 16 floats (one vector), for a tail loop.
    rows, width, vocab_rows, vocab = (32768, 1024, 4096, 8192) if device.type == "cuda" else (2048, 196, 256, 4096)
    x = torch.randn(rows, width, device=device)
    weight = torch.randn(width, width, device=device) / width**0.5
    bias = torch.randn(width, device=device)
    logits = torch.randn(vocab_rows, vocab, device=device)
    return x, weight, bias, logits


# --8<-- [end:program]


def kernel_kind(name: str) -> str:
    """The kind of a generated kernel, from the prefix Inductor gave its name."""
    prefixes = {
        "triton_poi_": "pointwise",
        "triton_red_": "reduction",
        "triton_per_": "persistent reduction",
        "cpp_fused_": "C++ loop nest",
    }
    return next((kind for prefix, kind in prefixes.items() if name.startswith(prefix)), "other")


def launch_comments(wrapper: str) -> dict[str, str]:
    """For each kernel call in the wrapper's call(), the `Original ATen:` list in the comment above it."""
    found = {}
    comment = None
    for line in wrapper.splitlines():
        if "Original ATen:" in line:
            comment = line.split("Original ATen:")[1].strip()
        match = re.match(r"\s*((?:triton|cpp_fused)_\w+|extern_kernels\.\w+)[(.]", line)
        if match and comment is not None:
            found.setdefault(match.group(1), comment)
            comment = None
    return found
