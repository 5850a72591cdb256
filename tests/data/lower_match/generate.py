"""Regenerates the op graphs of tests/lower/family_match_test.cpp: each case directory holds a
definition.json (as a user writes it: no kernelarc annotation) and graph.json, the op graph that
python/kernelarc_trace.py records for its reference.

Usage (from the repository root, with a Python that has torch):
  /usr/bin/python3 tests/data/lower_match/generate.py [SOL-ExecBench git dir] [CASE ...]
Cases taken from SOL-ExecBench's examples need its repository (a bare git dir is enough); the
default is /work/.mirror/NVIDIA+SOL-ExecBench/repo. Without it, their definitions already here
are traced again. Named cases alone are regenerated; by default, every case.
"""

import copy
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
TRACER = os.path.join(ROOT, "python", "kernelarc_trace.py")
PRIMES = [[17, 19, 23, 29, 31, 37], [41, 43, 47, 53, 59, 61]]


def header(inputs):
    return "import torch\nimport torch.nn.functional as F\n\n\n@torch.no_grad()\ndef run(%s):\n" % (
        ", ".join(inputs))


def problem(name):
    with open(os.path.join(ROOT, "problems", name, "definition.json")) as file:
        definition = json.load(file)
    definition.pop("kernelarc", None)
    return definition


def sol_example(repo, name):
    text = subprocess.run(["git", "-C", repo, "show", f"HEAD:examples/{name}/definition.json"],
                          check=True, capture_output=True, text=True).stdout
    return json.loads(text)


def with_reference(definition, body):
    changed = copy.deepcopy(definition)
    changed["reference"] = header(list(changed["inputs"])) + body
    return changed


def rows(dtype, width="hidden_size", extra=None, outputs=None):
    """A definition over [batch_size, width] rows with hidden_size = 4096."""
    definition = {
        "name": "case", "op_type": "case",
        "axes": {"batch_size": {"type": "var"}, "hidden_size": {"type": "const", "value": 4096}},
        "inputs": {"x": {"shape": ["batch_size", width], "dtype": dtype}},
        "outputs": outputs or {"output": {"shape": ["batch_size", width], "dtype": dtype}},
        "reference": ""}
    definition["inputs"].update(extra or {})
    return definition


