import torch
import torch.nn as nn

batch_size = 11
dim1 = 24
dim2 = 40


class Model(nn.Module):
    """sum over the middle axis, kept as size 1."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim, keepdim=True)


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [1]
