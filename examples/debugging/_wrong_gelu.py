"""A realistic defect, planted: a post-grad pass of the user's own that swaps the exact GELU for a
cheaper approximation. Inductor runs it, the result is wrong, nothing crashes.

The example `wrong_numbers.py` imports it, and so does the program it runs in a subprocess:
`from debugging._wrong_gelu import gelu_pass, make_model`.
"""

import torch
from torch._inductor.pattern_matcher import PatternMatcherPass, fwd_only, register_replacement
from torch import nn

# --8<-- [start:defect]
patterns = PatternMatcherPass()


def exact_gelu(x):
    return nn.functional.gelu(x)


def quick_gelu(x):  # "GELU, without the erf": x * sigmoid(1.702 x)
    return x * torch.sigmoid(1.702 * x)


# The pattern is traced with Inductor's decompositions, so it matches the GELU as the post-grad graph
# has it: 0.5 * x * (1 + erf(x / sqrt(2))).
register_replacement(exact_gelu, quick_gelu, [torch.empty(8)], fwd_only, patterns)


def gelu_pass(graph: torch.fx.Graph) -> None:
    """torch._inductor.config.post_grad_custom_post_pass = gelu_pass"""
    patterns.apply(graph)


# --8<-- [end:defect]


# --8<-- [start:model]
def make_model():
    """An MLP block and its input, the same in every process (seeded)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64)).eval()
    return model, torch.randn(32, 64)


# --8<-- [end:model]
