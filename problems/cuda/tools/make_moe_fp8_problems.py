"""Writes FlashInfer-Bench's DeepSeek-V3 FP8 block-scale mixture-of-experts problem (op family
"moe", docs/TEMPLATES.md "Family: moe"): definition.json and workload.jsonl of
moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048 under problems/cuda.

    python3 problems/cuda/tools/make_moe_fp8_problems.py [problems_root]

problems_root defaults to this repository's problems/. The layer is DeepSeek-V3's routed experts
on one rank of 8-way expert parallelism: every token is routed over the model's 256 experts, and
the rank computes the choices of its 32. Activations and weights are float8_e4m3fn with float32
block scales (1x128 per token, 128x128 per weight tile), as the checkpoint and FlashInfer's fused
kernel take them. The routing rule and its text come from make_moe_problems (the moe family's
rule: the reference's route()); the references need torch >= 2.1 (float8), the timed baseline's
block-scaled torch._scaled_mm torch >= 2.9 with CUDA >= 12.9 on sm_90 (it falls back to
dequantized bfloat16 products elsewhere).

The tolerance comes from a CPU emulation of e4m3 (round to nearest even, saturating) at the real
shapes, 64 and 256 tokens on ranks 3 and 6; see TOLERANCE_NOTE."""
import sys

from make_moe_problems import (DEFAULT_ROOT, HEADER, NORMAL, ROUTE, axis_const, axis_expr,
                               axis_var, tensor, write)

NAME = "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048"
EXPERTS, LOCAL_EXPERTS, HIDDEN, INTER, TOP_K = 256, 32, 7168, 2048, 8
N_GROUP, TOPK_GROUP = 8, 4
ROUTED_SCALING_FACTOR = 2.5  # DeepSeek-V3's; an input of the problem, not an op_param
LOGIT_STD, BIAS_STD = 2.0, 0.1  # as make_moe_problems draws sigmoid routing
TOKENS = [1, 7, 52, 256, 1024, 4096]
TOLERANCE = {"max_atol": 0.02, "max_rtol": 0.02, "required_matched_ratio": 0.95}

# ---- the reference and the baseline ---------------------------------------------------------
#
# Both start with make_moe_problems' routing constants and route(); the fp8 helpers follow, then
# make_inputs (the reference only) and each one's run().

SCALING_NOTE = ("# routed_scaling_factor is an input of this problem: run() multiplies route()'s "
                "weights by it.\n")

FP8_HELPERS = '''

BLOCK = 128  # the scales' blocks: 1x128 of the activations, 128x128 of the weights
FP8_MAX = 448.0  # float8_e4m3fn's largest finite value
AMAX_MIN = 1e-10  # an all-zero block gets a tiny scale instead of a division by zero


def quantize_rows(x):
    """x [R, K] (K a multiple of 128) as float8_e4m3fn and its float32 scales [R, K / 128], one
    per row and 128 columns: scale = amax / 448, q = x / scale rounded to the nearest e4m3 value
    (vLLM's and SGLang's per_token_group_quant_fp8)."""
    rows, cols = x.shape
    blocks = x.float().view(rows, cols // BLOCK, BLOCK)
    scale = blocks.abs().amax(dim=-1).clamp_min(AMAX_MIN) / FP8_MAX
    q = (blocks / scale.unsqueeze(-1)).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return q.view(rows, cols), scale


def dequantize(q, scale):
    """The float32 values of q [R, K] (float8_e4m3fn) under its block scales [R / r, K / 128]:
    scale[i, j] multiplies rows [r i, r i + r) and columns [128 j, 128 j + 128); r is 1 for the
    activations' 1x128 blocks and 128 for the weights' 128x128 blocks."""
    expanded = scale.repeat_interleave(q.shape[0] // scale.shape[0], dim=0)
    return q.float() * expanded.repeat_interleave(BLOCK, dim=1)


def local_slots(ids, weights, local_expert_offset, local_experts):
    """For each local expert le (global id local_expert_offset + le) that some token chose, in
    order: (le, the rows of its tokens in increasing order, their routing weights). The choices
    of experts on other ranks contribute nothing here."""
    local = ids.reshape(-1) - local_expert_offset
    mine = ((local >= 0) & (local < local_experts)).nonzero().squeeze(1)
    slots = mine.index_select(0, torch.sort(local.index_select(0, mine), stable=True)[1])
    counts = torch.bincount(local.index_select(0, slots), minlength=local_experts).tolist()
    rows = torch.div(slots, ids.shape[1], rounding_mode="floor")
    slot_weights = weights.reshape(-1).index_select(0, slots)
    start = 0
    for le, count in enumerate(counts):
        if count:
            yield le, rows[start:start + count], slot_weights[start:start + count]
        start += count
'''

