"""Writes the FP8 block-scale mixture-of-experts problems (op family "moe", docs/TEMPLATES.md
"Family: moe"): definition.json and workload.jsonl of each of fp8_problems() under problems/cuda.

    python3 problems/cuda/tools/make_moe_fp8_problems.py [problems_root]

problems_root defaults to this repository's problems/. Each is one model's routed experts on one
rank of 8-way expert parallelism: every token is routed over all the model's experts, and the
rank computes the choices of its own. Activations and weights are float8_e4m3fn with float32
block scales (1x128 per token, 128x128 per weight tile), as the checkpoints and the fused kernels
take them:

- moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048, FlashInfer-Bench's DeepSeek-V3
  layer: sigmoid scores with a selection bias, 8 groups of which 4 may be chosen, top-8 of 256,
  routed_scaling_factor an input; the hidden states' scales MN-major [H / 128, T]; gate and up
  fused in FlashInfer's order (up first). 32 local experts.
- moe_fp8_block_scale_renorm_routing_topk8_e16_h4096_i1536, Qwen3-235B-A22B-FP8's layer in
  FlashInfer-Bench's form and naming: softmax over 128 experts, top-8, renormalized, no bias, no
  groups, no scaling factor; the scales token-major [T, H / 128]; gate first. 16 local experts.

A problem is a dict (fp8_problems); its routing rule and text come from make_moe_problems (the moe
family's rule: the reference's route()). The references need torch >= 2.1 (float8), the timed
baseline's block-scaled torch._scaled_mm torch >= 2.9 with CUDA >= 12.9 on sm_90 (it falls back
to dequantized bfloat16 products elsewhere).

The tolerances come from a CPU emulation of e4m3 (round to nearest even, saturating) at the real
shapes, 64 and 256 tokens on two ranks; see each problem's tolerance_note."""
import math
import sys
import textwrap

from make_moe_problems import (DEFAULT_ROOT, HEADER, NORMAL, ROUTE, axis_const, axis_expr,
                               axis_var, tensor, write)

TOLERANCE = {"max_atol": 0.02, "max_rtol": 0.02, "required_matched_ratio": 0.95}

