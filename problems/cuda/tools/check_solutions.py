#!/usr/bin/env python3
"""Checks the built-in CUDA problems' solutions on a GPU, outside kernelarc.

For every problem directory under problems/cuda (or those named), this builds each solution's
sources with nvcc into a shared library, calls its ka_run through ctypes on PyTorch CUDA tensors,
and compares the outputs with the definition's reference under each workload's tolerance
(SOL-ExecBench's rule: |out - ref| <= atol + rtol * |ref| over a matched ratio; NaN or Inf
fails). Inputs come from kernelarc's oracle script (python/kernelarc_oracle.py), so the name
heuristics are the guard's. Outputs are poisoned with NaN before each call, and inputs must be
unchanged after it. With --time it also prints event-timed medians of the solution and of the
reference, with the bandwidth and FLOP rate that the definition's byte and FLOP counts imply.

A developer's tool for when a problem or a basic solution changes; the guard is the real judge.

    python3 problems/cuda/tools/check_solutions.py [--time] [--draws N] [problem_dir ...]
"""

import argparse
import ctypes
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
KA_DTYPES = {torch.float64: 0, torch.float32: 1, torch.float16: 2, torch.bfloat16: 3,
             torch.int8: 6, torch.int16: 7, torch.int32: 8, torch.int64: 9, torch.uint8: 10,
             torch.bool: 11}


class KaTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int),
                ("shape", ctypes.c_int64 * 8), ("stride", ctypes.c_int64 * 8)]


def ka_tensor(tensor):
    t = KaTensor()
    t.data = tensor.data_ptr()
    t.dtype = KA_DTYPES[tensor.dtype]
    t.ndim = tensor.dim()
    for d in range(tensor.dim()):
        t.shape[d] = tensor.shape[d]
        t.stride[d] = tensor.stride(d)
    return t