MAKE_INPUTS = '''

def quantize_tiles(w):
    """w [N, K] (multiples of 128) as float8_e4m3fn and its float32 scales [N / 128, K / 128],
    one per 128x128 tile, formed as quantize_rows forms them."""
    n, k = w.shape
    tiles = w.float().view(n // BLOCK, BLOCK, k // BLOCK, BLOCK)
    scale = tiles.abs().amax(dim=(1, 3)).clamp_min(AMAX_MIN) / FP8_MAX
    q = (tiles / scale[:, None, :, None]).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return q.view(n, k), scale


def make_inputs(axes, device):
    """Values like a quantized model's: hidden states N(0, 1) quantized per token and 128
    features; each expert's weights N(0, 1/fan_in) quantized per 128x128 tile (scale = amax /
    448), drawn on the device one expert at a time; routing_logits zero-mean normal with standard
    deviation {logit_std:g}, float32, and routing_bias with {bias_std:g}, bfloat16; the rank's
    local_expert_offset, num_local_experts times a rank drawn uniformly from torch's generator
    (the oracle seeds it per trial, so the draws exercise different ranks); routed_scaling_factor
    {scaling:g} (DeepSeek-V3's). All of it from torch's generator."""
    tokens, experts = axes["num_tokens"], axes["num_experts"]
    local, hidden = axes["num_local_experts"], axes["hidden_size"]
    inter, gemm1_out = axes["intermediate_size"], axes["gemm1_out_size"]
    rank = int(torch.randint(experts // local, (1,)).item())
    logits = normal((tokens, experts), {logit_std!r}, torch.float32, device)
    bias = normal((experts,), {bias_std!r}, torch.bfloat16, device)
    x, x_scale = quantize_rows(normal((tokens, hidden), 1.0, torch.float32, device))
    fp8 = torch.float8_e4m3fn
    w13 = torch.empty(local, gemm1_out, hidden, dtype=fp8, device=device)
    w13_scale = torch.empty(local, gemm1_out // BLOCK, hidden // BLOCK, device=device)
    w2 = torch.empty(local, hidden, inter, dtype=fp8, device=device)
    w2_scale = torch.empty(local, hidden // BLOCK, inter // BLOCK, device=device)
    for e in range(local):  # one expert's float32 draw at a time
        q, scale = quantize_tiles(normal((gemm1_out, hidden), hidden ** -0.5, torch.float32,
                                         device))
        w13[e].copy_(q)
        w13_scale[e].copy_(scale)
        q, scale = quantize_tiles(normal((hidden, inter), inter ** -0.5, torch.float32, device))
        w2[e].copy_(q)
        w2_scale[e].copy_(scale)
    return {{
        "routing_logits": logits,
        "routing_bias": bias,
        "hidden_states": x,
        "hidden_states_scale": x_scale.t().contiguous(),  # [H / 128, T]: MN-major
        "gemm1_weights": w13,
        "gemm1_weights_scale": w13_scale,
        "gemm2_weights": w2,
        "gemm2_weights_scale": w2_scale,
        "local_expert_offset": rank * local,
        "routed_scaling_factor": {scaling!r},
    }}
'''

PARAMS = ("routing_logits, routing_bias, hidden_states, hidden_states_scale, gemm1_weights,\n"
          "        gemm1_weights_scale, gemm2_weights, gemm2_weights_scale, local_expert_offset,\n"
          "        routed_scaling_factor")

