"""Random inputs as SOL-ExecBench draws them: the distribution of each dtype and the name
heuristics (a `*norm_weight` is ones, an `attention_mask` an additive causal mask, ...).
src/oracle/input_heuristics.cpp implements the same rules for native references; keep the two
in step.
"""

import math

POSITIVE_NAMES = ("rstd", "std", "variance", "var")
WEIGHT_SUFFIXES = ("_weight", "_weights", "_proj", "_projs", "_weight_matrix")
BINARY_MASK_NAMES = ("x_mask", "text_mask", "aspect_ratio_mask", "drop_mask", "attention_mask")
BINARY_WORDS = ("binary", "{0, 1}", "0 or 1", "1.0 for valid", "0.0 for masked")


def is_norm_parameter(name, suffix):
    return name.endswith(suffix) and name[: -len(suffix)].rstrip("0123456789").endswith("norm")


def heuristic_pattern(name, shape, description):
    """The SOL-ExecBench heuristic that applies to a floating input, or None."""
    text = (description or "").lower()
    if is_norm_parameter(name, "_weight"):
        return "ones"
    if is_norm_parameter(name, "_bias"):
        return "zeros"
    square = len(shape) >= 2 and shape[-1] == shape[-2]
    if square and (name in ("attention_mask", "causal_mask")
                   or ("attention mask" in text and "causal" in text)):
        return "causal_mask"
    if name in BINARY_MASK_NAMES or (
            name.endswith("_mask") and any(word in text for word in BINARY_WORDS)):
        return "binary_mask"
    if name in ("cos", "cos_cached", "rope_cos"):
        return "cos"
    if name in ("sin", "sin_cached", "rope_sin"):
        return "sin"
    base = name.rstrip("0123456789")
    if (name in POSITIVE_NAMES or name.endswith(("_rstd", "_std", "_variance", "_var"))
            or base in POSITIVE_NAMES or base.endswith(("_rstd", "_std", "_var"))):
        return "positive"
    if name in ("A", "A_log", "A_cumsum", "g"):
        return "ssm_" + name
    if name in ("attn_weights", "attention_weights", "routing_weights") or (
            "softmax" in text and "output" in text):
        return "softmax"
    if len(shape) >= 2 and (name == "weight" or name.endswith(WEIGHT_SUFFIXES)
                            or base == "weight" or base.endswith(WEIGHT_SUFFIXES)):
        return "scaled_weight"
    return None


def heuristic_tensor(torch, pattern, shape, dtype, device):
    if pattern == "ones":
        return torch.ones(shape, dtype=dtype, device=device)
    if pattern == "zeros":
        return torch.zeros(shape, dtype=dtype, device=device)
    if pattern == "causal_mask":
        mask = torch.zeros(shape, dtype=dtype, device=device)
        above = torch.ones(shape[-1], shape[-1], device=device).triu(diagonal=1).bool()
        mask[..., above] = torch.finfo(dtype).min
        return mask
    if pattern == "binary_mask":
        return torch.randint(0, 2, shape, device=device).to(dtype)
    if pattern in ("cos", "sin"):
        angle = torch.randn(shape, dtype=torch.float32, device=device).clamp_(-math.pi, math.pi)
        return (torch.cos(angle) if pattern == "cos" else torch.sin(angle)).to(dtype)
    if pattern == "positive":
        return torch.randn(shape, dtype=dtype, device=device).abs() + 0.1
    if pattern == "ssm_A_cumsum":
        return torch.empty(shape, dtype=dtype, device=device).uniform_(-0.1, 0.0).cumsum(dim=-1)
    ranges = {"ssm_A_log": (-5.0, -1.0), "ssm_A": (-1.0, -0.001), "ssm_g": (-5.0, 0.0)}
    if pattern in ranges:
        return torch.empty(shape, dtype=dtype, device=device).uniform_(*ranges[pattern])
    if pattern == "softmax":
        logits = torch.randn(shape, dtype=torch.float32, device=device)
        return torch.softmax(logits, dim=-1).to(dtype)
    if pattern == "scaled_weight":
        return torch.randn(shape, dtype=dtype, device=device) / math.sqrt(shape[-1])
    raise AssertionError(pattern)


def random_tensor(torch, shape, dtype, device):
    if dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
        return torch.randn(shape, dtype=dtype, device=device)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, dtype=torch.bool, device=device)
    ranges = {torch.int8: (-128, 128), torch.uint8: (0, 256), torch.int16: (-1024, 1024),
              torch.int32: (-1024, 1024), torch.int64: (-1024, 1024)}
    if dtype in ranges:
        low, high = ranges[dtype]
        return torch.randint(low, high, shape, dtype=dtype, device=device)
    # float8: drawn in float32, clamped to +-2, then cast
    return torch.randn(shape, dtype=torch.float32, device=device).clamp_(-2.0, 2.0).to(dtype)
