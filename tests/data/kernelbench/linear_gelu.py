import torch
import torch.nn as nn

batch_size = 16
in_features = 80
out_features = 40


class Model(nn.Module):
    """A linear layer with bias, then GELU; the layer's size comes from get_init_inputs()."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.nn.functional.gelu(self.linear(x))


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