RUN_REFERENCE = '''

@torch.no_grad()
def run({params}):
    ids, weights = route(routing_logits, routing_bias)  # over all the model's experts
    weights = weights * routed_scaling_factor
    inter = gemm2_weights.shape[2]
    x = dequantize(hidden_states, hidden_states_scale.t())  # the scales are [H / 128, T]
    out = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
    for le, rows, w in local_slots(ids, weights, int(local_expert_offset),
                                   gemm1_weights.shape[0]):
        # One expert's weights in float32 at a time (all of gemm1_weights would be 3.7 GB).
        w13 = dequantize(gemm1_weights[le], gemm1_weights_scale[le])
        g1 = torch.matmul(x.index_select(0, rows), w13.t())
        h = F.silu(g1[:, inter:]) * g1[:, :inter]  # up_gate: columns [0, I) are the linear half
        w2 = dequantize(gemm2_weights[le], gemm2_weights_scale[le])
        out.index_add_(0, rows, torch.matmul(h, w2.t()) * w.unsqueeze(1))
    return out.to(torch.bfloat16)
'''

RUN_BASELINE = '''

_scaled_mm_failed = set()


def block_scaled_mm(a, a_scale, b, b_scale):
    """a [M, K] float8_e4m3fn with 1x128 scales [M, K / 128] times b [N, K] float8_e4m3fn with
    128x128 scales [N / 128, K / 128] transposed, in bfloat16: torch._scaled_mm's block scaling
    (cuBLASLt on sm_90, torch >= 2.9 with CUDA >= 12.9; a's scales outer-dim-major, M
    contiguous; b's as [K / 128, N / 128]), else the dequantized bfloat16 product where it is
    missing or refuses (remembered by shape)."""
    shape = (a.shape[0], b.shape[0], b.shape[1])
    if hasattr(torch, "_scaled_mm") and shape not in _scaled_mm_failed:
        try:
            return torch._scaled_mm(a, b.t(), scale_a=a_scale.t().contiguous().t(),
                                    scale_b=b_scale.t(), out_dtype=torch.bfloat16)
        except (RuntimeError, NotImplementedError, ValueError, TypeError):
            _scaled_mm_failed.add(shape)
    a16 = dequantize(a, a_scale).to(torch.bfloat16)
    return torch.matmul(a16, dequantize(b, b_scale).to(torch.bfloat16).t())


@torch.no_grad()
def run({params}):
    # The code a user runs without a fused kernel: the routing in torch, then per local expert
    # two block-scaled fp8 products, h requantized to e4m3 per token and 128 features between
    # them (vLLM's and SGLang's per_token_group_quant_fp8).
    ids, weights = route(routing_logits, routing_bias)
    weights = weights * routed_scaling_factor
    inter = gemm2_weights.shape[2]
    x_bytes = hidden_states.view(torch.uint8)  # gathered as bytes: index_select takes any dtype
    out = torch.zeros(hidden_states.shape, dtype=torch.float32, device=hidden_states.device)
    for le, rows, w in local_slots(ids, weights, int(local_expert_offset),
                                   gemm1_weights.shape[0]):
        x = x_bytes.index_select(0, rows).view(torch.float8_e4m3fn)
        x_scale = hidden_states_scale.index_select(1, rows).t()  # [M, H / 128], M contiguous
        g1 = block_scaled_mm(x, x_scale, gemm1_weights[le], gemm1_weights_scale[le]).float()
        h, h_scale = quantize_rows(F.silu(g1[:, inter:]) * g1[:, :inter])
        y = block_scaled_mm(h, h_scale, gemm2_weights[le], gemm2_weights_scale[le])
        out.index_add_(0, rows, y.float() * w.unsqueeze(1))
    return out.to(torch.bfloat16)
'''


