"""Builds a solution written as a PyTorch extension (`binding: torch`, the form of SOL-ExecBench's
and FlashInfer-Bench's C++/CUDA solutions) for kernelarc's guard.

    kernelarc_torch_build.py describe         prints this interpreter's facts as JSON
    kernelarc_torch_build.py build JOB.json   builds the extension the job names

torch.utils.cpp_extension chooses the flags its headers need for the installed torch version
(C++ standard, ABI, pybind11 identity, nvcc's half-precision macros), so kernelarc leaves the
build to it instead of restating them.
"""

import glob
import json
import os
import sys
import sysconfig


def describe():
    import torch

    libdir = sysconfig.get_config_var("LIBDIR") or ""
    names = [sysconfig.get_config_var(key) for key in ("INSTSONAME", "LDLIBRARY")]
    shared = [os.path.join(libdir, name) for name in names if name and ".so" in name]
    libpython = next((path for path in shared if os.path.exists(path)), "")
    return {
        "executable": sys.executable,
        "python": "%d.%d.%d" % sys.version_info[:3],
        "include": sysconfig.get_paths()["include"],
        "libpython": libpython,
        "libpython_tried": shared,
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda or "",
    }


def build(job_path):
    import torch.utils.cpp_extension as extension

    with open(job_path) as file:
        job = json.load(file)
    directory = job["directory"]
    extension.load(
        name=job["module"],
        sources=[os.path.join(directory, path) for path in job["sources"]],
        extra_cflags=job["cflags"],
        extra_cuda_cflags=job["cuda_cflags"],
        extra_ldflags=job["ldflags"],
        extra_include_paths=[directory],
        build_directory=directory,
        with_cuda=job["cuda"],
        verbose=True,
    )
    built = [path for path in glob.glob(os.path.join(directory, job["module"] + "*.so"))]
    if not built:
        sys.exit("torch.utils.cpp_extension produced no %s*.so in %s" % (job["module"], directory))
    os.replace(built[0], os.path.join(directory, job["library"]))


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "describe":
        print(json.dumps(describe()))
    elif len(sys.argv) == 3 and sys.argv[1] == "build":
        build(sys.argv[2])
    else:
        sys.exit("usage: kernelarc_torch_build.py describe | build JOB.json")
