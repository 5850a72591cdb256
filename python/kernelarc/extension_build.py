"""Builds an exported solution (`kernelarc.export_torch`: a pybind11 torch extension) with
torch.utils.cpp_extension, once per content: the sources go to WORKSPACE/torch_ops/<hash>/src and
the build to .../build, so a second compile_op of the same solution only loads it."""

import hashlib
import json
import pathlib
import sys

import torch

_COMPILED = (".cpp", ".cc", ".cxx", ".c", ".cu")


def content_hash(exported):
    """Of the sources and flags, and of what the build depends on beyond them."""
    key = json.dumps({"solution": exported, "torch": torch.__version__,
                      "python": sys.version_info[:2]}, sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()


def _write_sources(exported, src_dir):
    for source in exported["sources"]:
        path = src_dir / source["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != source["content"]:
            path.write_text(source["content"])
    return [str(src_dir / source["path"]) for source in exported["sources"]
            if source["path"].endswith(_COMPILED)]


def build_extension(exported, workspace):
    """The extension module of `exported` (a solution.json dict with binding "torch")."""
    from torch.utils import cpp_extension

    digest = content_hash(exported)
    root = pathlib.Path(workspace) / "torch_ops" / digest
    src_dir = root / "src"
    build_dir = root / "build"
    build_dir.mkdir(parents=True, exist_ok=True)
    sources = _write_sources(exported, src_dir)
    options = exported.get("spec", {}).get("compile_options") or {}
    # The module name carries the hash: two contents loaded in one process stay two modules.
    return cpp_extension.load(
        name=f"kernelarc_{digest[:16]}",
        sources=sources,
        extra_cflags=list(options.get("cflags") or []),
        extra_cuda_cflags=list(options.get("cuda_cflags") or []),
        extra_ldflags=list(options.get("ld_flags") or []),
        extra_include_paths=[str(src_dir)],
        build_directory=str(build_dir),
        verbose=False,
    ), digest