def routing_source():
    """make_moe_problems' routing constants for this rule and its ranked() and route() (the moe
    family's rule), without its expert loop. Its ROUTED_SCALING_FACTOR is 1: here the factor is
    an input, which run() applies."""
    header = HEADER.format(top_k=TOP_K, scoring="sigmoid", renormalize=True, n_group=N_GROUP,
                           topk_group=TOPK_GROUP, group_score="top2_sum",
                           routed_scaling_factor=1.0)
    route, found, _ = ROUTE.partition("\n\n\ndef expert_mlps(")
    if not found:
        raise RuntimeError("make_moe_problems.ROUTE no longer holds expert_mlps after route()")
    return header + SCALING_NOTE + route + "\n"


def reference_source():
    return (routing_source() + NORMAL + FP8_HELPERS +
            MAKE_INPUTS.format(logit_std=LOGIT_STD, bias_std=BIAS_STD,
                               scaling=ROUTED_SCALING_FACTOR) +
            RUN_REFERENCE.format(params=PARAMS))


def baseline_source():
    return routing_source() + FP8_HELPERS + RUN_BASELINE.format(params=PARAMS)


# ---- the definition -------------------------------------------------------------------------

TOLERANCE_NOTE = (
    "Tolerance 2e-2 absolute and relative with 95% of the elements matched (FlashInfer-Bench's "
    "MoE ratio). A kernel on fp8 tensor cores (exact products, float32 accumulation) that "
    "stores h and each expert's y in bfloat16 meets it with room: in a CPU emulation of e4m3 "
    "at these shapes (64 and 256 tokens, ranks 3 and 6, against the float32 reference) its "
    "largest error was 7.8e-3, one bfloat16 step of the output (mean 4.8e-4 on the rows with a "
    "local expert), and no element left 2e-2; the 5% leaves room for a token whose group or "
    "top-8 boundary falls within float32 rounding and picks another expert. The timed baseline "
    "meets the same tolerance, so it has no baseline_tolerance: requantizing h to e4m3 and "
    "rounding G1 and y to bfloat16 gave errors up to 3.9e-2 (mean 4.8e-3 on the local rows) "
    "and left 0.03% to 0.09% of the local rows' elements beyond 2e-2 and none beyond 5e-2, "
    "while h with its gate and up halves swapped leaves 90% of them beyond 2e-2.")


