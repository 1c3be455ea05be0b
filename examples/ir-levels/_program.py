"""What both pages of the IR-levels chapter share: the small program, and a helper that reads graphs."""

import operator

import torch
import torch.nn.functional as F
from torch import nn


def operators(graph_module):
    """What each operation node of a graph calls, in order (tuple unpacking, `getitem`, left out)."""
    return [
        node.target
        for node in graph_module.graph.nodes
        if node.op in ("call_function", "call_method") and node.target is not operator.getitem
    ]


# --8<-- [start:program]
class NormLinearGelu(nn.Module):
    def __init__(self, width=16, out=32):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.proj = nn.Linear(width, out)

    def forward(self, x):
        return torch.softmax(F.gelu(self.proj(self.norm(x))), dim=-1)
# --8<-- [end:program]
