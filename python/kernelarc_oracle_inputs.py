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


# E2M1 magnitudes by code: 0, 0.5, 1, 1.5, 2, 3, 4, 6; a code's bit 3 is its sign.
E2M1_MAGNITUDES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def e2m1_codes(torch, values):
    """SOL-ExecBench's _cast_to_fp4x2 before packing: the nearest E2M1 code, ties to the even
    code, saturating past 6, small negatives to -0 (code 8), NaN to 0."""
    magnitude = values.abs()
    codes = torch.full(values.shape, 7, dtype=torch.uint8, device=values.device)
    # From the top down, so that each value ends with the smallest code whose upper bound holds.
    for code in range(6, -1, -1):
        midpoint = (E2M1_MAGNITUDES[code] + E2M1_MAGNITUDES[code + 1]) / 2
        below = magnitude <= midpoint if code % 2 == 0 else magnitude < midpoint
        codes = torch.where(below, torch.full_like(codes, code), codes)
    codes = codes + (values < 0).to(torch.uint8) * 8
    return torch.where(torch.isnan(values), torch.zeros_like(codes), codes)


def random_fp4x2(torch, shape, dtype, device):
    """randn quantised to E2M1 and packed two a byte (the first value in the low nibble), as
    SOL-ExecBench draws float4; `shape` counts bytes, so twice as many values are drawn."""
    if not shape:
        raise ValueError("a float4 tensor needs a dimension to pack along")
    values = torch.randn(list(shape[:-1]) + [2 * shape[-1]], dtype=torch.float32, device=device)
    codes = e2m1_codes(torch, values)
    return (codes[..., 0::2] | (codes[..., 1::2] << 4)).contiguous().view(dtype)


def random_tensor(torch, shape, dtype, device):
    if dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
        return torch.randn(shape, dtype=dtype, device=device)
    if dtype == getattr(torch, "float4_e2m1fn_x2", None):
        return random_fp4x2(torch, shape, dtype, device)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, dtype=torch.bool, device=device)
    ranges = {torch.int8: (-128, 128), torch.uint8: (0, 256), torch.int16: (-1024, 1024),
              torch.int32: (-1024, 1024), torch.int64: (-1024, 1024)}
    if dtype in ranges:
        low, high = ranges[dtype]
        return torch.randint(low, high, shape, dtype=dtype, device=device)
    # float8: drawn in float32, clamped to +-2, then cast
    return torch.randn(shape, dtype=torch.float32, device=device).clamp_(-2.0, 2.0).to(dtype)


# ── structured draws ────────────────────────────────────────────────────────────
# Random-normal inputs alone let kernels pass that fail on inputs users do have: a softmax
# without max-subtraction (large logits), an exp without an underflow clamp (masked rows at
# -1e4), a one-pass variance (rows offset from zero). Trials after the first therefore draw, in
# turn, one of these structures for the definition's main input (STRUCTURES; trial 0, and the
# twin made from it, stay plain). A draw whose reference outputs are not finite is replaced by a
# plain one (kernelarc_oracle.trial_job), so the reference's semantics stay valid.

STRUCTURES = (None, "offset_rows", "large_magnitude", "masked_rows")  # in turn, by trial
MATRIX_OPS = ("gemm", "matmul", "mm", "bmm", "linear", "mlp", "attention", "conv")
MASK_LIKE = ("mask", "logit", "score")
# Masked rows are what logits meet (padding, causal masks); a normalization's constant row is
# ill-conditioned (its variance is 0, so rounding is amplified by 1/sqrt(eps)) and not drawn.
LOGITS_OPS = ("softmax", "logsumexp", "sampling", "topk", "top_k", "cross_entropy", "argmax")


def structure_for_trial(trial):
    return STRUCTURES[trial % len(STRUCTURES)] if trial and trial > 0 else None


def takes_structure(definition, structure, name):
    """Whether `structure` suits the input `name` of `definition`."""
    if structure != "masked_rows":
        return True
    op = (definition.get("op_type") or "").lower()
    return (any(word in op for word in LOGITS_OPS)
            or any(word in name.lower() for word in MASK_LIKE))


def structured_input(definition, values, shapes, names, torch):
    """The index of the input a structure applies to: the first floating tensor input drawn at
    random whose shape equals an output's (row-wise and elementwise operations), in a definition
    that is not a matrix product; None when there is none."""
    op = (definition.get("op_type") or "").lower()
    if any(word in op for word in MATRIX_OPS):
        return None
    output_shapes = [tuple(shape) for shape in shapes["outputs"]]
    for index, value in enumerate(values):
        if (isinstance(value, torch.Tensor) and value.is_floating_point()
                and value.dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16)
                and value.dim() >= 1 and value.numel() > 1 and names[index] in shapes["random"]
                and tuple(value.shape) in output_shapes):
            return index
    return None


def apply_structure(torch, structure, name, value):
    """`value` (a random-normal draw) given the structure, in its own dtype."""
    work = value.float()
    if structure == "offset_rows":
        # 100 x the draw's spread, not a fixed 1000: at 1000 x float32's spacing (6e-5) alone
        # moves an honest float32 layer norm (and the float32 reference itself) past a 1e-4
        # tolerance; at 100 x a one-pass variance still fails and exp(x) still overflows.
        spread = float(work.std()) if work.numel() > 1 else 1.0
        work = work + 100.0 * (spread if math.isfinite(spread) and spread > 0 else 1.0)
    elif structure == "large_magnitude":
        work = work * 100.0
    elif structure == "masked_rows":
        rows = work.reshape(-1, work.shape[-1])
        masked = torch.rand(rows.shape[0], device=work.device) < 0.25
        masked[0] = True
        rows[masked] = -1e4
        if any(word in name.lower() for word in MASK_LIKE):
            holes = torch.rand(rows.shape, device=work.device) < 0.1
            holes[masked] = False
            holes[:, 0] = False  # every row keeps a finite element
            rows[holes] = float("-inf")
        work = rows.reshape(value.shape)
    return work.to(value.dtype)
