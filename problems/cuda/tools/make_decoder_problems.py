"""Writes the decoder-layer chain problems: the two blocks of a Llama-style decoder layer that
surround attention and the MLP's GEMMs, with their element-wise and row work left in, so that
kernelarc decides per shape what to fuse (docs/RECOGNITION.md: they are recognized from their
references; the bundled ones state their FLOPs and bytes, but no op_family).

    python3 problems/cuda/tools/make_decoder_problems.py [problems_root] [e2e_root]

  decoder_qkv_rope_*   residual add + RMSNorm -> QKV projection -> RoPE (rotate-half) on q and k
                       (the attention block's input side; attention itself is the attention
                       family's problems)
  decoder_mlp_block_*  residual add + RMSNorm -> gate and up projections -> SwiGLU -> down

problems_root defaults to this repository's problems/ (bfloat16 Llama-3-8B shapes under cuda/);
e2e_root to tests/data/e2e/sol (the same references at small float32 sizes, written as a user
would: no kernelarc key). Inputs come from make_inputs: activations N(0, 1), the norm weight
1 + N(0, 0.1^2), projection weights N(0, 1/fan_in) (nn.Linear's scale, so outputs stay O(1)), and
cos / sin of real rotary positions (base 500000, positions 0..T-1)."""
import json
import os
import sys
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROOT = os.path.join(HERE, "..", "..")
DEFAULT_E2E = os.path.join(HERE, "..", "..", "..", "tests", "data", "e2e", "sol")

INPUTS_HELPERS = '''import torch
import torch.nn.functional as F


def normal(shape, std, dtype, device):
    """N(0, std^2) drawn from torch's generator (the oracle seeds it per trial) in `dtype`."""
    return torch.randn(shape, dtype=dtype, device=device).mul_(std)


def rms_norm(hidden, weight, eps):
    """RMSNorm as Llama computes it: float32 statistics, the normalized rows rounded to the
    activations' dtype, then scaled by the weight in that dtype."""
    variance = hidden.to(torch.float32).pow(2).mean(-1, keepdim=True)
    return (hidden.to(torch.float32) * torch.rsqrt(variance + eps)).to(hidden.dtype) * weight
'''

QKV_SOURCE = INPUTS_HELPERS + '''

def rotary(tokens, head_dim, dtype, device):
    """cos and sin [tokens, head_dim] of positions 0..tokens-1, base 500000, halves repeated."""
    inv_freq = 1.0 / (500000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float32, device=device)
                                    / head_dim))
    angles = torch.outer(torch.arange(tokens, dtype=torch.float32, device=device), inv_freq)
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos().to(dtype), angles.sin().to(dtype)


def make_inputs(axes, device):
    tokens, hidden = axes["num_tokens"], axes["hidden_size"]
    heads, kv_heads, head_dim = axes["num_q_heads"], axes["num_kv_heads"], axes["head_dim"]
    dtype = torch.{dtype}
    cos, sin = rotary(tokens, head_dim, dtype, device)
    return {{
        "hidden_states": normal((tokens, hidden), 1.0, dtype, device),
        "residual": normal((tokens, hidden), 1.0, dtype, device),
        "norm_weight": normal((hidden,), 0.1, dtype, device).add_(1.0),
        "w_qkv": normal(((heads + 2 * kv_heads) * head_dim, hidden), hidden ** -0.5, dtype, device),
        "cos": cos,
        "sin": sin,
    }}


def rotate_half(u):
    half = u.shape[-1] // 2
    return torch.cat((-u[..., half:], u[..., :half]), dim=-1)


@torch.no_grad()
def run(hidden_states, residual, norm_weight, w_qkv, cos, sin):
    tokens = hidden_states.shape[0]
    head_dim = cos.shape[-1]
    residual_out = hidden_states + residual
    qkv = F.linear(rms_norm(residual_out, norm_weight, {eps}), w_qkv)
    q_size, kv_size = {heads} * head_dim, {kv_heads} * head_dim
    q, k, v = qkv.split([q_size, kv_size, kv_size], dim=-1)
    q = q.view(tokens, {heads}, head_dim)
    k = k.view(tokens, {kv_heads}, head_dim)
    c, s = cos.unsqueeze(1), sin.unsqueeze(1)
    q = q * c + rotate_half(q) * s
    k = k * c + rotate_half(k) * s
    return q, k, v.reshape(tokens, {kv_heads}, head_dim), residual_out
'''

