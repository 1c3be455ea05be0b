"""The function of the dynamic-shapes pages: a result whose shape and values depend on the number of rows.

Import it from an example of this chapter: `from _positions import add_positions`.
"""

import torch


# --8<-- [start:add-positions]
def add_positions(x):
    """x is (sequence, features); each row gets its position, scaled by the sequence length into [0, 1)."""
    positions = torch.arange(x.shape[0], device=x.device).unsqueeze(1)
    return torch.relu(x) + positions / (x.shape[0] + 1)


# --8<-- [end:add-positions]
