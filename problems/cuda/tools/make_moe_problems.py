"""Writes the mixture-of-experts problems (op family "moe", docs/TEMPLATES.md "Family: moe"):
definition.json and workload.jsonl of three bfloat16 model layers under problems/cuda and of two
small float32 problems under problems/cpu.

    python3 problems/cuda/tools/make_moe_problems.py [problems_root]

problems_root defaults to this repository's problems/. The references are self-contained Python
(torch 1.13 on the CPU, torch 2.x on CUDA); `reference_source` builds them, and `moe_problems`
lists the problems, so a check can build a problem's reference at other sizes."""
import json
import os
import sys
import textwrap
import uuid

DEFAULT_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOL_BF16 = {"max_atol": 0.02, "max_rtol": 0.02, "required_matched_ratio": 0.99}
TOL_F32 = {"max_atol": 1e-4, "max_rtol": 1e-4, "required_matched_ratio": 0.99}


def axis_var(description):
    return {"type": "var", "description": description}


def axis_const(value, description):
    return {"type": "const", "value": value, "description": description}


def axis_expr(expression, description):
    return {"type": "expr", "expression": expression, "description": description}


def tensor(shape, dtype, description):
    return {"shape": shape, "dtype": dtype, "description": description}


def write(root, target, dirname, definition, workloads, tolerance):
    path = os.path.join(root, target, dirname)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "definition.json"), "w") as f:
        json.dump(definition, f, indent=2)
        f.write("\n")
    with open(os.path.join(path, "workload.jsonl"), "w") as f:
        for axes in workloads:
            line = {
                "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, "kernelarc/problems/" + target + "/" +
                                       dirname + "/" + json.dumps(axes, sort_keys=True))),
                "axes": axes,
                "inputs": {name: {"type": "custom"} for name in definition["inputs"]},
                "tolerance": dict(tolerance),
            }
            f.write(json.dumps(line) + "\n")


# ---- the reference ------------------------------------------------------------------------
#
# One source for every problem: the routing rule's constants first, then make_inputs (written
# per problem from its input list), route() and expert_mlps() (shared), then run() (per problem:
# where the logits and the gate and up weights come from).

HEADER = '''import torch
import torch.nn.functional as F

# The routing rule (kernelarc.op_params).
TOP_K = {top_k}
SCORING = "{scoring}"  # score of each expert from its logit, float32
RENORMALIZE = {renormalize}  # the chosen weights divided by their sum (sigmoid: sum + 1e-20)
N_GROUP = {n_group}  # experts in N_GROUP equal groups; only the TOPK_GROUP best may be chosen
TOPK_GROUP = {topk_group}
GROUP_SCORE = "{group_score}"  # a group's rank: "top2_sum" of its selection scores, or "max"
ROUTED_SCALING_FACTOR = {routed_scaling_factor}
'''

NORMAL = '''

def normal(shape, std, dtype, device):
    """N(0, std^2) values drawn from torch's generator (the oracle seeds it with the trial's seed)
    directly on `device` in `dtype`, so that no float32 copy of the large weights is made."""
    values = torch.randn(shape, dtype=dtype, device=device)
    return values if std == 1.0 else values.mul_(std)
'''

MAKE_INPUTS = '''

def make_inputs(axes, device):
    """{doc}"""
    tokens, experts = axes["num_tokens"], axes["num_experts"]
    hidden, inter = axes["hidden_size"], axes["intermediate_size"]
    return {{
{entries}    }}
'''