MLP_SOURCE = INPUTS_HELPERS + '''

def make_inputs(axes, device):
    tokens, hidden, inter = axes["num_tokens"], axes["hidden_size"], axes["intermediate_size"]
    dtype = torch.{dtype}
    return {{
        "hidden_states": normal((tokens, hidden), 1.0, dtype, device),
        "residual": normal((tokens, hidden), 1.0, dtype, device),
        "norm_weight": normal((hidden,), 0.1, dtype, device).add_(1.0),
        "gate_proj": normal((inter, hidden), hidden ** -0.5, dtype, device),
        "up_proj": normal((inter, hidden), hidden ** -0.5, dtype, device),
        "down_proj": normal((hidden, inter), inter ** -0.5, dtype, device),
    }}


@torch.no_grad()
def run(hidden_states, residual, norm_weight, gate_proj, up_proj, down_proj):
    residual_out = hidden_states + residual
    x = rms_norm(residual_out, norm_weight, {eps})
    hidden = F.silu(F.linear(x, gate_proj)) * F.linear(x, up_proj)
    return F.linear(hidden, down_proj), residual_out
'''


def axis(value, description):
    if value is None:
        return {"type": "var", "description": description}
    return {"type": "const", "value": value, "description": description}


def tensor(shape, dtype, description):
    return {"shape": shape, "dtype": dtype, "description": description}


def write(path, definition, token_counts, tolerance, namespace):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "definition.json"), "w") as f:
        json.dump(definition, f, indent=2)
        f.write("\n")
    with open(os.path.join(path, "workload.jsonl"), "w") as f:
        for tokens in token_counts:
            axes = {"num_tokens": tokens}
            f.write(json.dumps({
                "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, namespace + "/" + definition["name"] +
                                       "/" + json.dumps(axes, sort_keys=True))),
                "axes": axes,
                "inputs": {name: {"type": "custom"} for name in definition["inputs"]},
                "tolerance": dict(tolerance),
            }) + "\n")


def qkv_definition(name, dtype, hidden, heads, kv_heads, head_dim, eps, model):
    act = ["num_tokens", "hidden_size"]
    return {
        "name": name,
        "op_type": "decoder_qkv_rope",
        "description": (
            f"The input side of a decoder layer's attention block ({model}): residual_out = "
            f"hidden_states + residual; x = RMSNorm(residual_out) (float32 statistics, eps {eps}, "
            f"rounded, times the weight); qkv = x w_qkv^T split into {heads} query heads and "
            f"{kv_heads} key and value heads of {head_dim}; q and k rotated by RoPE in the "
            "rotate-half (NeoX / Llama) form with the given cos and sin. A kernel may fuse any of "
            "the steps; the problem is left unannotated, for recognition. Inputs come from "
            "make_inputs (activations N(0,1), norm weight 1 + N(0, 0.01), w_qkv N(0, 1/hidden), "
            "cos/sin of positions 0..T-1 with base 500000). Token counts from a decode step to a "
            "prefill chunk."),
        "axes": {
            "num_tokens": axis(None, "tokens in the batch (decode steps or a prefill chunk)"),
            "hidden_size": axis(hidden, "model width"),
            "qkv_size": axis((heads + 2 * kv_heads) * head_dim, "rows of the fused QKV weight"),
            "num_q_heads": axis(heads, "query heads"),
            "num_kv_heads": axis(kv_heads, "key and value heads (grouped-query attention)"),
            "head_dim": axis(head_dim, "head dimension"),
        },
        "inputs": {
            "hidden_states": tensor(act, dtype, "the attention block's input (the last "
                                    "sublayer's output)"),
            "residual": tensor(act, dtype, "the residual stream"),
            "norm_weight": tensor(["hidden_size"], dtype, "input_layernorm weight"),
            "w_qkv": tensor(["qkv_size", "hidden_size"], dtype,
                            "q, k and v projections stacked, nn.Linear layout"),
            "cos": tensor(["num_tokens", "head_dim"], dtype, "rotary cos per token"),
            "sin": tensor(["num_tokens", "head_dim"], dtype, "rotary sin per token"),
        },
        "outputs": {
            "q": tensor(["num_tokens", "num_q_heads", "head_dim"], dtype, "rotated queries"),
            "k": tensor(["num_tokens", "num_kv_heads", "head_dim"], dtype, "rotated keys"),
            "v": tensor(["num_tokens", "num_kv_heads", "head_dim"], dtype, "values"),
            "residual_out": tensor(act, dtype, "the new residual stream"),
        },
        "reference": QKV_SOURCE.format(dtype=dtype, eps=eps, heads=heads, kv_heads=kv_heads),
        "custom_inputs_entrypoint": "make_inputs",
    }


