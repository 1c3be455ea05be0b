"""The functions of the dynamic-shapes pages: one whose result depends on the number of rows, and two that take
a number: one uses it in arithmetic, the other needs its value.

Import them from an example of this chapter: `from _dynamic_functions import add_positions, repeat, scale`.
"""

import torch


# --8<-- [start:add-positions]
def add_positions(x):
    """x is (sequence, features); each row gets its position, scaled by the sequence length into [0, 1)."""
    positions = torch.arange(x.shape[0], device=x.device).unsqueeze(1)
    return torch.relu(x) + positions / (x.shape[0] + 1)


# --8<-- [end:add-positions]


# --8<-- [start:scale-repeat]
def scale(x, factor):  # a number used only in arithmetic
    return x * factor


def repeat(x, steps):  # an int that decides how many times the loop runs
    for _ in range(steps):
        x = x + 1
    return x


# --8<-- [end:scale-repeat]
