"""Writes the experts' backward problems (op family "moe_backward", docs/TEMPLATES.md "Family:
moe_backward"): definition.json and workload.jsonl of small float32 problems under problems/cpu.

    python3 problems/cuda/tools/make_moe_backward_problems.py [problems_root]

The reference runs the eager loop over experts forward under autograd and returns the gradients
torch.autograd.grad computes, so it is PyTorch's own backward, not a hand-derived one."""
import os
import sys

from make_moe_problems import DEFAULT_ROOT, axis_const, axis_var, tensor, write

TOL_F32 = {"max_atol": 2e-4, "max_rtol": 2e-4, "required_matched_ratio": 0.99}

REFERENCE = '''import torch
import torch.nn.functional as F

ACTIVATION = "{activation}"  # the gate's activation
FUSED = {fused}  # gate and up as one [E, 2I, H] weight, gate rows first


def act(g):
    if ACTIVATION == "silu":
        return F.silu(g)
    return F.gelu(g, approximate="tanh" if ACTIVATION == "gelu_tanh" else "none")


def make_inputs(axes, device):
    """The routing as a router makes it: TOP_K distinct experts per token (a random order of the
    experts, its first TOP_K) with positive weights summing to 1 (a softmax over K); hidden states
    and the output's gradient N(0, 1); gate and up weights N(0, 1/H), down N(0, 1/I) (fan-in
    scaled, so every product stays O(1))."""
    tokens, experts = axes["num_tokens"], axes["num_experts"]
    hidden, inter, top_k = axes["hidden_size"], axes["intermediate_size"], axes["top_k"]
    ids = torch.rand(tokens, experts, device=device).argsort(dim=-1)[:, :top_k]
    inputs = {{
        "hidden_states": torch.randn(tokens, hidden, device=device),
        "topk_ids": ids.to(torch.{id_dtype}),
        "topk_weights": torch.softmax(torch.randn(tokens, top_k, device=device), dim=-1),
    }}
    if FUSED:
        inputs["w13"] = torch.randn(experts, 2 * inter, hidden, device=device) * hidden ** -0.5
    else:
        inputs["w1"] = torch.randn(experts, inter, hidden, device=device) * hidden ** -0.5
        inputs["w3"] = torch.randn(experts, inter, hidden, device=device) * hidden ** -0.5
    inputs["w2"] = torch.randn(experts, hidden, inter, device=device) * inter ** -0.5
    inputs["grad_output"] = torch.randn(tokens, hidden, device=device)
    return inputs


def experts_forward(x, ids, weights, gate, up, down):
    """The layer's output from its routing: per expert, its tokens gathered, h = act(x gate^T) *
    (x up^T), y = h down^T, and y times the token's weight added into the output."""
    out = torch.zeros_like(x)
    for e in range(gate.shape[0]):
        token, slot = (ids == e).nonzero(as_tuple=True)
        if token.numel() == 0:
            continue
        xe = x.index_select(0, token)
        h = act(torch.matmul(xe, gate[e].t())) * torch.matmul(xe, up[e].t())
        y = torch.matmul(h, down[e].t())
        out = out.index_add(0, token, y * weights[token, slot].unsqueeze(1))
    return out


def run({params}):
    with torch.enable_grad():
        x = hidden_states.detach().requires_grad_()
        weights = topk_weights.detach().requires_grad_()
        leaves = [x, {weight_leaves}, weights]
        {split}
        out = experts_forward(x, topk_ids.long(), weights, gate, up, down)
        grads = torch.autograd.grad(out, leaves, grad_output)
    return {returned}
'''


def reference(p):
    fused = p["fused"]
    inputs = ["hidden_states", "topk_ids", "topk_weights"] + (
        ["w13"] if fused else ["w1", "w3"]) + ["w2", "grad_output"]
    names = ["w13", "w2"] if fused else ["w1", "w3", "w2"]
    leaves = ", ".join(f"{n}.detach().requires_grad_()" for n in names)
    if fused:
        split = ("gate, up = leaves[1].chunk(2, dim=1)\n"
                 "        down = leaves[2]")
    else:
        split = "gate, up, down = leaves[1], leaves[2], leaves[3]"
    # grads follows leaves: x, the weights, then the routing weights (kept only when asked for).
    returned = "tuple(grads)" if p["route_grad"] else "tuple(grads[:-1])"
    return REFERENCE.format(activation=p["activation"], fused=fused, id_dtype=p["id_dtype"],
                            params=", ".join(inputs), weight_leaves=leaves, split=split,
                            returned=returned)