# ---- the reference and the baseline ---------------------------------------------------------
#
# Both start with make_moe_problems' routing constants and route(); the fp8 helpers follow, then
# make_inputs (the reference only) and each one's run(). The parts that differ between problems
# (the routing bias and scaling factor inputs, the hidden states' scale layout, the gate and up
# order) are filled in from the problem's dict.

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
    448), drawn on the device one expert at a time; {doc}"""
    tokens, experts = axes["num_tokens"], axes["num_experts"]
    local, hidden = axes["num_local_experts"], axes["hidden_size"]
    inter, gemm1_out = axes["intermediate_size"], axes["gemm1_out_size"]
    rank = int(torch.randint(experts // local, (1,)).item())
    logits = normal((tokens, experts), {logit_std!r}, torch.float32, device)
{bias_draw}    x, x_scale = quantize_rows(normal((tokens, hidden), 1.0, torch.float32, device))
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
{bias_entry}        "hidden_states": x,
        "hidden_states_scale": {x_scale}
        "gemm1_weights": w13,
        "gemm1_weights_scale": w13_scale,
        "gemm2_weights": w2,
        "gemm2_weights_scale": w2_scale,
        "local_expert_offset": rank * local,
{scaling_entry}    }}
'''

RUN_REFERENCE = '''

@torch.no_grad()
{signature}
    ids, weights = route(routing_logits, {bias})  # over all the model's experts
{scaling}    inter = gemm2_weights.shape[2]
    {dequantize_x}
    out = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
    for le, rows, w in local_slots(ids, weights, int(local_expert_offset),
                                   gemm1_weights.shape[0]):
        # One expert's weights in float32 at a time (all of gemm1_weights would be {gb} GB).
        w13 = dequantize(gemm1_weights[le], gemm1_weights_scale[le])
        g1 = torch.matmul(x.index_select(0, rows), w13.t())
        h = {h}  {h_comment}
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
{signature}
    # The code a user runs without a fused kernel: the routing in torch, then per local expert
    # two block-scaled fp8 products, h requantized to e4m3 per token and 128 features between
    # them (vLLM's and SGLang's per_token_group_quant_fp8).
    ids, weights = route(routing_logits, {bias})
{scaling}    inter = gemm2_weights.shape[2]
    x_bytes = hidden_states.view(torch.uint8)  # gathered as bytes: index_select takes any dtype
    out = torch.zeros(hidden_states.shape, dtype=torch.float32, device=hidden_states.device)
    for le, rows, w in local_slots(ids, weights, int(local_expert_offset),
                                   gemm1_weights.shape[0]):
        x = x_bytes.index_select(0, rows).view(torch.float8_e4m3fn)
        {select_x_scale}
        g1 = block_scaled_mm(x, x_scale, gemm1_weights[le], gemm1_weights_scale[le]).float()
        h, h_scale = quantize_rows({h})
        y = block_scaled_mm(h, h_scale, gemm2_weights[le], gemm2_weights_scale[le])
        out.index_add_(0, rows, y.float() * w.unsqueeze(1))
    return out.to(torch.bfloat16)
'''

# The hidden states' scale layouts: the code that reads each and its text.
SCALE_LAYOUTS = {
    "mn_major": {  # FlashInfer's: [H / 128, T]
        "shape": ["num_hidden_blocks", "num_tokens"],
        "input": "MN-major: hidden_states_scale[kb, t] scales hidden_states[t, 128 kb : 128 kb + "
                 "128]",
        "make_inputs": "x_scale.t().contiguous(),  # [H / 128, T]: MN-major",
        "reference": "x = dequantize(hidden_states, hidden_states_scale.t())  # the scales are "
                     "[H / 128, T]",
        "baseline": "x_scale = hidden_states_scale.index_select(1, rows).t()  # [M, H / 128], M "
                    "contiguous",
        "text": "stored MN-major [H / 128, T] (hidden_states_scale[kb, t] covers hidden_states[t, "
                "128 kb : 128 kb + 128])",
    },
    "token_major": {  # per_token_group_quant_fp8's default (column_major_scales False)
        "shape": ["num_tokens", "num_hidden_blocks"],
        "input": "token-major: hidden_states_scale[t, kb] scales hidden_states[t, 128 kb : 128 kb "
                 "+ 128]",
        "make_inputs": "x_scale,  # [T, H / 128]: token-major",
        "reference": "x = dequantize(hidden_states, hidden_states_scale)  # the scales are [T, H "
                     "/ 128]",
        "baseline": "x_scale = hidden_states_scale.index_select(0, rows)  # [M, H / 128]",
        "text": "stored token-major [T, H / 128] (hidden_states_scale[t, kb] covers "
                "hidden_states[t, 128 kb : 128 kb + 128]; the layout vLLM's and SGLang's "
                "per_token_group_quant_fp8 return by default, where FlashInfer's kernel takes "
                "MN-major [H / 128, T])",
    },
}

# The orders of the gate and up halves of the fused gemm1 weight (op_params gate_up_order).
GATE_UP_ORDERS = {
    "up_gate": {  # FlashInfer's
        "h": "F.silu(g1[:, inter:]) * g1[:, :inter]",
        "comment": "# up_gate: columns [0, I) are the linear half",
        "axis": "rows of each expert's gemm1 weight: the up half, then the gate half",
        "input": "each local expert's up (rows [0, I)) and gate (rows [I, 2I)) projections, "
                 "[out, in]",
        "text": "h = silu(G1[:, {i}:]) * G1[:, :{i}] (FlashInfer's order: the linear up half "
                "first, the gate half second; op_params gate_up_order up_gate)",
    },
    "gate_up": {  # the checkpoints' gate_proj and up_proj, fused in that order (vLLM, SGLang)
        "h": "F.silu(g1[:, :inter]) * g1[:, inter:]",
        "comment": "# gate_up: columns [0, I) are the gate half",
        "axis": "rows of each expert's gemm1 weight: the gate half, then the up half",
        "input": "each local expert's gate (rows [0, I)) and up (rows [I, 2I)) projections, "
                 "[out, in]",
        "text": "h = silu(G1[:, :{i}]) * G1[:, {i}:] (the checkpoint's gate_proj and up_proj "
                "fused in that order, as vLLM and SGLang fuse them: the gate half first, the up "
                "half second; op_params gate_up_order gate_up)",
    },
}


def fields(p):
    """The numbers the texts of problem p name, by their format fields."""
    e, el, k, h, i = p["experts"], p["local_experts"], p["top_k"], p["hidden"], p["inter"]
    values = dict(name=p["name"], e=e, el=el, el_1=el - 1, k=k, h=h, i=i, g1=2 * i,
                  hb=h // 128, ib=i // 128, ranks_1=e // el - 1, ng=p["n_group"],
                  kg=p["topk_group"], gs=e // p["n_group"], ls=p["logit_std"],
                  lv=p["logit_std"] ** 2, tokens=", ".join(str(t) for t in p["tokens"]))
    if p["bias"]:
        values.update(bs=p["bias_std"], bv=p["bias_std"] ** 2)
    if p["scaling_input"] is not None:
        values.update(rsf=p["scaling_input"])
    return values


def input_names(p):
    names = ["routing_logits"] + ["routing_bias"] * p["bias"]
    names += ["hidden_states", "hidden_states_scale", "gemm1_weights", "gemm1_weights_scale",
              "gemm2_weights", "gemm2_weights_scale", "local_expert_offset"]
    return names + ["routed_scaling_factor"] * (p["scaling_input"] is not None)


def signature(p):
    return textwrap.fill(", ".join(input_names(p)) + "):", width=100, initial_indent="def run(",
                         subsequent_indent=" " * 8, break_on_hyphens=False)


def run_parts(p):
    """The format fields that RUN_REFERENCE and RUN_BASELINE share."""
    order = GATE_UP_ORDERS[p["gate_up_order"]]
    scaling = ("    weights = weights * routed_scaling_factor\n"
               if p["scaling_input"] is not None else "")
    return dict(signature=signature(p), bias="routing_bias" if p["bias"] else "None",
                scaling=scaling, h=order["h"])


def routing_source(p):
    """make_moe_problems' routing constants for problem p's rule and its ranked() and route()
    (the moe family's rule), without its expert loop. Its ROUTED_SCALING_FACTOR is 1: where the
    factor is an input, run() applies it."""
    header = HEADER.format(top_k=p["top_k"], scoring=p["scoring"], renormalize=True,
                           n_group=p["n_group"], topk_group=p["topk_group"],
                           group_score=p["group_score"], routed_scaling_factor=1.0)
    route, found, _ = ROUTE.partition("\n\n\ndef expert_mlps(")
    if not found:
        raise RuntimeError("make_moe_problems.ROUTE no longer holds expert_mlps after route()")
    note = SCALING_NOTE if p["scaling_input"] is not None else ""
    return header + note + route + "\n"


def reference_source(p):
    layout = SCALE_LAYOUTS[p["scale_layout"]]
    bias_draw = entry = scaling_entry = ""
    if p["bias"]:
        bias_draw = "    bias = normal((experts,), {!r}, torch.bfloat16, device)\n".format(
            p["bias_std"])
        entry = '        "routing_bias": bias,\n'
    if p["scaling_input"] is not None:
        scaling_entry = '        "routed_scaling_factor": {!r},\n'.format(p["scaling_input"])
    make_inputs = MAKE_INPUTS.format(
        doc=p["inputs_doc"].format(**fields(p)), logit_std=p["logit_std"], bias_draw=bias_draw,
        bias_entry=entry, x_scale=layout["make_inputs"], scaling_entry=scaling_entry)
    # float32 gemm1_weights, rounded down to a tenth of a GB
    gb = math.floor(p["local_experts"] * 2 * p["inter"] * p["hidden"] * 4 / 1e8) / 10
    run = RUN_REFERENCE.format(dequantize_x=layout["reference"], gb=gb,
                               h_comment=GATE_UP_ORDERS[p["gate_up_order"]]["comment"],
                               **run_parts(p))
    return routing_source(p) + NORMAL + FP8_HELPERS + make_inputs + run


def baseline_source(p):
    return routing_source(p) + FP8_HELPERS + RUN_BASELINE.format(
        select_x_scale=SCALE_LAYOUTS[p["scale_layout"]]["baseline"], **run_parts(p))


# ---- the definition -------------------------------------------------------------------------

LOCAL_TEXT = (
    "Every token is routed over all {e} experts; only the choices of this rank's experts (global "
    "ids local_expert_offset to local_expert_offset + {el_1}) are computed, the other ranks' "
    "contributions are left out, and a token with no local expert gets zeros.")

QUANT_TEXT = (
    "Quantization: hidden_states is float8_e4m3fn with one float32 scale per token and 128 "
    "features, {layout}; gemm1_weights [{el}, {g1}, {h}] and gemm2_weights [{el}, {h}, {i}] are "
    "float8_e4m3fn, [out, in] as nn.Linear stores them, with one float32 scale per 128x128 block "
    "(gemm1_weights_scale[e, nb, kb] covers rows [128 nb, 128 nb + 128) and columns [128 kb, 128 "
    "kb + 128) of local expert e's gemm1 weight); a value is its e4m3 code times its scale.")

EXPERT_TEXT = (
    "Each chosen local expert e, with W1[e] and W2[e] its dequantized gemm1_weights and "
    "gemm2_weights, computes G1 = x W1[e]^T ({g1} columns), {order} and y = h W2[e]^T;")

COMPUTE_TEXT = (
    "output = sum over the chosen local experts of weight * y, accumulated in float32 and "
    "rounded to bfloat16 once. The reference dequantizes to float32 and loops over the local "
    "experts that have tokens (one expert's weights dequantized at a time); a product of two "
    "e4m3 values is exact in float32, so fp8 tensor cores with float32 accumulation and the "
    "block scales applied per 128-wide chunk compute the same sums. The timed baseline is the "
    "code a user runs without a fused kernel: the same routing in torch, then per local expert "
    "torch._scaled_mm with the 1x128 x 128x128 block scales (cuBLASLt on sm_90, torch >= 2.9 "
    "with CUDA >= 12.9; dequantized bfloat16 products where it is missing or refuses) giving G1 "
    "in bfloat16, h requantized to e4m3 per token and 128 features for the second product (as "
    "vLLM's and SGLang's per_token_group_quant_fp8), y in bfloat16.")


def inputs_text(p):
    text = ("Inputs come from make_inputs: hidden states N(0, 1) and each expert's weights N(0, "
            "1/fan_in) (1/{h} for W1, 1/{i} for W2), quantized per block with scale = amax / "
            "448; routing_logits N(0, {lv:g}) float32" + p["logits_note"] + "; ")
    if p["bias"]:
        text += "routing_bias N(0, {bv:g}) bfloat16; "
    text += ("local_expert_offset = {el} times a rank drawn uniformly from 0..{ranks_1} per call "
             "(the correctness draws exercise different ranks)")
    if p["scaling_input"] is not None:
        text += "; routed_scaling_factor {rsf:g}"
    return text + "."


def measures_text(p):
    return ("Token counts {tokens} (decode to prefill). On average num_tokens * {k} * {el} / {e} "
            "= num_tokens of the routed slots are local: flops count the three products of these "
            "expected local slots, 2 * num_tokens * 3 * hidden_size * intermediate_size; bytes "
            "count the hidden states and their scales, the logits, " +
            "the bias, " * p["bias"] +
            "the output and the weights and scales of min({el}, {k} * num_tokens) experts, the "
            "most the tokens can touch.")


def description(p):
    layout = SCALE_LAYOUTS[p["scale_layout"]]["text"]
    order = GATE_UP_ORDERS[p["gate_up_order"]]["text"]
    parts = [p["intro"], LOCAL_TEXT, QUANT_TEXT.replace("{layout}", layout), p["routing_text"],
             EXPERT_TEXT.replace("{order}", order), COMPUTE_TEXT, inputs_text(p),
             measures_text(p)]
    return " ".join(parts).format(**fields(p)) + " " + p["tolerance_note"]


def definition(p):
    t, h = "num_tokens", "hidden_size"
    fp8 = "float8_e4m3fn"
    el = p["local_experts"]
    if p["top_k"] * el != p["experts"]:
        raise ValueError("flops and the description count top_k * local / experts = 1 local slot "
                         "per token")
    layout = SCALE_LAYOUTS[p["scale_layout"]]
    order = GATE_UP_ORDERS[p["gate_up_order"]]
    axes = {
        t: axis_var("tokens routed in one call (rows of hidden_states)"),
        "num_experts": axis_const(p["experts"], "the model's routed experts, over which every "
                                                "token is routed"),
        "num_local_experts": axis_const(el, "the experts this rank holds (global ids "
                                            "local_expert_offset + 0 .. {})".format(el - 1)),
        h: axis_const(p["hidden"], "model width"),
        "intermediate_size": axis_const(p["inter"], "each expert's MLP width"),
        "gemm1_out_size": axis_const(2 * p["inter"], order["axis"]),
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
        "hidden_states_scale": tensor(layout["shape"], "float32", layout["input"]),
        "gemm1_weights": tensor(["num_local_experts", "gemm1_out_size", h], fp8, order["input"]),
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
                                      "the global id of local expert 0 (a multiple of {})"
                                      .format(el)),
        "routed_scaling_factor": tensor(None, "float32", "multiplies the routing weights"),
    }
    inputs = {name: inputs[name] for name in input_names(p)}
    op_params = {"top_k": p["top_k"], "scoring": p["scoring"], "renormalize": True}
    if p["n_group"] > 1:
        op_params.update(n_group=p["n_group"], topk_group=p["topk_group"],
                         group_score=p["group_score"])
    op_params.update(activation="silu", gate_up_order=p["gate_up_order"])
    local_weights = ("4 * (num_gemm1_out_blocks * num_hidden_blocks + num_hidden_blocks * "
                     "num_intermediate_blocks) + gemm1_out_size * hidden_size + hidden_size * "
                     "intermediate_size")
    kernelarc = {
        "op_family": "moe",
        "op_params": op_params,
        "flops": "2 * num_tokens * 3 * hidden_size * intermediate_size",
        # hidden states (1 byte) and their scales, the logits, the bias, the output (2 bytes),
        # and the weights and scales of the experts the tokens can touch.
        "bytes": ("num_tokens * hidden_size + 4 * num_hidden_blocks * num_tokens + "
                  "4 * num_tokens * num_experts + " + "2 * num_experts + " * p["bias"] +
                  "2 * num_tokens * hidden_size + min(num_local_experts, num_tokens * "
                  "{}) * ({})".format(p["top_k"], local_weights)),
        "baseline": baseline_source(p),
    }
    if p.get("baseline_tolerance"):  # only where the baseline fails the workload tolerance
        kernelarc["baseline_tolerance"] = dict(p["baseline_tolerance"])
    return {
        "name": p["name"],
        "op_type": "moe",
        "description": description(p),
        "axes": axes,
        "constraints": ["gemm1_out_size == 2 * intermediate_size"],
        "inputs": inputs,
        "outputs": {
            "output": tensor([t, h], "bfloat16",
                             "the weighted sum of each token's chosen local experts' outputs"),
        },
        "reference": reference_source(p),
        "custom_inputs_entrypoint": "make_inputs",
        "kernelarc": kernelarc,
    }


DS_TOLERANCE_NOTE = (
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

QWEN_TOLERANCE_NOTE = (
    "Tolerance 2e-2 absolute and relative with 95% of the elements matched, as the DeepSeek-V3 "
    "problem's. A kernel on fp8 tensor cores (exact products, float32 accumulation) that stores "
    "h and each expert's y in bfloat16 meets it with room: in a CPU emulation of e4m3 at these "
    "shapes (64 and 256 tokens, ranks 2 and 5, against the float32 reference) its largest error "
    "was 7.8e-3, one bfloat16 step of the output (mean 1.7e-4 on the rows with a local expert), "
    "and no element left 1e-2; the 5% leaves room for a token whose top-8 boundary falls within "
    "float32 rounding and picks another expert. The timed baseline meets the same tolerance, so "
    "it has no baseline_tolerance: requantizing h to e4m3 and rounding G1 and y to bfloat16 gave "
    "errors up to 3.2e-2 (mean 1.7e-3 on the local rows) and left at most 0.002% of the local "
    "rows' elements beyond 2e-2 and none beyond 5e-2. The outputs are smaller than "
    "DeepSeek-V3's (no routed scaling factor: a local row's mean |output| is about 0.07, the "
    "largest 1.25), and the tolerance still tells the layouts apart: h with its gate and up "
    "halves swapped leaves 70% to 73% of the local rows' elements beyond 2e-2, and the "
    "token-major scales read as MN-major leave 31% to 38%.")


def fp8_problems():
    """Every problem: name, sizes, routing rule, input layout and draws, token counts, tolerance,
    and the texts particular to it (the description's intro and routing, make_inputs' doc)."""
    deepseek = {
        "name": "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048",
        "experts": 256, "local_experts": 32, "hidden": 7168, "inter": 2048, "top_k": 8,
        "scoring": "sigmoid", "n_group": 8, "topk_group": 4, "group_score": "top2_sum",
        "bias": True, "bias_std": 0.1,  # as make_moe_problems draws sigmoid routing
        "logit_std": 2.0,
        "scaling_input": 2.5,  # DeepSeek-V3's routed_scaling_factor, an input (not an op_param)
        "scale_layout": "mn_major", "gate_up_order": "up_gate",
        "tokens": [1, 7, 52, 256, 1024, 4096],
        "tolerance": TOLERANCE, "tolerance_note": DS_TOLERANCE_NOTE,
        "intro": "FlashInfer-Bench's {name}: the routed experts of a DeepSeek-V3 MoE layer "
                 "(deepseek-ai/DeepSeek-V3: {e} routed experts, top-{k}, n_group {ng}, "
                 "topk_group {kg}, hidden size {h}, moe_intermediate_size {i}, SwiGLU experts, "
                 "FP8 weights with 128x128 block scales as the checkpoint ships them) on one "
                 "rank of 8-way expert parallelism, which holds {el} of the experts (the shared "
                 "expert is not part of this op).",
        "routing_text": "Routing per token, from routing_logits (float32) and routing_bias "
                        "(bfloat16): scores s = sigmoid(logits), float32; selection scores c = s "
                        "+ routing_bias (the bias chooses experts but does not enter the "
                        "weights); the experts form {ng} groups of {gs} (expert j in group j // "
                        "{gs}), a group's score is the sum of its two largest c (DeepSeek-V3's "
                        "top2_sum), and only the experts of the {kg} best groups may be chosen; "
                        "the {k} experts with the largest c are chosen, ties to the lower group "
                        "and the lower expert (a stable descending sort, the moe family's rule; "
                        "FlashInfer's topk leaves ties open), and their weights are their s "
                        "divided by the sum of the {k} chosen s (+ 1e-20), times "
                        "routed_scaling_factor (an input, {rsf:g} in DeepSeek-V3).",
        "logits_note": "",
        "inputs_doc": ("routing_logits zero-mean normal with standard\n"
                       "    deviation {ls:g}, float32, and routing_bias with {bs:g}, bfloat16; "
                       "the rank's\n"
                       "    local_expert_offset, num_local_experts times a rank drawn uniformly "
                       "from torch's generator\n"
                       "    (the oracle seeds it per trial, so the draws exercise different "
                       "ranks); routed_scaling_factor\n"
                       "    {rsf:g} (DeepSeek-V3's). All of it from torch's generator."),
    }
    qwen3 = {
        "name": "moe_fp8_block_scale_renorm_routing_topk8_e16_h4096_i1536",
        "experts": 128, "local_experts": 16, "hidden": 4096, "inter": 1536, "top_k": 8,
        "scoring": "softmax", "n_group": 1, "topk_group": 1, "group_score": "top2_sum",
        "bias": False, "bias_std": None, "logit_std": 1.0, "scaling_input": None,
        "scale_layout": "token_major", "gate_up_order": "gate_up",
        "tokens": [1, 7, 52, 256, 1024, 4096],
        "tolerance": TOLERANCE, "tolerance_note": QWEN_TOLERANCE_NOTE,
        "intro": "{name}, named in FlashInfer-Bench's style (renorm for its Renormalize "
                 "routing): the routed experts of a Qwen3-235B-A22B MoE layer "
                 "(Qwen/Qwen3-235B-A22B-FP8: {e} routed experts, top-{k}, norm_topk_prob true, "
                 "hidden size {h}, moe_intermediate_size {i} ({ib} scale blocks), SwiGLU "
                 "experts; the checkpoint's weights are e4m3 with 128x128 block scales and its "
                 "activations are quantized dynamically per token and 128 features) on one rank "
                 "of 8-way expert parallelism, which holds {el} of the experts (the model has no "
                 "shared expert).",
        "routing_text": "Routing per token, from routing_logits (float32) alone (no bias, no "
                        "groups, no routed scaling factor): scores s = softmax(logits) over all "
                        "{e} experts, float32; the {k} experts with the largest s are chosen, "
                        "ties to the lower expert (a stable descending sort, the moe family's "
                        "rule), and their weights are their s divided by the sum of the {k} "
                        "chosen s (norm_topk_prob). That is FlashInfer's RenormalizeNaive "
                        "routing (softmax, top-k, renormalize: Qwen3's) and, up to float32 "
                        "rounding, its Renormalize (the top-{k} logits, then a softmax over "
                        "them), which chooses the same experts with the same weights.",
        "logits_note": " (a fan-in-scaled router's spread; the renormalized top-{k} weights "
                       "then average 0.23 for the first choice and 0.08 for the last)",
        "inputs_doc": ("routing_logits N(0, {lv:g}), float32\n"
                       "    (softmax routing: no routing_bias, no routed_scaling_factor); the "
                       "rank's local_expert_offset,\n"
                       "    num_local_experts times a rank drawn uniformly from torch's "
                       "generator (the oracle seeds it\n"
                       "    per trial, so the draws exercise different ranks). All of it from "
                       "torch's generator."),
    }
    return [deepseek, qwen3]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_ROOT
    for p in fp8_problems():
        write(root, "cuda", p["name"], definition(p), [{"num_tokens": t} for t in p["tokens"]],
              p["tolerance"])


if __name__ == "__main__":
    main()
