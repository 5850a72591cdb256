import torch
import torch.nn as nn

batch_size = 8
in_features = 24
out_features = 12


class Model(nn.Module):
    """relu(x @ gemm.weight^T + gemm.bias): the layer's weights are parameters of the model."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.gemm(x))


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
