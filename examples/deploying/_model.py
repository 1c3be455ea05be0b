"""The model the Deploying chapter ships: a stack of identical residual MLP blocks.

Import it from an example of this chapter: `from deploying import _model`.
"""

import torch
from torch import nn


# --8<-- [start:model]
class Block(nn.Module):
    """LayerNorm, an MLP and a residual connection: the block a transformer repeats."""

    def __init__(self, width: int):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


class Stack(nn.Module):
    """`depth` identical blocks between an input and an output projection."""

    def __init__(self, width: int = 64, depth: int = 2, classes: int = 10):
        super().__init__()
        self.embed = nn.Linear(width, width)
        self.layers = nn.ModuleList(Block(width) for _ in range(depth))
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        x = self.embed(x)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


# --8<-- [end:model]


def build(device: torch.device, width: int = 64, depth: int = 2) -> Stack:
    """The model with seeded random weights, on `device`, in inference mode."""
    torch.manual_seed(0)
    return Stack(width, depth).to(device).eval()