def description():
    return (
        "FlashInfer-Bench's {name}: the routed experts of a DeepSeek-V3 MoE layer "
        "(deepseek-ai/DeepSeek-V3: {e} routed experts, top-{k}, n_group {ng}, topk_group {kg}, "
        "hidden size {h}, moe_intermediate_size {i}, SwiGLU experts, FP8 weights with 128x128 "
        "block scales as the checkpoint ships them) on one rank of 8-way expert parallelism, "
        "which holds {el} of the experts (the shared expert is not part of this op). Every token "
        "is routed over all {e} experts; only the choices of this rank's experts (global ids "
        "local_expert_offset to local_expert_offset + {el_1}) are computed, the other ranks' "
        "contributions are left out, and a token with no local expert gets zeros. Quantization: "
        "hidden_states is float8_e4m3fn with one float32 scale per token and 128 features, "
        "stored MN-major [H / 128, T] (hidden_states_scale[kb, t] covers hidden_states[t, 128 kb "
        ": 128 kb + 128]); gemm1_weights [{el}, {g1}, {h}] and gemm2_weights [{el}, {h}, {i}] are "
        "float8_e4m3fn, [out, in] as nn.Linear stores them, with one float32 scale per 128x128 "
        "block (gemm1_weights_scale[e, nb, kb] covers rows [128 nb, 128 nb + 128) and columns "
        "[128 kb, 128 kb + 128) of local expert e's gemm1 weight); a value is its e4m3 code "
        "times its scale. Routing per token, from routing_logits (float32) and routing_bias "
        "(bfloat16): scores s = sigmoid(logits), float32; selection scores c = s + routing_bias "
        "(the bias chooses experts but does not enter the weights); the experts form {ng} groups "
        "of {gs} (expert j in group j // {gs}), a group's score is the sum of its two largest c "
        "(DeepSeek-V3's top2_sum), and only the experts of the {kg} best groups may be chosen; "
        "the {k} experts with the largest c are chosen, ties to the lower group and the lower "
        "expert (a stable descending sort, the moe family's rule; FlashInfer's topk leaves ties "
        "open), and their weights are their s divided by the sum of the {k} chosen s (+ 1e-20), "
        "times routed_scaling_factor (an input, {rsf:g} in DeepSeek-V3). Each chosen local "
        "expert e, with W1[e] and W2[e] its dequantized gemm1_weights and gemm2_weights, computes "
        "G1 = x W1[e]^T ({g1} columns), h = silu(G1[:, {i}:]) * G1[:, :{i}] "
        "(FlashInfer's order: the linear up half first, the gate half second; op_params "
        "gate_up_order up_gate) and y = h W2[e]^T; output = sum over the chosen local experts of "
        "weight * y, accumulated in float32 and rounded to bfloat16 once. The reference "
        "dequantizes to float32 and loops over the local experts that have tokens (one expert's "
        "weights dequantized at a time); a product of two e4m3 values is exact in float32, so "
        "fp8 tensor cores with float32 accumulation and the block scales applied per 128-wide "
        "chunk compute the same sums. The timed baseline is the code a user runs without a "
        "fused kernel: the same routing in torch, then per local expert torch._scaled_mm with "
        "the 1x128 x 128x128 block scales (cuBLASLt on sm_90, torch >= 2.9 with CUDA >= 12.9; "
        "dequantized bfloat16 products where it is missing or refuses) giving G1 in bfloat16, h "
        "requantized to e4m3 per token and 128 features for the second product (as vLLM's and "
        "SGLang's per_token_group_quant_fp8), y in bfloat16. Inputs come from make_inputs: "
        "hidden states N(0, 1) and each expert's weights N(0, 1/fan_in) (1/{h} for W1, 1/{i} for "
        "W2), quantized per block with scale = amax / 448; routing_logits N(0, {lv:g}) float32; "
        "routing_bias N(0, {bv:g}) bfloat16; local_expert_offset = {el} times a rank drawn "
        "uniformly from 0..{ranks_1} per call (the correctness draws exercise different ranks); "
        "routed_scaling_factor {rsf:g}. Token counts {tokens} (decode to prefill). On average "
        "num_tokens * {k} * {el} / {e} = num_tokens of the routed slots are local: flops count "
        "the three products of these expected local slots, 2 * num_tokens * 3 * hidden_size * "
        "intermediate_size; bytes count the hidden states and their scales, the logits, the "
        "bias, the output and the weights and scales of min({el}, 8 * num_tokens) experts, the "
        "most the tokens can touch. {tol}").format(
            name=NAME, e=EXPERTS, k=TOP_K, ng=N_GROUP, kg=TOPK_GROUP, h=HIDDEN, i=INTER,
            el=LOCAL_EXPERTS, el_1=LOCAL_EXPERTS - 1, g1=2 * INTER, gs=EXPERTS // N_GROUP,
            rsf=ROUTED_SCALING_FACTOR, lv=LOGIT_STD ** 2, bv=BIAS_STD ** 2,
            ranks_1=EXPERTS // LOCAL_EXPERTS - 1, tokens=", ".join(str(t) for t in TOKENS),
            tol=TOLERANCE_NOTE)