def load_oracle():
    spec = importlib.util.spec_from_file_location(
        "kernelarc_oracle", os.path.join(ROOT, "python", "kernelarc_oracle.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def resolve_axes(definition, workload):
    axes = dict(workload["axes"])
    pending = {}
    for name, axis in definition["axes"].items():
        if axis["type"] == "const":
            axes[name] = axis["value"]
        elif axis["type"] == "expr":
            pending[name] = axis["expression"]
    while pending:  # expr axes may depend on each other; the definition has no cycles
        for name, expression in list(pending.items()):
            try:
                axes[name] = eval(expression, {"__builtins__": {}}, dict(axes))
                del pending[name]
            except NameError:
                continue
    return axes


def make_inputs(oracle, definition, axes, generator_seed):
    torch.manual_seed(generator_seed)
    inputs = []
    for name, spec in definition["inputs"].items():
        shape = [axes[a] for a in spec["shape"]]
        dtype = getattr(torch, spec["dtype"])
        pattern = oracle.heuristic_pattern(name, shape, spec.get("description", ""))
        if pattern is not None and dtype.is_floating_point:
            inputs.append(oracle.heuristic_tensor(torch, pattern, shape, dtype, "cuda"))
        else:
            inputs.append(oracle.random_tensor(torch, shape, dtype, "cuda"))
    return inputs


def build(solution_dir, solution, build_dir):
    major, minor = torch.cuda.get_device_capability()
    arch = f"{major}{minor}" + ("a" if major == 9 else "")
    options = solution["spec"].get("compile_options", {})
    sources = [os.path.join(solution_dir, s["path"]) for s in solution["sources"]
               if s["path"].endswith((".cu", ".cpp", ".cc", ".cxx"))]
    library = os.path.join(build_dir, solution["name"] + ".so")
    command = (["nvcc", "-shared", "-Xcompiler", "-fPIC", "-O3", "-std=c++17",
                f"-gencode=arch=compute_{arch},code=sm_{arch}",
                "-I" + os.path.join(ROOT, "include")]
               + options.get("cuda_cflags", []) + sources + ["-o", library]
               + options.get("ld_flags", []))
    subprocess.run(command, check=True)
    return ctypes.CDLL(library)


def compare(output, expected, tolerance):
    atol = tolerance.get("max_atol", 1e-2)
    rtol = tolerance.get("max_rtol", 1e-2)
    ratio = tolerance.get("required_matched_ratio", 0.99)
    out = output.float()
    ref = expected.float()
    if not torch.isfinite(out).all():
        return False, float("nan"), 0.0
    error = (out - ref).abs()
    matched = 1.0 - (error > atol + rtol * ref.abs()).float().mean().item()
    return matched >= ratio, error.max().item(), matched


def median_ms(function, repetitions=20):
    flush = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
    for _ in range(3):
        function()
    times = []
    for _ in range(repetitions):
        flush.zero_()
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        function()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


def timing_text(call, reference_call, extension, axes):
    """Medians of the solution and the reference, with the rates the definition's counts imply."""
    ms = median_ms(call)
    reference_ms = median_ms(reference_call)
    text = f" | {ms * 1e3:9.1f} us (ref {reference_ms * 1e3:9.1f} us)"
    seconds = ms * 1e-3
    if extension.get("bytes"):
        unique_bytes = eval(extension["bytes"], {"__builtins__": {}}, dict(axes))
        text += f" {unique_bytes / seconds / 1e9:7.0f} GB/s"
    if extension.get("op_family") == "gemm" and extension.get("flops"):
        flops = eval(extension["flops"], {"__builtins__": {}}, dict(axes))
        text += f" {flops / seconds / 1e12:6.1f} TFLOP/s"
    return text


def check_problem(oracle, problem_dir, args, build_dir):
    definition = json.load(open(os.path.join(problem_dir, "definition.json")))
    namespace = {}
    exec(compile(definition["reference"], "<reference>", "exec"), namespace)
    reference = namespace["run"]
    workloads = [json.loads(line) for line in open(os.path.join(problem_dir, "workload.jsonl"))
                 if line.strip()]
    extension = definition.get("kernelarc", {})
    failures = 0
    solutions_dir = os.path.join(problem_dir, "solutions")
    for solution_name in sorted(os.listdir(solutions_dir)):
        solution_dir = os.path.join(solutions_dir, solution_name)
        solution = json.load(open(os.path.join(solution_dir, "solution.json")))
        library = build(solution_dir, solution, build_dir)
        symbol = solution["spec"]["entry_point"].split("::")[1]
        run = getattr(library, symbol)
        run.restype = ctypes.c_int
        last_error = getattr(library, "ka_last_error", None)
        if last_error is not None:
            last_error.restype = ctypes.c_char_p
        workspace_bytes = int(solution.get("kernelarc", {}).get("workspace_bytes", 0))
        workspace = torch.empty(max(workspace_bytes, 1), dtype=torch.uint8, device="cuda")
        stream = torch.cuda.current_stream().cuda_stream
        for workload in workloads:
            axes = resolve_axes(definition, workload)
            label = f"{definition['name']} [{solution_name}] {workload['axes']}"
            for draw in range(args.draws):
                inputs = make_inputs(oracle, definition, axes, 1000 * draw + len(label))
                expected = reference(*inputs)
                expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
                outputs = []
                for name, spec in definition["outputs"].items():
                    shape = [axes[a] for a in spec["shape"]]
                    dtype = getattr(torch, spec["dtype"])
                    outputs.append(torch.full(shape, float("nan"), dtype=dtype, device="cuda"))
                before = [t.clone() for t in inputs]
                in_array = (KaTensor * len(inputs))(*[ka_tensor(t) for t in inputs])
                out_array = (KaTensor * len(outputs))(*[ka_tensor(t) for t in outputs])
                call = lambda: run(in_array, len(inputs), out_array, len(outputs),
                                   ctypes.c_void_p(stream), ctypes.c_void_p(workspace.data_ptr()),
                                   ctypes.c_size_t(workspace_bytes))
                code = call()
                torch.cuda.synchronize()
                if code != 0:
                    message = last_error().decode() if last_error is not None else ""
                    print(f"FAIL {label}: ka_run returned {code}: {message}")
                    failures += 1
                    break
                tolerance = workload.get("tolerance", {})
                verdicts = [compare(o, e, tolerance) for o, e in zip(outputs, expected)]
                unchanged = all(torch.equal(a, b) for a, b in zip(before, inputs))
                ok = all(v[0] for v in verdicts) and unchanged
                failures += not ok
                if not ok or draw == 0:
                    errors = ", ".join(f"max|err| {v[1]:.3g} matched {v[2]:.4f}" for v in verdicts)
                    timing = ""
                    if args.time and ok:
                        timing = timing_text(call, lambda: reference(*inputs), extension, axes)
                    state = "ok  " if ok else "FAIL"
                    changed = "" if unchanged else " INPUTS CHANGED"
                    print(f"{state} {label}: {errors}{changed}{timing}", flush=True)
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="*",
                        help="problem directories (default: all under problems/cuda with solutions)")
    parser.add_argument("--draws", type=int, default=2, help="fresh input draws per workload")
    parser.add_argument("--time", action="store_true", help="also time solution and reference")
    args = parser.parse_args()
    suite = os.path.join(ROOT, "problems", "cuda")
    problems = args.problems or sorted(
        os.path.join(suite, d) for d in os.listdir(suite)
        if os.path.isdir(os.path.join(suite, d, "solutions")))
    oracle = load_oracle()
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    failures = 0
    with tempfile.TemporaryDirectory() as build_dir:
        for problem in problems:
            failures += check_problem(oracle, problem, args, build_dir)
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
