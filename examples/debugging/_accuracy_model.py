"""The model of the accuracy page's two examples (`accuracy.py` on the CPU, `accuracy_gpu.py` on a GPU).

Import it from an example of this chapter: `from debugging._accuracy_model import Block`.
"""

import torch
from torch import nn


# --8<-- [start:model]
class Block(nn.Module):
    """LayerNorm, an MLP with a GELU, and a softmax scaled by a row sum."""

    def __init__(self, width: int = 256):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x):
        h = self.down(torch.nn.functional.gelu(self.up(self.norm(x))))
        return torch.softmax(h, dim=-1) * h.sum(dim=-1, keepdim=True)


# --8<-- [end:model]
