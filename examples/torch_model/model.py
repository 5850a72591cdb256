"""A transformer MLP block as a PyTorch user writes it: RMSNorm, then SwiGLU (one gate-and-up
projection, silu(gate) * up) and the down projection, with the residual added. The two
memory-bound steps are attributes, so that run.py can swap them for kernelarc ops."""

import torch


def rmsnorm(x, weight, eps):
    x32 = x.to(torch.float32)
    normed = x32 * torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (normed * weight.to(torch.float32)).to(x.dtype)


def silu_and_mul(x):
    half = x.shape[-1] // 2
    x32 = x.to(torch.float32)
    return (torch.nn.functional.silu(x32[..., :half]) * x32[..., half:]).to(x.dtype)


class MLPBlock(torch.nn.Module):
    def __init__(self, hidden_size, intermediate_size, eps):
        super().__init__()
        self.eps = eps
        self.norm_weight = torch.nn.Parameter(torch.randn(hidden_size))
        self.gate_up = torch.nn.Linear(hidden_size, 2 * intermediate_size, bias=False)
        self.down = torch.nn.Linear(intermediate_size, hidden_size, bias=False)
        # Replaced by kernelarc ops in run.py: (x, weight) -> normed, and (gate_up) -> act.
        self.norm = lambda x, weight: rmsnorm(x, weight, self.eps)
        self.activation = silu_and_mul

    def forward(self, x):
        normed = self.norm(x, self.norm_weight)
        return x + self.down(self.activation(self.gate_up(normed)))