def definition():
    t, h = "num_tokens", "hidden_size"
    fp8 = "float8_e4m3fn"
    axes = {
        t: axis_var("tokens routed in one call (rows of hidden_states)"),
        "num_experts": axis_const(EXPERTS, "the model's routed experts, over which every token "
                                           "is routed"),
        "num_local_experts": axis_const(LOCAL_EXPERTS, "the experts this rank holds (global ids "
                                                       "local_expert_offset + 0 .. 31)"),
        h: axis_const(HIDDEN, "model width"),
        "intermediate_size": axis_const(INTER, "each expert's MLP width"),
        "gemm1_out_size": axis_const(2 * INTER, "rows of each expert's gemm1 weight: the up "
                                                "half, then the gate half"),
        "num_hidden_blocks": axis_expr("hidden_size // 128", "128-wide blocks of hidden_size"),
        "num_intermediate_blocks": axis_expr("intermediate_size // 128",
                                             "128-wide blocks of intermediate_size"),
        "num_gemm1_out_blocks": axis_expr("gemm1_out_size // 128",
                                          "128-row blocks of the gemm1 weight"),
    }
    inputs = {
        "routing_logits": tensor([t, "num_experts"], "float32",
                                 "the router's output, one logit per token and global expert"),
        "routing_bias": tensor(["num_experts"], "bfloat16",
                               "added to the scores to choose the experts, not to the weights "
                               "(DeepSeek-V3's e_score_correction_bias)"),
        "hidden_states": tensor([t, h], fp8, "the tokens' hidden states, quantized"),
        "hidden_states_scale": tensor(
            ["num_hidden_blocks", t], "float32",
            "MN-major: hidden_states_scale[kb, t] scales hidden_states[t, 128 kb : 128 kb + 128]"),
        "gemm1_weights": tensor(
            ["num_local_experts", "gemm1_out_size", h], fp8,
            "each local expert's up (rows [0, I)) and gate (rows [I, 2I)) projections, [out, in]"),
        "gemm1_weights_scale": tensor(
            ["num_local_experts", "num_gemm1_out_blocks", "num_hidden_blocks"], "float32",
            "gemm1_weights_scale[e, nb, kb] scales gemm1_weights[e, 128 nb : 128 nb + 128, "
            "128 kb : 128 kb + 128]"),
        "gemm2_weights": tensor(["num_local_experts", h, "intermediate_size"], fp8,
                                "each local expert's down projection, [out, in]"),
        "gemm2_weights_scale": tensor(
            ["num_local_experts", "num_hidden_blocks", "num_intermediate_blocks"], "float32",
            "gemm2_weights_scale[e, nb, kb] scales gemm2_weights[e, 128 nb : 128 nb + 128, "
            "128 kb : 128 kb + 128]"),
        "local_expert_offset": tensor(None, "int32",
                                      "the global id of local expert 0 (a multiple of 32)"),
        "routed_scaling_factor": tensor(None, "float32", "multiplies the routing weights"),
    }
    local_weights = ("4 * (num_gemm1_out_blocks * num_hidden_blocks + num_hidden_blocks * "
                     "num_intermediate_blocks) + gemm1_out_size * hidden_size + hidden_size * "
                     "intermediate_size")
    return {
        "name": NAME,
        "op_type": "moe",
        "description": description(),
        "axes": axes,
        "constraints": ["gemm1_out_size == 2 * intermediate_size"],
        "inputs": inputs,
        "outputs": {
            "output": tensor([t, h], "bfloat16",
                             "the weighted sum of each token's chosen local experts' outputs"),
        },
        "reference": reference_source(),
        "custom_inputs_entrypoint": "make_inputs",
        "kernelarc": {
            "op_family": "moe",
            "op_params": {"top_k": TOP_K, "scoring": "sigmoid", "renormalize": True,
                          "n_group": N_GROUP, "topk_group": TOPK_GROUP,
                          "group_score": "top2_sum", "activation": "silu",
                          "gate_up_order": "up_gate"},
            "flops": "2 * num_tokens * 3 * hidden_size * intermediate_size",
            # hidden states (1 byte) and their scales, the logits, the bias, the output (2
            # bytes), and the weights and scales of the experts the tokens can touch.
            "bytes": ("num_tokens * hidden_size + 4 * num_hidden_blocks * num_tokens + "
                      "4 * num_tokens * num_experts + 2 * num_experts + "
                      "2 * num_tokens * hidden_size + min(num_local_experts, num_tokens * "
                      "{}) * ({})".format(TOP_K, local_weights)),
            # It meets the workload tolerance (TOLERANCE_NOTE): no baseline_tolerance.
            "baseline": baseline_source(),
        },
    }


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_ROOT
    write(root, "cuda", NAME, definition(), [{"num_tokens": t} for t in TOKENS], TOLERANCE)


if __name__ == "__main__":
    main()
