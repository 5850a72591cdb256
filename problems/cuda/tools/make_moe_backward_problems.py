"""Writes the experts' backward problems (op family "moe_backward", docs/TEMPLATES.md "Family:
moe_backward"): definition.json and workload.jsonl of small float32 problems under problems/cpu
and of bfloat16 model layers under problems/cuda.

    python3 problems/cuda/tools/make_moe_backward_problems.py [problems_root]

The reference runs the eager loop over experts forward under autograd and returns the gradients
torch.autograd.grad computes, so it is PyTorch's own backward, not a hand-derived one. It runs in
float32 (on bfloat16 inputs: upcast, the gradients rounded to the outputs' dtypes once): eager
bfloat16 autograd rounds every intermediate (w dy, dh, dg, du, y) and its routing-weight
gradient, a sum over H of rounded products, missed float32's by more than 2e-2 on 1.6% of the
elements in a Qwen3-sized check, beyond the 1% the tolerance allows. The eager bfloat16 backward
a user runs is the problem's timed baseline instead.

The model layers are the experts one GPU holds in expert-parallel training, as the dispatch
(e.g. DeepEP) hands them over: every token has at least one local expert, and a choice of an
expert on another rank has id -1. The whole layers do not fit: every checked call's expected
outputs hold a gradient of every weight (about 22 draws per token count), so Mixtral's 2.8 GB of
experts would need 60 GB of oracle cache per token count on a 64 GB disk."""
import os
import sys

from make_moe_problems import DEFAULT_ROOT, axis_const, axis_var, tensor, write

TOL_F32 = {"max_atol": 2e-4, "max_rtol": 2e-4, "required_matched_ratio": 0.99}
TOL_BF16 = {"max_atol": 0.02, "max_rtol": 0.02, "required_matched_ratio": 0.99}
TORCH_DTYPES = {"bfloat16": "torch.bfloat16", "float16": "torch.float16",
                "float32": "torch.float32"}

REFERENCE = '''import torch
import torch.nn.functional as F

ACTIVATION = "{activation}"  # the gate's activation
FUSED = {fused}  # gate and up as one [E, 2I, H] weight
UP_FIRST = {up_first}  # a fused weight holds the up rows first
DTYPE = {dtype}  # of the hidden states, the output gradient and the weights
# The model's routed experts; this rank holds the first num_experts of them, and a choice of
# another rank's expert has id -1 (no expert here).
GLOBAL_EXPERTS = {global_experts}
COMPUTE = {compute}  # the autograd's dtype (None: the inputs')


def act(g):
    if ACTIVATION == "silu":
        return F.silu(g)
    return F.gelu(g, approximate="tanh" if ACTIVATION == "gelu_tanh" else "none")


def normal(shape, std, device):
    values = torch.randn(shape, dtype=DTYPE, device=device)
    return values if std == 1.0 else values.mul_(std)


def make_inputs(axes, device):
    \"\"\"The routing as a router makes it: TOP_K distinct experts per token out of the
    GLOBAL_EXPERTS (a random order of them, its first TOP_K) with positive float32 weights summing
    to 1 (a softmax over K); with experts on other ranks, a token without a local expert gets one
    in its first choice (the dispatch sends this rank only tokens it serves) and the others' ids
    become -1. Hidden states and the output's gradient N(0, 1); gate and up weights N(0, 1/H),
    down N(0, 1/I) (fan-in scaled, so every product stays O(1)).\"\"\"
    tokens, experts = axes["num_tokens"], axes["num_experts"]
    hidden, inter, top_k = axes["hidden_size"], axes["intermediate_size"], axes["top_k"]
    ids = torch.rand(tokens, GLOBAL_EXPERTS, device=device).argsort(dim=-1)[:, :top_k]
    if GLOBAL_EXPERTS > experts:
        local = torch.randint(0, experts, (tokens,), device=device)
        ids[:, 0] = torch.where((ids >= experts).all(dim=-1), local, ids[:, 0])
        ids = ids.masked_fill(ids >= experts, -1)
    inputs = {{
        "hidden_states": normal((tokens, hidden), 1.0, device),
        "topk_ids": ids.to(torch.{id_dtype}),
        "topk_weights": torch.softmax(torch.randn(tokens, top_k, device=device), dim=-1),
    }}
    if FUSED:
        inputs["w13"] = normal((experts, 2 * inter, hidden), hidden ** -0.5, device)
    else:
        inputs["w1"] = normal((experts, inter, hidden), hidden ** -0.5, device)
        inputs["w3"] = normal((experts, inter, hidden), hidden ** -0.5, device)
    inputs["w2"] = normal((experts, hidden, inter), inter ** -0.5, device)
    inputs["grad_output"] = normal((tokens, hidden), 1.0, device)
    return inputs


def experts_forward(x, ids, weights, gate, up, down):
    \"\"\"The layer's output from its routing: per expert, its tokens gathered, h = act(x gate^T) *
    (x up^T), y = h down^T, and y times the token's weight (cast to y's dtype, as Mixtral's and
    Qwen3's blocks cast it) added into the output.\"\"\"
    out = torch.zeros_like(x)
    for e in range(gate.shape[0]):
        token, slot = (ids == e).nonzero(as_tuple=True)
        if token.numel() == 0:
            continue
        xe = x.index_select(0, token)
        h = act(torch.matmul(xe, gate[e].t())) * torch.matmul(xe, up[e].t())
        y = torch.matmul(h, down[e].t())
        out = out.index_add(0, token, y * weights[token, slot].unsqueeze(1).to(y.dtype))
    return out


def leaf(t):
    return t.detach().to(COMPUTE or t.dtype).requires_grad_()


def run({params}):
    with torch.enable_grad():
        x = leaf(hidden_states)
        weights = leaf(topk_weights)
        leaves = [x, {weight_leaves}, weights]
        {split}
        out = experts_forward(x, topk_ids.long(), weights, gate, up, down)
        grads = torch.autograd.grad(out, leaves, grad_output.to(x.dtype))
    # Rounded once to the outputs' dtypes: the inputs'.
    dtypes = [hidden_states.dtype] + [DTYPE] * (len(leaves) - 2) + [topk_weights.dtype]
    grads = [g.to(dtype) for g, dtype in zip(grads, dtypes)]
    return {returned}
'''