ROUTE = '''

def ranked(values):
    """Each row's column indices by decreasing value, ties to the lower index (a stable sort)."""
    return torch.sort(values, dim=-1, descending=True, stable=True)[1]


def route(logits, bias):
    """Every token's TOP_K experts [T, TOP_K] (int64, by decreasing selection score, ties to the
    lower expert) and their weights [T, TOP_K] (float32), from the logits [T, E] and the
    selection bias [E] (or None)."""
    logits = logits.float()
    if SCORING == "sigmoid":
        scores = torch.sigmoid(logits)
    else:
        scores = torch.softmax(logits, dim=-1)
    select = scores if bias is None else scores + bias.float()  # chooses; weights omit the bias
    tokens, experts = select.shape
    if N_GROUP > 1:
        per_group = experts // N_GROUP
        grouped = select.view(tokens, N_GROUP, per_group)
        if GROUP_SCORE == "max" or per_group < 2:
            group_scores = grouped.max(dim=-1)[0]
        else:
            group_scores = grouped.topk(2, dim=-1)[0].sum(dim=-1)
        kept = ranked(group_scores)[:, :TOPK_GROUP]
        allowed = torch.zeros(tokens, N_GROUP, dtype=torch.bool, device=select.device)
        allowed.scatter_(1, kept, True)
        select = select.masked_fill(~allowed.repeat_interleave(per_group, dim=1), float("-inf"))
    ids = ranked(select)[:, :TOP_K]
    weights = scores.gather(1, ids)
    if RENORMALIZE:
        total = weights.sum(dim=-1, keepdim=True)
        weights = weights / (total + 1e-20 if SCORING == "sigmoid" else total)
    return ids, weights * ROUTED_SCALING_FACTOR


def expert_mlps(x, ids, weights, gate, up, down):
    """The chosen experts' SwiGLU MLPs and their weighted sum: x [T, H]; gate and up [E, I, H],
    down [E, H, I] (nn.Linear's [out, in]). Per expert, the eager loop in x's dtype: its tokens
    gathered, h = silu(x gate^T) * (x up^T) and y = h down^T, each product and h rounded to x's
    dtype as eager PyTorch rounds them; y times the token's weight is added into a float32
    accumulator, which is rounded to x's dtype once."""
    tokens, hidden = x.shape
    flat_ids = ids.reshape(-1)
    slots = torch.sort(flat_ids, stable=True)[1]  # (token, k) slots grouped by expert
    counts = torch.bincount(flat_ids, minlength=gate.shape[0]).tolist()
    token_of = torch.div(slots, ids.shape[1], rounding_mode="floor")
    slot_weight = weights.reshape(-1).index_select(0, slots)
    acc = torch.zeros(tokens, hidden, dtype=torch.float32, device=x.device)
    start = 0
    for e, count in enumerate(counts):
        if count == 0:
            continue
        rows = token_of[start:start + count]
        xe = x.index_select(0, rows)
        h = F.silu(torch.matmul(xe, gate[e].t())) * torch.matmul(xe, up[e].t())
        y = torch.matmul(h, down[e].t())
        acc.index_add_(0, rows, y.float() * slot_weight[start:start + count].unsqueeze(1))
        start += count
    return acc.to(x.dtype)
'''

RUN = '''

@torch.no_grad()
def run({params}):
{body}'''

RUN_LOGITS = "    ids, weights = route(router_logits, {bias})\n"
RUN_ROUTER = ("    # The router's logits in float32: hidden_states times the router weight.\n"
              "    logits = torch.matmul(hidden_states.float(), gate_weight.float().t())\n"
              "    ids, weights = route(logits, {bias})\n")
RUN_FUSED = ("    inter = w2.shape[2]\n"
             "    gate, up = w13[:, :inter], w13[:, inter:]  # gate rows first\n"
             "    return expert_mlps(hidden_states, ids, weights, gate, up, w2)\n")
RUN_SPLIT = "    return expert_mlps(hidden_states, ids, weights, w1, w3, w2)\n"


