import torch
import torch.nn as nn

batch_size = 6
features = 5
dim1 = 7


class Model(nn.Module):
    """BatchNorm1d in training mode (batch statistics), its weight and bias moved off their init
    values so that a test tells them apart from the identity."""

    def __init__(self, num_features):
        super().__init__()
        self.bn = nn.BatchNorm1d(num_features)
        with torch.no_grad():
            self.bn.weight.uniform_(0.5, 2.0)
            self.bn.bias.uniform_(-1.0, 1.0)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.randn(batch_size, features, dim1) * 3 + 1]


def get_init_inputs():
    return [features]
