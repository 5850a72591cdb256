import torch
import torch.nn as nn

batch_size = 40
in_features = 64
out_features = 48


class Model(nn.Module):
    """nn.Linear (weight and bias) followed by ReLU."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.gemm(x))


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