def reference(p, compute="torch.float32"):
    fused = p["fused"]
    inputs = ["hidden_states", "topk_ids", "topk_weights"] + (
        ["w13"] if fused else ["w1", "w3"]) + ["w2", "grad_output"]
    names = ["w13", "w2"] if fused else ["w1", "w3", "w2"]
    leaves = ", ".join(f"leaf({n})" for n in names)
    if fused:
        halves = "up, gate" if p["up_first"] else "gate, up"
        split = (f"{halves} = leaves[1].chunk(2, dim=1)\n"
                 "        down = leaves[2]")
    else:
        split = "gate, up, down = leaves[1], leaves[2], leaves[3]"
    # grads follows leaves: x, the weights, then the routing weights (kept only when asked for).
    returned = "tuple(grads)" if p["route_grad"] else "tuple(grads[:-1])"
    return REFERENCE.format(activation=p["activation"], fused=fused, up_first=p["up_first"],
                            dtype=TORCH_DTYPES[p["dtype"]],
                            global_experts=p["global_experts"], compute=compute,
                            id_dtype=p["id_dtype"], params=", ".join(inputs),
                            weight_leaves=leaves, split=split, returned=returned)


# What the eager bfloat16 autograd is held to before it is timed (see description()).
BASELINE_TOL_BF16 = {"max_atol": 5e-2, "max_rtol": 5e-2, "required_matched_ratio": 0.95}


