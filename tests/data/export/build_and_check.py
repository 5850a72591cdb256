"""Builds exported solutions as SOL-ExecBench's harness does and checks them against the reference.

usage: build_and_check.py BUILD_ROOT EXPORT_DIR...

Each EXPORT_DIR holds solution.json, definition.json and workload.jsonl as `kernelarc export`
writes them. The sources are written out, the top-level C/C++/CUDA files are built with
torch.utils.cpp_extension.load and the solution's compile options, and `run` is called on random
inputs of the first workloads in the solution's calling style; its outputs must match the
reference's under the workload's tolerance. Exit code 77 (with the reason) when this Python has no
torch or no torch C++ headers, 1 on a mismatch.
"""

import json
import os
import sys
from pathlib import Path

SKIP = 77


def require_torch():
    try:
        import torch  # noqa: F401
        import torch.utils.cpp_extension as cpp_extension
    except Exception as error:  # any import failure means there is nothing to test with
        print(f"SKIP: no torch in {sys.executable}: {error}")
        sys.exit(SKIP)
    if not any((Path(p) / "torch" / "extension.h").exists() for p in cpp_extension.include_paths()):
        print(f"SKIP: torch in {sys.executable} has no C++ headers (torch/extension.h)")
        sys.exit(SKIP)
    return cpp_extension


def build(cpp_extension, export_dir, build_dir):
    solution = json.loads((export_dir / "solution.json").read_text())
    for source in solution["sources"]:
        path = build_dir / source["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source["content"])
    top_level = [str(build_dir / s["path"]) for s in solution["sources"]
                 if "/" not in s["path"] and Path(s["path"]).suffix in (".cu", ".cpp", ".cc", ".cxx", ".c")]
    options = solution["spec"].get("compile_options") or {}
    module = cpp_extension.load(
        name=f"ka_export_{build_dir.name}",
        sources=top_level,
        extra_cflags=options.get("cflags", []),
        extra_cuda_cflags=options.get("cuda_cflags", []),
        extra_ldflags=options.get("ld_flags", []),
        extra_include_paths=[str(build_dir)],
        build_directory=str(build_dir),
    )
    return solution, getattr(module, solution["spec"]["entry_point"].split("::")[1])


def resolve_axes(definition, workload):
    axes = dict(workload["axes"])
    for name, axis in definition["axes"].items():
        if axis.get("type") == "const":
            axes[name] = axis["value"]
    return axes


def make_inputs(torch, definition, workload, axes):
    dtypes = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
              "bfloat16": torch.bfloat16, "int32": torch.int32, "int64": torch.int64}
    inputs = []
    for name, spec in definition["inputs"].items():
        given = workload["inputs"].get(name, {})
        if spec["shape"] is None:
            inputs.append(given.get("value", 0.5))
            continue
        shape = [axes[entry] if entry in axes else int(entry) for entry in spec["shape"]]
        inputs.append(torch.randn(shape, dtype=dtypes[spec["dtype"]]))
    return inputs, dtypes


def check(export_dir, build_dir, cpp_extension):
    import torch

    solution, run = build(cpp_extension, export_dir, build_dir)
    definition = json.loads((export_dir / "definition.json").read_text())
    workloads = [json.loads(line) for line in (export_dir / "workload.jsonl").read_text().splitlines() if line.strip()]
    namespace = {}
    exec(definition["reference"], namespace)
    dps = solution["spec"]["destination_passing_style"]
    torch.manual_seed(0)
    for workload in workloads[:3]:
        axes = resolve_axes(definition, workload)
        inputs, dtypes = make_inputs(torch, definition, workload, axes)
        expected = namespace["run"](*inputs)
        expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
        if dps:
            outputs = [torch.empty([axes[e] if e in axes else int(e) for e in spec["shape"]],
                                   dtype=dtypes[spec["dtype"]])
                       for spec in definition["outputs"].values()]
            assert run(*inputs, *outputs) is None, "a destination-passing run returned a value"
        else:
            result = run(*inputs)
            outputs = list(result) if isinstance(result, (tuple, list)) else [result]
        tolerance = workload.get("tolerance") or {}
        for got, want in zip(outputs, expected, strict=True):
            if not torch.allclose(got, want, atol=tolerance.get("max_atol", 1e-2),
                                  rtol=tolerance.get("max_rtol", 1e-2)):
                print(f"MISMATCH {export_dir} at {axes}: max error {(got - want).abs().max().item()}")
                return False
        print(f"ok {export_dir.name} ({'destination-passing' if dps else 'value-returning'}) at {axes}")
    return True


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    cpp_extension = require_torch()
    build_root = Path(sys.argv[1])
    ok = True
    for index, export_dir in enumerate(sys.argv[2:]):
        build_dir = build_root / f"build{index}_{os.getpid()}"
        build_dir.mkdir(parents=True, exist_ok=True)
        ok &= check(Path(export_dir), build_dir, cpp_extension)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
