"""examples/torch_model/run.py on a GPU: the bundled CUDA RMSNorm and SiLU-and-mul solutions as
torch ops in the model must match eager within the problems' tolerance (and under torch.compile
on torch 2.x). argv[1] is the repository root. Exits 77 (skipped) without torch or a GPU."""

import os
import subprocess
import sys
import tempfile

try:
    import torch
except ImportError:
    print("SKIPPED: this Python has no torch")
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIPPED: no CUDA device")
    sys.exit(77)

root = sys.argv[1] if len(sys.argv) > 1 else os.getcwd()
workspace = tempfile.mkdtemp(prefix="kernelarc_torch_example_")
result = subprocess.run(
    [sys.executable, os.path.join(root, "examples/torch_model/run.py"), "--device", "cuda",
     "--workspace", workspace],
    cwd=root, capture_output=True, text=True)
print(result.stdout)
print(result.stderr, file=sys.stderr)
if result.returncode != 0:
    sys.exit(f"run.py exited with {result.returncode}")
for expected in ("eager: match", "torch.compile: match"):
    if expected not in result.stdout and not (expected.startswith("torch.compile") and
                                              torch.__version__ < "2"):
        sys.exit(f"run.py did not print {expected!r}")