def input_list(p):
    """(name, shape, std, dtype, description) of each input, in definition order; std is Python
    over the names make_inputs defines (tokens, experts, hidden, inter)."""
    act = p["dtype"]
    rows = [("hidden_states", ["num_tokens", "hidden_size"], "1.0", act,
             "the tokens' hidden states (the input of the layer's MLP)")]
    if p["router_weight"]:
        rows.append(("gate_weight", ["num_experts", "hidden_size"], "hidden ** -0.5", act,
                     "the router's weight (nn.Linear(H, E, bias=False)); the logits are "
                     "hidden_states.float() @ gate_weight.float().T, float32"))
    else:
        rows.append(("router_logits", ["num_tokens", "num_experts"], repr(p["logit_std"]),
                     "float32", "the router's output, one logit per token and expert"))
    if p["bias"]:
        rows.append(("e_score_correction_bias", ["num_experts"], repr(p["bias_std"]), "float32",
                     "added to the scores to choose the experts, not to the weights "
                     "(DeepSeek-V3's aux-loss-free balancing)"))
    if p["fused"]:
        rows.append(("w13", ["num_experts", "gate_up_size", "hidden_size"], "hidden ** -0.5", act,
                     "each expert's gate (rows [0, I)) and up (rows [I, 2I)) projections, "
                     "[out, in] as nn.Linear stores them"))
    else:
        rows.append(("w1", ["num_experts", "intermediate_size", "hidden_size"], "hidden ** -0.5",
                     act, "each expert's gate projection, [out, in]"))
        rows.append(("w3", ["num_experts", "intermediate_size", "hidden_size"], "hidden ** -0.5",
                     act, "each expert's up projection, [out, in]"))
    rows.append(("w2", ["num_experts", "hidden_size", "intermediate_size"], "inter ** -0.5", act,
                 "each expert's down projection, [out, in]"))
    return rows


SHAPE_VARS = {"num_tokens": "tokens", "num_experts": "experts", "hidden_size": "hidden",
              "intermediate_size": "inter", "gate_up_size": "2 * inter"}
TORCH_DTYPES = {"bfloat16": "torch.bfloat16", "float16": "torch.float16",
                "float32": "torch.float32"}


def describe_std(std):
    names = {"hidden ** -0.5": "1/sqrt(H)", "inter ** -0.5": "1/sqrt(I)"}
    return names[std] if std in names else "{:g}".format(float(std))


def inputs_text(p):
    return ("zero-mean normals with standard deviation " +
            ", ".join("{} for {}".format(describe_std(std), name)
                      for name, _, std, _, _ in input_list(p)) +
            " (fan-in scaling: gate, up and the experts' outputs stay O(1))")


def make_inputs_doc(p):
    return ("Custom inputs scaled so that every value stays O(1): " + inputs_text(p) +
            ". Drawn on the device, in the definition's dtypes.")


def reference_source(p):
    """The definition's reference for problem p (a dict of moe_problems' form)."""
    source = HEADER.format(top_k=p["top_k"], scoring=p["scoring"], renormalize=p["renormalize"],
                           n_group=p["n_group"], topk_group=p["topk_group"],
                           group_score=p["group_score"],
                           routed_scaling_factor=p["routed_scaling_factor"])
    source += NORMAL
    entries = ""
    for name, shape, std, dtype, _ in input_list(p):
        dims = ", ".join(SHAPE_VARS[axis] for axis in shape)
        if len(shape) == 1:
            dims += ","
        entries += '        "{}": normal(({}), {}, {}, device),\n'.format(
            name, dims, std, TORCH_DTYPES[dtype])
    doc = textwrap.fill(make_inputs_doc(p), width=96, initial_indent="    ",
                        subsequent_indent="    ").strip()
    source += MAKE_INPUTS.format(doc=doc, entries=entries)
    source += ROUTE
    names = [row[0] for row in input_list(p)]
    bias = "e_score_correction_bias" if p["bias"] else "None"
    body = (RUN_ROUTER if p["router_weight"] else RUN_LOGITS).format(bias=bias)
    body += RUN_FUSED if p["fused"] else RUN_SPLIT
    source += RUN.format(params=", ".join(names), body=body)
    return source


