"""The small model of the CUDA graphs pages: blocks of Linear, GELU and LayerNorm, each a few tiny kernels at a
small batch, the kind of call whose time is the host's launches.

Import it from an example of this chapter: `from _blocks import Block`.
"""

import torch
from torch import nn


# --8<-- [start:block]
class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        return self.norm(torch.nn.functional.gelu(self.linear(x)))


# --8<-- [end:block]
