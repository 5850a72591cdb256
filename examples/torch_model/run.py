"""The MLP block of model.py with its RMSNorm and SiLU-and-mul replaced by kernelarc solutions
as torch ops (kernelarc.torch.compile_op), checked against eager PyTorch within the problems'
tolerance; on torch 2.x under torch.compile too, with torch.library.opcheck on the ops (2.4+).

    PYTHONPATH=build/python python3 examples/torch_model/run.py [--device cpu|cuda]
        [--rmsnorm TARGET] [--swiglu TARGET] [--workspace W]

A TARGET is a run id or "latest" of the workspace, or a solution path inside a problem
directory. The model's sizes and eps are the problems' (their const axes and op_params)."""

import argparse
import json
import os
import pathlib

import torch

import kernelarc
import kernelarc.torch
from model import MLPBlock

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEFAULTS = {
    "cpu": ("problems/cpu/rmsnorm_f32/solutions/optimized",
            "problems/cpu/silu_and_mul_f32/solutions/naive", torch.float32),
    "cuda": ("problems/cuda/rmsnorm_bf16/solutions/basic",
             "problems/cuda/silu_and_mul_bf16/solutions/basic", torch.bfloat16),
}
TOKENS = 16
DEFAULT_HIDDEN, DEFAULT_INTERMEDIATE = 1024, 2816  # where the definition leaves them var


def problem_of(target):
    """The problem directory above a solution path; None for a run id (the run knows it)."""
    path = pathlib.Path(target).resolve()
    if not path.exists():
        return None
    for parent in path.parents:
        if (parent / "definition.json").is_file():
            return str(parent)
    raise SystemExit(f"{target}: no definition.json above this solution path")


def tolerance(problem_dir):
    """The first workload's (atol, rtol, matched ratio), SOL-ExecBench's defaults otherwise."""
    with open(os.path.join(problem_dir, "workload.jsonl")) as lines:
        first = json.loads(lines.readline())
    first = first.get("workload", first)
    given = first.get("tolerance") or {}
    return (given.get("max_atol", 1e-2), given.get("max_rtol", 1e-2),
            given.get("required_matched_ratio", 0.99))


def const_axis(definition, name, default):
    axis = definition["axes"].get(name, {})
    return axis["value"] if axis.get("type") == "const" else default


def compare(label, actual, expected, limits):
    atol, rtol, ratio = limits
    error = (actual.float() - expected.float()).abs()
    relative = (error / expected.float().abs().clamp_min(1e-6)).max().item()
    matched = (error <= atol + rtol * expected.float().abs()).float().mean().item()
    verdict = "match" if matched >= ratio else "MISMATCH"
    print(f"{label}: {verdict} (max abs err {error.max().item():.3e}, max rel err "
          f"{relative:.3e}, {matched:.4f} of elements within atol {atol:g} + rtol {rtol:g})")
    return matched >= ratio


def load_op(target, workspace):
    problem = problem_of(target)
    loaded = kernelarc.load(target, workspace=workspace, problem=problem)
    op = kernelarc.torch.compile_op(loaded, workspace=workspace)
    return op, loaded


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--rmsnorm", help="RMSNorm solution: run id, latest or solution path")
    parser.add_argument("--swiglu", help="SiLU-and-mul solution: run id, latest or path")
    parser.add_argument("--workspace", default=".kernelarc")
    args = parser.parse_args()
    os.chdir(ROOT)  # the default targets are relative to the repository
    rms_default, swiglu_default, dtype = DEFAULTS[args.device]

    rms_op, rms = load_op(args.rmsnorm or rms_default, args.workspace)
    swiglu_op, swiglu = load_op(args.swiglu or swiglu_default, args.workspace)
    hidden = const_axis(rms["definition"], "hidden_size", DEFAULT_HIDDEN)
    intermediate = const_axis(swiglu["definition"], "intermediate_size", DEFAULT_INTERMEDIATE)
    eps = rms["definition"].get("kernelarc", {}).get("op_params", {}).get("eps", 1e-6)
    print(f"model: {TOKENS} tokens, hidden {hidden}, intermediate {intermediate}, eps {eps:g}, "
          f"{dtype} on {args.device}; ops {rms_op} ({rms['solution']['name']}) and {swiglu_op} "
          f"({swiglu['solution']['name']})")

    torch.manual_seed(0)
    model = MLPBlock(hidden, intermediate, eps).to(args.device, dtype)
    x = torch.randn(TOKENS, hidden, device=args.device, dtype=dtype)
    rms_limits = tolerance(rms["problem_dir"])
    swiglu_limits = tolerance(swiglu["problem_dir"])
    with torch.no_grad():
        eager = model(x)
        normed = model.norm(x, model.norm_weight)
        gate_up = model.gate_up(normed)
        ok = compare("rmsnorm op", rms_op(x, model.norm_weight), normed, rms_limits)
        ok &= compare("silu_and_mul op", swiglu_op(gate_up), model.activation(gate_up),
                      swiglu_limits)
        model.norm, model.activation = rms_op, swiglu_op
        # The block's own tolerance: the looser of its two problems'.
        block_limits = tuple(max(a, b) for a, b in zip(rms_limits, swiglu_limits))
        block_limits = block_limits[:2] + (min(rms_limits[2], swiglu_limits[2]),)
        ok &= compare("eager", model(x), eager, block_limits)
        if int(torch.__version__.split(".")[0]) >= 2:
            compiled = torch.compile(model, fullgraph=True)
            ok &= compare("torch.compile", compiled(x), eager, block_limits)
        else:
            print(f"torch.compile: not run (torch {torch.__version__} has none)")
    if hasattr(torch.library, "opcheck"):
        torch.library.opcheck(rms_op, (x, model.norm_weight.detach()))
        torch.library.opcheck(swiglu_op, (gate_up,))
        print("opcheck: passed for both ops")
    else:
        print(f"opcheck: not run (torch {torch.__version__} has no torch.library.opcheck)")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