def description(p):
    fused, k, h, i, e = p["fused"], p["top_k"], p["hidden"], p["inter"], p["experts"]
    if fused:
        weights = "fused w13, " + ("up rows first" if p["up_first"] else "gate rows first")
    else:
        weights = "w1 and w3 apart"
    text = (
        f"{p['intro']} The experts' backward pass of a mixture-of-experts layer given its "
        f"routing: {e} experts, top-{k}, hidden size {h}, intermediate size {i}, "
        f"{p['activation']}-gated experts ({weights}), {p['dtype']}. The forward pass: per "
        "token, out = sum over its experts of weight * (act(x W_gate^T) * (x W_up^T)) W_down^T; "
        "this problem returns the gradients of the hidden states and of every expert weight"
        + (" and of the routing weights" if p["route_grad"] else "") +
        " for the output gradient grad_output. ")
    if p["global_experts"] > e:
        text += (
            f"The {e} experts are this rank's of the model's {p['global_experts']} under "
            f"{p['global_experts'] // e}-way expert parallelism{p['sharding']}: topk_ids holds "
            "each token's top-k as the dispatch hands them over, with -1 for an expert on "
            "another rank (no expert here: no contribution, a zero routing gradient), and every "
            "token has at least one local expert. ")
    if p["dtype"] == "float32":
        text += "The reference is PyTorch's autograd through the eager loop over experts. "
    else:
        text += (
            "The reference is PyTorch's autograd through the eager loop over experts in float32 "
            f"on the {p['dtype']} inputs, each gradient rounded to its output's dtype once (the "
            "weights' gradients in the weights' dtype, the routing weights' in float32); the "
            "timed baseline is the same autograd in bfloat16, as a user runs it. Eager bfloat16 "
            "rounds every intermediate, and its routing-weight gradient (a sum over H of "
            "rounded products) missed float32's by more than the tolerance on 1.6% of the "
            "elements, so it is not the oracle. A weight gradient sums every routed slot of its "
            "expert, a few thousand at Mixtral's 2 experts of a rank and 4096 tokens: rounding "
            "dg, du or w h to bfloat16 once per slot before that sum put 2.5% of grad_w13's "
            "elements (those near zero) past the tolerance, 2e-2 absolute and relative with 99% "
            "matched (1.5% of grad_w2's; eager bfloat16: 12% and 10%), so a kernel must carry "
            "them more precisely into those sums (e.g. as two bfloat16 parts, hi + lo); dx, a "
            "sum over the intermediate size per slot, stays within the tolerance from bfloat16 "
            "dg and du. The timed baseline is held to kernelarc.baseline_tolerance instead (5e-2 "
            "absolute and relative, 95% matched): on the CPU (torch 1.13, 4096 tokens) eager "
            "bfloat16 left 3.3% of Mixtral's grad_w13 elements and 0.05% of Qwen3's grad_w1 "
            "beyond 5e-2, at a relative norm error of 5e-3 on every gradient (its rounding), "
            "while code computing something else misses on most elements. ")
    routed = "num_tokens * {}".format(k) if p["global_experts"] == e else "num_tokens"
    text += (
        "Token counts " + ", ".join(str(x) for x in p["tokens"]) + "; flops count, per routed "
        "slot, the recomputed forward (two products), the two backward products of each of the "
        "three weights and, with the routing gradient, the down product again")
    if p["global_experts"] > e:
        text += (", over num_tokens routed slots, the fewest a call can have (one local expert "
                 "per token; about 1.1 on average), so that the speed-of-light bound stays a "
                 "floor")
    return text + "."


def definition(p):
    fused, dtype = p["fused"], p["dtype"]
    axes = {
        "num_tokens": axis_var("tokens of the forward pass (rows of hidden_states)"),
        "num_experts": axis_const(p["experts"], "routed experts"),
        "top_k": axis_const(p["top_k"], "experts per token"),
        "hidden_size": axis_const(p["hidden"], "model width"),
        "intermediate_size": axis_const(p["inter"], "each expert's MLP width"),
    }
    if fused:
        axes["gate_up_size"] = {"type": "expr", "expression": "2 * intermediate_size",
                                "description": "gate and up rows"}
    th = ["num_tokens", "hidden_size"]
    tk = ["num_tokens", "top_k"]
    eih = ["num_experts", "intermediate_size", "hidden_size"]
    inputs = {
        "hidden_states": tensor(th, dtype, "the forward pass's hidden states"),
        "topk_ids": tensor(tk, p["id_dtype"], "each token's chosen experts"),
        "topk_weights": tensor(tk, "float32", "their routing weights"),
    }
    if fused:
        order = "up rows, then gate rows" if p["up_first"] else "gate rows, then up rows"
        inputs["w13"] = tensor(["num_experts", "gate_up_size", "hidden_size"], dtype,
                               order + ", per expert ([out, in])")
    else:
        inputs["w1"] = tensor(eih, dtype, "the gate projections ([out, in])")
        inputs["w3"] = tensor(eih, dtype, "the up projections ([out, in])")
    inputs["w2"] = tensor(["num_experts", "hidden_size", "intermediate_size"], dtype,
                          "the down projections ([out, in])")
    inputs["grad_output"] = tensor(th, dtype, "the gradient of the layer's output")
    outputs = {"grad_hidden_states": tensor(th, dtype, "the hidden states' gradient")}
    for name in (["w13"] if fused else ["w1", "w3"]) + ["w2"]:
        outputs["grad_" + name] = tensor(inputs[name]["shape"], dtype, name + "'s gradient")
    if p["route_grad"]:
        outputs["grad_topk_weights"] = tensor(tk, "float32", "the routing weights' gradient")
    t, k, h, i = "num_tokens", p["top_k"], p["hidden"], p["inter"]
    e = p["experts"]
    products = 9 if p["route_grad"] else 8
    routed = f"{t} * {k}" if p["global_experts"] == e else t
    a = 4 if dtype == "float32" else 2
    route_bytes = (8 if p["id_dtype"] == "int64" else 4) + 4 + (4 if p["route_grad"] else 0)
    params = {"activation": p["activation"]}
    if p["up_first"]:
        params["gate_up_order"] = "up_gate"
    extra = {}
    if dtype != "float32":
        extra["baseline"] = reference(p, compute="None")
        extra["baseline_tolerance"] = BASELINE_TOL_BF16
    return {
        "name": p["name"],
        "op_type": "moe_backward",
        "description": description(p),
        "axes": axes,
        "inputs": inputs,
        "outputs": outputs,
        "reference": reference(p),
        "custom_inputs_entrypoint": "make_inputs",
        "kernelarc": {
            "op_family": "moe_backward",
            "op_params": params,
            "flops": f"{2 * products} * {routed} * {h} * {i}",
            # x and grad_output read, dx written; ids and weights read, their gradient written;
            # the weights read and their gradients written.
            "bytes": f"{3 * a} * {t} * {h} + {route_bytes} * {t} * {k} + {6 * a} * {e} * {h} * {i}",
            **extra,
        },
    }