def op_params(p):
    params = {"top_k": p["top_k"], "scoring": p["scoring"], "renormalize": p["renormalize"],
              "n_group": p["n_group"], "topk_group": p["topk_group"]}
    if p["n_group"] > 1:
        params["group_score"] = p["group_score"]
    params["routed_scaling_factor"] = p["routed_scaling_factor"]
    params["activation"] = "silu"
    if p["fused"]:
        params["gate_up_order"] = "gate_up"
    return params


def flops(p):
    text = "2 * num_tokens * {} * 3 * hidden_size * intermediate_size".format(p["top_k"])
    if p["router_weight"]:
        text += " + 2 * num_tokens * num_experts * hidden_size"
    return text


def bytes_(p):
    """Hidden states in, the output, the routing input, and the weights of the experts that the
    tokens can use at most: min(E, T * top_k); each is read once."""
    a = 4 if p["dtype"] == "float32" else 2
    text = "{} * num_tokens * hidden_size".format(2 * a)
    if p["router_weight"]:
        text += " + {} * num_experts * hidden_size".format(a)
    else:
        text += " + 4 * num_tokens * num_experts"
    if p["bias"]:
        text += " + 4 * num_experts"
    text += (" + {} * min(num_experts, num_tokens * {}) * 3 * hidden_size * intermediate_size"
             .format(a, p["top_k"]))
    return text


def routing_text(p):
    e, k = p["experts"], p["top_k"]
    if p["scoring"] == "softmax":
        text = "scores s = softmax(logits) over the {} experts, float32".format(e)
    else:
        text = "scores s = sigmoid(logits) per expert, float32"
    if p["bias"]:
        text += ("; selection scores c = s + e_score_correction_bias (the bias chooses experts "
                 "but does not enter the weights)")
        c = "c"
    else:
        c = "s"
    if p["n_group"] > 1:
        text += ("; the experts form {} groups of {} (expert j in group j // {}), a group's score "
                 "is the sum of its two largest {} ({}), and only the experts of the {} best "
                 "groups (ties to the lower group) may be chosen").format(
                     p["n_group"], e // p["n_group"], e // p["n_group"], c,
                     "DeepSeek-V3's top2_sum" if p["group_score"] == "top2_sum" else "max",
                     p["topk_group"])
    text += ("; the {} experts with the largest {} are chosen (ties to the lower expert), and "
             "their weights are their s").format(k, c)
    if p["renormalize"]:
        text += " divided by the sum of the {} chosen s{}".format(
            k, " (+ 1e-20)" if p["scoring"] == "sigmoid" else "")
    if p["routed_scaling_factor"] != 1.0:
        text += ", times routed_scaling_factor {}".format(p["routed_scaling_factor"])
    return text + "."