def definition(p):
    fused = p["fused"]
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
        "hidden_states": tensor(th, "float32", "the forward pass's hidden states"),
        "topk_ids": tensor(tk, p["id_dtype"], "each token's chosen experts"),
        "topk_weights": tensor(tk, "float32", "their routing weights"),
    }
    if fused:
        inputs["w13"] = tensor(["num_experts", "gate_up_size", "hidden_size"], "float32",
                               "gate rows, then up rows, per expert ([out, in])")
    else:
        inputs["w1"] = tensor(eih, "float32", "the gate projections ([out, in])")
        inputs["w3"] = tensor(eih, "float32", "the up projections ([out, in])")
    inputs["w2"] = tensor(["num_experts", "hidden_size", "intermediate_size"], "float32",
                          "the down projections ([out, in])")
    inputs["grad_output"] = tensor(th, "float32", "the gradient of the layer's output")
    outputs = {"grad_hidden_states": tensor(th, "float32", "the hidden states' gradient")}
    for name in (["w13"] if fused else ["w1", "w3"]) + ["w2"]:
        outputs["grad_" + name] = tensor(inputs[name]["shape"], "float32", name + "'s gradient")
    if p["route_grad"]:
        outputs["grad_topk_weights"] = tensor(tk, "float32", "the routing weights' gradient")
    t, k, h, i = "num_tokens", p["top_k"], p["hidden"], p["inter"]
    e = p["experts"]
    description = (
        f"{p['intro']} The experts' backward pass of a mixture-of-experts layer given its "
        f"routing: {e} experts, top-{k}, hidden size {h}, intermediate size {i}, "
        f"{p['activation']}-gated experts ({'fused w13' if fused else 'w1 and w3 apart'}), "
        "float32. The forward pass: per token, out = sum over its experts of weight * "
        "(act(x W_gate^T) * (x W_up^T)) W_down^T; this problem returns the gradients of the "
        "hidden states and of every expert weight"
        + (" and of the routing weights" if p["route_grad"] else "") +
        " for the output gradient grad_output. The reference is PyTorch's autograd through the "
        "eager loop over experts. Token counts " + ", ".join(str(x) for x in p["tokens"]) +
        "; flops count the recomputed forward (two products), the two backward products of "
        "each of the three weights and, with the routing gradient, the down product again.")
    products = 9 if p["route_grad"] else 8
    return {
        "name": p["name"],
        "op_type": "moe_backward",
        "description": description,
        "axes": axes,
        "inputs": inputs,
        "outputs": outputs,
        "reference": reference(p),
        "custom_inputs_entrypoint": "make_inputs",
        "kernelarc": {
            "op_family": "moe_backward",
            "op_params": {"activation": p["activation"]},
            "flops": f"{2 * products} * {t} * {k} * {h} * {i}",
            # x and grad_output read, dx written; ids, weights and their gradient; the weights
            # read and their gradients written.
            "bytes": f"12 * {t} * {h} + 16 * {t} * {k} + 24 * {e} * {h} * {i}",
        },
    }


def problems():
    common = dict(target="cpu", tolerance=TOL_F32, tokens=[1, 7, 64, 300])
    return [
        dict(common, name="moe_backward_swiglu_f32", experts=8, top_k=2, hidden=128, inter=192,
             fused=True, activation="silu", id_dtype="int64", route_grad=True,
             intro="A small Mixtral-style layer's backward."),
        dict(common, name="moe_backward_gelu_tanh_f32", experts=16, top_k=4, hidden=96, inter=64,
             fused=False, activation="gelu_tanh", id_dtype="int32", route_grad=False,
             intro="A small layer with tanh-GELU experts, weights apart and int32 expert ids, "
                   "whose routing weights are not trained."),
    ]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_ROOT
    for p in problems():
        write(root, p["target"], p["name"], definition(p), [{"num_tokens": t} for t in p["tokens"]],
              p["tolerance"])


if __name__ == "__main__":
    main()