def cases(repo):
    per_row = {"output": {"shape": ["batch_size"], "dtype": "float32"}}
    column = {"shape": ["hidden_size"], "dtype": "bfloat16"}
    conv = {
        "name": "conv", "op_type": "conv",
        "axes": {"n": {"type": "var"}, "c": {"type": "const", "value": 8},
                 "h": {"type": "const", "value": 16}, "o": {"type": "const", "value": 4},
                 "k": {"type": "const", "value": 3}, "ho": {"type": "const", "value": 14}},
        "inputs": {"x": {"shape": ["n", "c", "h", "h"], "dtype": "float32"},
                   "weight": {"shape": ["o", "c", "k", "k"], "dtype": "float32"}},
        "outputs": {"output": {"shape": ["n", "o", "ho", "ho"], "dtype": "float32"}},
        "reference": header(["x", "weight"]) + "    return F.conv2d(x, weight)\n"}
    middle = {
        "name": "middle_sum", "op_type": "reduce",
        "axes": {"batch": {"type": "var"}, "rows": {"type": "var"},
                 "cols": {"type": "const", "value": 64}},
        "inputs": {"x": {"shape": ["batch", "rows", "cols"], "dtype": "float32"}},
        "outputs": {"output": {"shape": ["batch", "cols"], "dtype": "float32"}},
        "reference": header(["x"]) + "    return x.sum(dim=1)\n"}
    def linear(name, body="    return F.linear(x, weight, bias)\n"):
        return {
            "name": name, "op_type": "gemm",
            "axes": {"M": {"type": "var"}, "N": {"type": "const", "value": 256},
                     "K": {"type": "const", "value": 128}},
            "inputs": {"x": {"shape": ["M", "K"], "dtype": "bfloat16"},
                       "weight": {"shape": ["N", "K"], "dtype": "bfloat16"},
                       "bias": {"shape": ["N"], "dtype": "bfloat16"}},
            "outputs": {"output": {"shape": ["M", "N"], "dtype": "bfloat16"}},
            "reference": header(["x", "weight", "bias"]) + body}
    # A square weight (an attention output projection): K and N are one axis name.
    linear_square = {
        "name": "linear_square", "op_type": "gemm",
        "axes": {"T": {"type": "var"}, "H": {"type": "const", "value": 64}},
        "inputs": {"x": {"shape": ["T", "H"], "dtype": "float32"},
                   "w": {"shape": ["H", "H"], "dtype": "float32"}},
        "outputs": {"y": {"shape": ["T", "H"], "dtype": "float32"}},
        "reference": header(["x", "w"]) + "    return F.linear(x, w)\n"}
    # A GeGLU MLP whose weights' names say nothing: the up projection is listed first.
    mlp_unnamed = {
        "name": "mlp_unnamed", "op_type": "ffn",
        "axes": {"T": {"type": "var"}, "H": {"type": "const", "value": 64},
                 "F": {"type": "const", "value": 96}},
        "inputs": {"x": {"shape": ["T", "H"], "dtype": "float32"},
                   "p": {"shape": ["F", "H"], "dtype": "float32"},
                   "q": {"shape": ["F", "H"], "dtype": "float32"},
                   "r": {"shape": ["H", "F"], "dtype": "float32"}},
        "outputs": {"y": {"shape": ["T", "H"], "dtype": "float32"}},
        "reference": header(["x", "p", "q", "r"]) +
        "    return (x @ p.t() * F.gelu(x @ q.t(), approximate='tanh')) @ r.t()\n"}
    return {
        "mlp_swiglu": problem("cuda/swiglu_mlp_bf16_h4096_i14336"),
        "mlp_unnamed": mlp_unnamed,
        "rmsnorm": sol_example(repo, "cuda_cpp/rmsnorm") if repo else None,
        "fused_add_rmsnorm": problem("cuda/fused_add_rmsnorm_bf16"),
        "rmsnorm_square_div": with_reference(
            rows("bfloat16", extra={"weight": column}),
            "    xf = x.float()\n"
            "    y = xf / torch.sqrt(torch.square(xf).mean(-1, keepdim=True) + 1e-6)\n"
            "    return weight * y.to(x.dtype)\n"),
        "softmax": sol_example(repo, "cudnn/softmax") if repo else None,
        "softmax_manual": with_reference(
            rows("float32"),
            "    e = torch.exp(x - x.amax(dim=-1, keepdim=True))\n"
            "    return e / e.sum(dim=-1, keepdim=True)\n"),
        "layernorm": problem("cuda/layernorm_bf16"),
        "layernorm_manual": with_reference(
            rows("float32", extra={"weight": {"shape": ["hidden_size"], "dtype": "float32"},
                                   "bias": {"shape": ["hidden_size"], "dtype": "float32"}}),
            "    mean = x.mean(-1, keepdim=True)\n"
            "    var = x.var(-1, keepdim=True, unbiased=False)\n"
            "    return (x - mean) / torch.sqrt(var + 1e-5) * weight + bias\n"),
        "row_sum": problem("cuda/row_sum_bf16_h8192"),
        "row_mean": with_reference(rows("bfloat16", outputs=per_row),
                                   "    return x.float().mean(dim=-1)\n"),
        "row_max": with_reference(rows("float32", outputs=per_row),
                                  "    return x.max(dim=-1).values\n"),
        "silu_and_mul": problem("cuda/silu_and_mul_bf16"),
        "gelu": problem("cuda/gelu_tanh_bf16_i14336"),
        "gemm_mm": sol_example(repo, "cutlass/gemm") if repo else None,
        "gemm_linear_bias": linear("linear_bias"),
        "gemm_scale_leaky_relu": linear(
            "linear_scale_leaky",
            "    return F.leaky_relu(F.linear(x, weight, bias) * 2.0, 0.1)\n"),
        # KernelBench's Matmul_Mish_Mish.
        "gemm_mish_mish": linear(
            "linear_mish_mish", "    return F.mish(F.mish(F.linear(x, weight, bias)))\n"),
        # torch.where over the product, one side a softplus of its own beta and threshold.
        "gemm_where_softplus": linear(
            "linear_where_softplus",
            "    y = F.linear(x, weight, bias)\n"
            "    return torch.where(y < 0, F.softplus(y, 2.0, 10.0), 0.5 * y)\n"),
        "gemm_bias_gelu": problem("cuda/gemm_bias_gelu_bf16_n14336_k4096"),
        "gemm_square": linear_square,
        "olmo3_post_norm": sol_example(repo, "triton/olmo3_post_norm") if repo else None,
        "nemotron_rms_norm": sol_example(repo, "triton/nemotron_rms_norm") if repo else None,
        "middle_sum": middle,
        "conv": conv,
        "piecewise_activations": with_reference(
            rows("float32"),
            "    y = F.hardswish(F.elu(x, 0.5)) + F.hardtanh(x, -2.0, 3.0)\n"
            "    return F.relu6(F.leaky_relu(y, 1.5)) + F.hardsigmoid(F.selu(x))\n"),
        "select_activations": with_reference(
            rows("float32"),
            "    y = F.softplus(x) + F.mish(x) * F.threshold(x, -1.0, 2.0)\n"
            "    z = F.hardshrink(y, 0.25) + x * (x != 1.0) - (x >= y).float()\n"
            "    return z.masked_fill(x < -3.0, 0.5)\n"),
        "where_mask_input": with_reference(
            rows("float32", extra={"mask": {"shape": ["batch_size", "hidden_size"],
                                            "dtype": "bool"}}),
            "    return torch.where(mask, x, 0.5 * x)\n"),
        # True + True is True: the sum is logic, not 2.
        "boolean_arithmetic": with_reference(
            rows("float32"), "    return x * ((x > 0.0) + (x > 1.0))\n"),
        "in_place_write": with_reference(
            rows("float32"),
            "    y = x.clone()\n"
            "    y[:, 0] = 1.0\n"
            "    return y * 2\n"),
    }


