"""The GPU model of the Distributed chapter: a stack of transformer feed-forward blocks, at two sizes.

Import it from an example of this chapter: `from distributed._feedforward import FeedForwardStack, SIZES`.
"""

import torch
from torch import nn

# --8<-- [start:model]
from deploying._model import Block as FeedForward  # LayerNorm, Linear up 4x, GELU, Linear down; the residual


class FeedForwardStack(nn.Module):
    def __init__(self, width: int, depth: int):
        super().__init__()
        self.layers = nn.ModuleList(FeedForward(width) for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


# (width, depth): 8 * width**2 + 7 * width parameters per block
SIZES = {"134M parameters": (1024, 16), "1.07B parameters": (4096, 8)}
TOKENS = (8, 512)  # per rank: a batch of 8 sequences of 512 tokens
# --8<-- [end:model]


def parameter_count(model: nn.Module) -> int:
    return sum(parameter.numel() for parameter in model.parameters())


def inputs(width: int, device: torch.device) -> torch.Tensor:
    return torch.randn(*TOKENS, width, device=device, generator=torch.Generator(device).manual_seed(0))
