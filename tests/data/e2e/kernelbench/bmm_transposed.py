import torch
import torch.nn as nn

batch = 5
m = 24
n = 20
k = 32


class Model(nn.Module):
    """A @ B^T per batch, B given as [batch, n, k]."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B.transpose(-1, -2))


def get_inputs():
    return [torch.randn(batch, m, k), torch.randn(batch, n, k)]


def get_init_inputs():
    return []
