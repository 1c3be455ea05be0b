"""The model of the Distributed chapter: a stack of Linear layers in a module of our own.

Import it from an example of this chapter: `from distributed._mlp import MLP, WIDTH, DEPTH`.
"""

import torch
from torch import nn

WIDTH, DEPTH = 512, 8


# --8<-- [start:model]
class MLP(nn.Module):
    """Eight 512-wide Linear layers with ReLUs: 1.05 MB of parameters per layer, in float32."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(WIDTH, WIDTH) for _ in range(DEPTH))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


# --8<-- [end:model]