def problems():
    cpu = dict(target="cpu", dtype="float32", tolerance=TOL_F32, tokens=[1, 7, 64, 300],
               up_first=False, sharding="")
    cuda = dict(target="cuda", dtype="bfloat16", tolerance=TOL_BF16, up_first=False, sharding="")
    return [
        dict(cpu, name="moe_backward_swiglu_f32", experts=8, global_experts=8, top_k=2,
             hidden=128, inter=192, fused=True, activation="silu", id_dtype="int64",
             route_grad=True, intro="A small Mixtral-style layer's backward."),
        dict(cpu, name="moe_backward_gelu_tanh_f32", experts=16, global_experts=16, top_k=4,
             hidden=96, inter=64, fused=False, activation="gelu_tanh", id_dtype="int32",
             route_grad=False,
             intro="A small layer with tanh-GELU experts, weights apart and int32 expert ids, "
                   "whose routing weights are not trained."),
        # 8 x 3 x 2048 x 768 weights: 75 MB, and as much again of their gradients per draw.
        dict(cuda, name="moe_backward_qwen3_30b_a3b_ep16_bf16", experts=8, global_experts=128,
             top_k=8, hidden=2048, inter=768, fused=False, activation="silu",
             id_dtype="int64", route_grad=True, tokens=[5, 512, 4096],
             intro="Qwen3-30B-A3B (Qwen/Qwen3-30B-A3B) in training, its sparse MoE block's "
                   "experts on one of 16 expert-parallel ranks."),
        # 2 x 2 x 1792 x 4096 + 2 x 4096 x 1792 weights: 88 MB.
        dict(cuda, name="moe_backward_mixtral_8x7b_ep4_etp8_bf16", experts=2, global_experts=8,
             top_k=2, hidden=4096, inter=1792, fused=True, activation="silu", id_dtype="int32",
             route_grad=True, tokens=[5, 512, 4096],
             sharding=" and 8-way expert tensor parallelism (each expert's 14336 intermediate "
                      "columns split 8 ways, 1792 here)",
             intro="Mixtral-8x7B (mistralai/Mixtral-8x7B-v0.1) in training on 32 GPUs, the "
                   "experts of one rank (w1/w3 fused as w13)."),
        # Sizes off every tile multiple, tanh-GELU, up rows first, no routing gradient: the
        # paths the model layers do not take, at 16 x 3 x 1000 x 328 weights (31 MB).
        dict(cuda, name="moe_backward_gelu_tanh_bf16_h1000_i328", experts=16, global_experts=16,
             top_k=4, hidden=1000, inter=328, fused=True, up_first=True,
             activation="gelu_tanh", id_dtype="int64", route_grad=False, tokens=[1, 37, 300],
             intro="A small layer with tanh-GELU experts whose sizes are no multiple of a tile, "
                   "with the up rows first in w13 and untrained routing weights."),
    ]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_ROOT
    for p in problems():
        write(root, p["target"], p["name"], definition(p), [{"num_tokens": t} for t in p["tokens"]],
              p["tolerance"])


if __name__ == "__main__":
    main()