def job_for(definition):
    axes = {}
    for name, axis in definition["axes"].items():
        if axis["type"] == "const":
            axes[name] = {"kind": "const", "value": axis["value"]}
        elif axis["type"] == "expr":
            axes[name] = {"kind": "expr", "expression": axis["expression"]}
        else:
            axes[name] = {"kind": "var"}
    traces = []
    for primes in PRIMES:
        values, var_index = {}, 0
        for name, axis in axes.items():
            if axis["kind"] == "const":
                values[name] = axis["value"]
            elif axis["kind"] == "var":
                values[name] = primes[var_index]
                var_index += 1
        for name, axis in axes.items():
            if axis["kind"] == "expr":
                values[name] = eval(axis["expression"], {}, dict(values))
        traces.append(values)
    inputs = {name: {"shape": spec["shape"], "dtype": spec["dtype"], "description": ""}
              for name, spec in definition["inputs"].items()}
    outputs = {name: {"shape": spec["shape"], "dtype": spec["dtype"], "description": ""}
               for name, spec in definition["outputs"].items()}
    job_definition = {"name": definition["name"], "op_type": definition.get("op_type", ""),
                      "inputs": inputs, "outputs": outputs, "reference": definition["reference"],
                      "baseline": "", "custom_inputs_entrypoint": None}
    return {"definition": job_definition, "axes": axes, "traces": traces, "scalars": {}}


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror/NVIDIA+SOL-ExecBench/repo"
    repo = repo if os.path.isdir(repo) else None
    chosen = cases(repo)
    named = sys.argv[2:]
    unknown = [name for name in named if name not in chosen]
    if unknown:
        sys.exit(f"unknown cases: {', '.join(unknown)} (known: {', '.join(chosen)})")
    for name, definition in chosen.items():
        if named and name not in named:
            continue
        directory = os.path.join(HERE, name)
        if definition is None:
            with open(os.path.join(directory, "definition.json")) as file:
                definition = json.load(file)
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "definition.json"), "w") as file:
            json.dump(definition, file, indent=2)
            file.write("\n")
        with tempfile.TemporaryDirectory() as scratch:
            job_path = os.path.join(scratch, "job.json")
            out_path = os.path.join(scratch, "out.json")
            with open(job_path, "w") as file:
                json.dump(job_for(definition), file)
            subprocess.run([sys.executable, TRACER, job_path, out_path], check=True)
            with open(out_path) as file:
                result = json.load(file)
        if not result["ok"]:
            sys.exit(f"{name}: the tracer failed: {result['error']}")
        with open(os.path.join(directory, "graph.json"), "w") as file:
            json.dump(result["graph"], file, indent=1)
            file.write("\n")
        print(f"{name}: {len(result['graph']['nodes'])} nodes")


if __name__ == "__main__":
    main()
