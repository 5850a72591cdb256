import torch
import torch.nn as nn

batch_size = 26
num_classes = 30


class Model(nn.Module):
    """KL divergence between two distributions given as logits, batchmean."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.nn.functional.kl_div(torch.log_softmax(predictions, dim=-1),
                                          torch.softmax(targets, dim=-1), reduction="batchmean")


def get_inputs():
    return [torch.randn(batch_size, num_classes), torch.randn(batch_size, num_classes)]


def get_init_inputs():
    return []