def description(p):
    e, k, h, i = p["experts"], p["top_k"], p["hidden"], p["inter"]
    bf16 = p["dtype"] == "bfloat16"
    if p["router_weight"]:
        route_in = ("Routing per token, from the router's logits computed in float32 "
                    "(hidden_states.float() @ gate_weight.float().T): ")
    else:
        route_in = "Routing per token, from router_logits (float32): "
    if p["fused"]:
        weights = ("W_gate[e] = w13[e, :I] and W_up[e] = w13[e, I:] (gate rows first), "
                   "W_down[e] = w2[e]")
    else:
        weights = "W_gate[e] = w1[e], W_up[e] = w3[e], W_down[e] = w2[e]"
    if bf16:
        rounding = (", h and y rounded to bfloat16 as the eager reference rounds each product "
                    "(a kernel may keep them in float32; the tolerance allows it)")
        combine = "accumulated in float32 and rounded to bfloat16 once"
    else:
        rounding = ""
        combine = "float32 throughout"
    text = (
        "{intro} One sparse mixture-of-experts MLP layer: {e} routed experts, top-{k}, hidden "
        "size {h}, expert intermediate size {i}, SwiGLU experts, {dtype}. {route_in}{routing} "
        "Each chosen expert e computes h = silu(x W_gate[e]^T) * (x W_up[e]^T) and y = h "
        "W_down[e]^T, with {weights} ([out, in] as nn.Linear stores them){rounding}; output = "
        "sum over the chosen experts of weight * y, {combine}. These are the moe family's "
        "semantics (docs/TEMPLATES.md); the reference is the plain eager loop over experts "
        "(index_select of an expert's tokens, three matmuls, index_add_ into a float32 "
        "accumulator){ref_dtype}. Inputs come from make_inputs: {inputs}. Token counts {tokens} "
        "(decode to prefill); flops count the chosen experts' three products per token{router}; "
        "bytes count the hidden states, the output, the routing input and the weights of "
        "min(E, T * top_k) experts, the most that T tokens can use (all of them once T * top_k "
        "passes E). {tol}").format(
            intro=p["intro"], e=e, k=k, h=h, i=i, dtype=p["dtype"], route_in=route_in,
            routing=routing_text(p), weights=weights, rounding=rounding, combine=combine,
            ref_dtype=" in bfloat16, as a user runs it" if bf16 else "",
            inputs=inputs_text(p),
            tokens=", ".join(str(t) for t in p["tokens"]),
            router=" plus the router's product" if p["router_weight"] else "",
            tol=p["tolerance_note"])
    return text


def definition(p):
    axes = {
        "num_tokens": axis_var("tokens routed in one call (rows of hidden_states)"),
        "num_experts": axis_const(p["experts"], "routed experts"),
        "hidden_size": axis_const(p["hidden"], "model width"),
        "intermediate_size": axis_const(p["inter"], "each expert's MLP width"),
    }
    if p["fused"]:
        axes["gate_up_size"] = axis_expr("2 * intermediate_size", "gate and up rows of w13")
    inputs = {name: tensor(shape, dtype, desc) for name, shape, _, dtype, desc in input_list(p)}
    return {
        "name": p["name"],
        "op_type": "moe",
        "description": description(p),
        "axes": axes,
        "inputs": inputs,
        "outputs": {
            "output": tensor(["num_tokens", "hidden_size"], p["dtype"],
                             "the weighted sum of each token's chosen experts' outputs"),
        },
        "reference": reference_source(p),
        "custom_inputs_entrypoint": "make_inputs",
        "kernelarc": {
            "op_family": "moe",
            "op_params": op_params(p),
            "flops": flops(p),
            "bytes": bytes_(p),
            **baseline(p),
        },
    }


def baseline(p):
    """{"baseline": source} where the reference's router product runs in float32 on a 16-bit
    router weight, else {}: the timed baseline is the code a fast user runs, the product of the
    16-bit operands with a float32 output (torch.mm's out_dtype, CUDA, torch >= 2.8), not the
    float32 product of the oracle. A router product rounded to bfloat16, as Hugging Face's
    Qwen3-MoE runs it, is not the problem's function: with top-8 of 128 experts it picked other
    experts for enough tokens that 315,680 of the 16.8M outputs at 8192 tokens (1.9%) left the
    tolerance on an H100, beyond the 1% it allows, and the bench refused it as a baseline."""
    if not p["router_weight"] or p["dtype"] == "float32":
        return {}
    user_router = (
        "    # The router as a fast user runs it: one product of the 16-bit operands with a\n"
        "    # float32 output (torch.mm's out_dtype: CUDA, torch >= 2.8), else the float32 one.\n"
        "    # Only a torch without the argument falls back; a failing product still fails.\n"
        "    logits = None\n"
        "    if hidden_states.is_cuda:\n"
        "        try:\n"
        "            logits = torch.mm(hidden_states, gate_weight.t(), out_dtype=torch.float32)\n"
        "        except TypeError:\n"
        "            pass\n"
        "    if logits is None:\n"
        "        logits = torch.matmul(hidden_states.float(), gate_weight.float().t())\n")
    float_router = RUN_ROUTER.split("    ids, weights")[0]
    return {"baseline": reference_source(p).replace(float_router, user_router)}


