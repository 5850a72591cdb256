#!/usr/bin/env python3
"""A copy of a problem whose baseline code runs under one SDPA backend, so that `kernelarc
templates try` or `bench` on the copy times e.g. FlashAttention itself with the oracle's
protocol. torch's default dispatch may pick another backend (on torch 2.11 and an H100, cuDNN's
attention for the prefill and decode problems: the baseline note names the kernels it ran), while
a goal or a paper may name one ("0.9x SDPA-flash").

Usage: scripts/pin-sdpa-backend.py PROBLEM_DIR OUT_DIR BACKEND
  BACKEND: a torch.nn.attention.SDPBackend name (FLASH_ATTENTION, EFFICIENT_ATTENTION,
           CUDNN_ATTENTION, MATH)."""
import json
import shutil
import sys

BACKENDS = ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH")


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in BACKENDS:
        sys.exit(__doc__)
    source, out, backend = sys.argv[1:]
    shutil.copytree(source, out, dirs_exist_ok=True)
    path = f"{out}/definition.json"
    with open(path) as file:
        definition = json.load(file)
    ext = definition.get("kernelarc", {})
    code = ext.get("baseline")
    if code is None or "def run(" not in code:
        sys.exit(f"{path}: kernelarc.baseline: expected Python code defining run(...)")
    ext["baseline"] = code.replace("def run(", "def _run_default(", 1) + f'''

from torch.nn.attention import SDPBackend, sdpa_kernel


@torch.no_grad()
def run(*args):
    with sdpa_kernel(SDPBackend.{backend}):
        return _run_default(*args)
'''
    with open(path, "w") as file:
        json.dump(definition, file, indent=2)
    print(f"{out}: the baseline of {definition['name']} runs under SDPBackend.{backend}")


if __name__ == "__main__":
    main()