def mlp_definition(name, dtype, hidden, inter, eps, model):
    act = ["num_tokens", "hidden_size"]
    return {
        "name": name,
        "op_type": "decoder_mlp_block",
        "description": (
            f"A decoder layer's MLP block ({model}): residual_out = hidden_states + residual; x = "
            f"RMSNorm(residual_out) (float32 statistics, eps {eps}, rounded, times the weight); "
            "output = down_proj(silu(gate_proj(x)) * up_proj(x)), each projection rounded as "
            "eager PyTorch rounds it. A kernel may fuse any of the steps; the problem is left "
            "unannotated, for recognition. Inputs come from make_inputs (activations N(0,1), "
            "norm weight 1 + N(0, 0.01), weights N(0, 1/fan_in)). Token counts from a decode "
            "step to a prefill chunk."),
        "axes": {
            "num_tokens": axis(None, "tokens in the batch (decode steps or a prefill chunk)"),
            "hidden_size": axis(hidden, "model width"),
            "intermediate_size": axis(inter, "MLP width"),
        },
        "inputs": {
            "hidden_states": tensor(act, dtype, "the MLP block's input (the attention output)"),
            "residual": tensor(act, dtype, "the residual stream"),
            "norm_weight": tensor(["hidden_size"], dtype, "post_attention_layernorm weight"),
            "gate_proj": tensor(["intermediate_size", "hidden_size"], dtype, "gate projection"),
            "up_proj": tensor(["intermediate_size", "hidden_size"], dtype, "up projection"),
            "down_proj": tensor(["hidden_size", "intermediate_size"], dtype, "down projection"),
        },
        "outputs": {
            "output": tensor(act, dtype, "the MLP's output"),
            "residual_out": tensor(act, dtype, "the new residual stream"),
        },
        "reference": MLP_SOURCE.format(dtype=dtype, eps=eps),
        "custom_inputs_entrypoint": "make_inputs",
    }


def with_costs(definition, flops, bytes_):
    """The bundled problems state their costs (the speed-of-light model reads them) but no
    op_family: what serves them is left to recognition."""
    definition = dict(definition)
    definition["kernelarc"] = {"flops": flops, "bytes": bytes_}
    return definition


QKV_FLOPS = "2 * num_tokens * qkv_size * hidden_size"
QKV_BYTES = ("2 * (3 * num_tokens * hidden_size + hidden_size + qkv_size * hidden_size"
             " + 2 * num_tokens * head_dim + num_tokens * qkv_size)")
MLP_FLOPS = "6 * num_tokens * hidden_size * intermediate_size"
MLP_BYTES = ("2 * (4 * num_tokens * hidden_size + hidden_size"
             " + 3 * hidden_size * intermediate_size)")


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_ROOT)
    e2e = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else DEFAULT_E2E)
    bf16 = {"max_atol": 0.02, "max_rtol": 0.02, "required_matched_ratio": 0.99}
    f32 = {"max_atol": 1e-4, "max_rtol": 1e-4}
    tokens = [1, 4, 16, 64, 256, 1024, 4096]
    model = "Llama-3-8B"
    write(os.path.join(root, "cuda", "decoder_qkv_rope_bf16_llama3_8b"),
          with_costs(qkv_definition("decoder_qkv_rope_bf16_llama3_8b", "bfloat16", 4096, 32, 8,
                                    128, 1e-5, model), QKV_FLOPS, QKV_BYTES),
          tokens, bf16, "kernelarc/problems/cuda")
    write(os.path.join(root, "cuda", "decoder_mlp_block_bf16_llama3_8b"),
          with_costs(mlp_definition("decoder_mlp_block_bf16_llama3_8b", "bfloat16", 4096, 14336,
                                    1e-5, model), MLP_FLOPS, MLP_BYTES),
          tokens, bf16, "kernelarc/problems/cuda")
    small = "a small float32 layer"
    write(os.path.join(e2e, "decoder_qkv_rope"),
          qkv_definition("decoder_qkv_rope", "float32", 64, 4, 2, 16, 1e-6, small), [3, 40], f32,
          "kernelarc/tests/e2e")
    write(os.path.join(e2e, "decoder_mlp_block"),
          mlp_definition("decoder_mlp_block", "float32", 64, 96, 1e-6, small), [3, 40], f32,
          "kernelarc/tests/e2e")


if __name__ == "__main__":
    main()