BF16_TOL_NOTE = ("Tolerance 2e-2 absolute and relative with 99% of the elements matched: "
                 "it covers the bfloat16 rounding of h, y and the output (the same reference "
                 "run in float32 on the same inputs differs by up to about 1.8e-2, 1e-3 to 2e-3 "
                 "on average, with every element inside the tolerance), and the 1% covers a "
                 "token whose top-k boundary falls within float32 rounding and picks another "
                 "expert.")


def moe_problems():
    """Every problem: name, target, sizes, routing rule, inputs, token counts."""
    common = {"scoring": "softmax", "renormalize": True, "n_group": 1, "topk_group": 1,
              "group_score": "top2_sum", "routed_scaling_factor": 1.0, "bias": False,
              "router_weight": False, "fused": True, "logit_std": 1.0, "bias_std": 0.1,
              "dtype": "bfloat16", "target": "cuda", "tolerance": TOL_BF16,
              "tolerance_note": BF16_TOL_NOTE}
    mixtral = dict(common, name="moe_mixtral_8x7b_top2_bf16", experts=8, top_k=2, hidden=4096,
                   inter=14336, tokens=[1, 7, 33, 128, 517, 2048, 4096],
                   intro="Mixtral-8x7B (mistralai/Mixtral-8x7B-v0.1), its MoE block (w1/w3 "
                         "fused as w13).")
    qwen3 = dict(common, name="moe_qwen3_30b_a3b_top8_bf16", experts=128, top_k=8, hidden=2048,
                 inter=768, router_weight=True, fused=False,
                 tokens=[1, 7, 33, 128, 517, 2048, 8192],
                 intro="Qwen3-30B-A3B (Qwen/Qwen3-30B-A3B, norm_topk_prob true), its sparse MoE "
                       "block with the router's linear layer included.")
    moonlight = dict(common, name="moe_moonlight_16b_a3b_top6_bf16", experts=64, top_k=6,
                     hidden=2048, inter=1408, scoring="sigmoid", bias=True,
                     routed_scaling_factor=2.446, logit_std=2.0,
                     tokens=[1, 9, 33, 128, 517, 2048, 8192],
                     intro="Moonlight-16B-A3B (moonshotai/Moonlight-16B-A3B, the DeepSeek-V3 "
                           "architecture: sigmoid scores, noaux_tc routing with a correction "
                           "bias, n_group 1), its routed experts (the 2 shared experts are not "
                           "part of this op).")
    f32 = dict(common, dtype="float32", target="cpu", tolerance=TOL_F32,
               tolerance_note="Tolerance 1e-4 absolute and relative (float32 sums in another "
                              "order), 99% of the elements matched.")
    grouped = dict(f32, name="moe_grouped_sigmoid_f32", experts=16, top_k=4, hidden=256,
                   inter=384, scoring="sigmoid", bias=True, n_group=4, topk_group=2,
                   routed_scaling_factor=2.5, logit_std=2.0, tokens=[1, 5, 64, 300, 1024],
                   intro="A small DeepSeek-V3-style layer with group-limited routing.")
    softmax_router = dict(f32, name="moe_softmax_router_f32", experts=8, top_k=2, hidden=128,
                          inter=256, renormalize=False, router_weight=True, fused=False,
                          tokens=[1, 5, 64, 300, 1024],
                          intro="A small Mixtral-style layer with the router's linear layer "
                                "included and unnormalized top-k softmax weights (as "
                                "Qwen2-MoE's norm_topk_prob false).")
    return [mixtral, qwen3, moonlight, grouped, softmax_router]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_ROOT
    for p in moe_problems():
        write(root, p["target"], p["name"], definition(p), [{"num_tokens": t} for t in p["tokens"]],
              p["tolerance"])


if __name__ == "__main__":
    main()
