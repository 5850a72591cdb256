import torch
import torch.nn as nn

tokens = 35
hidden = 64
intermediate = 40


class Model(nn.Module):
    """SwiGLU: silu(gate(x)) * up(x), two projections without bias."""

    def __init__(self, hidden, intermediate):
        super().__init__()
        self.gate = nn.Linear(hidden, intermediate, bias=False)
        self.up = nn.Linear(hidden, intermediate, bias=False)

    def forward(self, x):
        return torch.nn.functional.silu(self.gate(x)) * self.up(x)


def get_inputs():
    return [torch.randn(tokens, hidden)]


def get_init_inputs():
    return [hidden, intermediate]
