"""kernelarc solutions as torch custom ops.

    op = kernelarc.torch.compile_op("latest")        # the run's winner, as kernelarc::<name>
    y = op(x, weight)                                  # inputs -> outputs, like the reference

The solution is exported as a torch extension (kernelarc.export_torch, destination-passing),
built once per content under WORKSPACE/torch_ops, and registered as `kernelarc::<name>`: the op
allocates the outputs (shapes from the definition's axes bound to the input shapes) and calls the
extension's run(inputs..., outputs...). On torch 2.4+ it is a torch.library.custom_op with a fake
implementation, so torch.compile traces through it (fullgraph) and torch.library.opcheck checks
it; on older torch it is a torch.library.Library op with CPU and CUDA kernels.
"""

import inspect
import re

import torch

from . import _kernelarc
from .extension_build import build_extension
from .op_shapes import OpShapes

# name -> (content hash, op): an op name is registered once per process, as torch requires.
_REGISTERED = {}
# torch < 2.4: the one "DEF" library of the namespace, kept alive (its registrations die with it).
_LIBRARY = None


def _has_custom_op():
    """torch.library.custom_op taking a schema string (torch 2.4+)."""
    custom_op = getattr(torch.library, "custom_op", None)
    return custom_op is not None and "schema" in inspect.signature(custom_op).parameters


def _exported(target, workspace, problem):
    """The target's definition and its destination-passing torch extension."""
    if isinstance(target, dict):
        workspace = target.get("workspace", workspace)
        problem = problem or target["problem_dir"]
        target = target["solution_path"] or target["run_id"]
    loaded = _kernelarc.load(target, workspace=workspace, problem=problem)
    exported = _kernelarc.export_torch(target, workspace=workspace, problem=problem)
    return loaded["definition"], exported


def _op_name(name, definition):
    name = name or re.sub(r"\W", "_", definition["name"])
    if not name.isidentifier():
        raise ValueError(f"name={name!r}: expected an identifier (the op is kernelarc::<name>)")
    return name


def _register(op_name, shapes, run):
    def compute(*args):
        args = [arg.contiguous() if isinstance(arg, torch.Tensor) else arg for arg in args]
        outputs = shapes.allocate_outputs(args)
        run(*args, *outputs)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def fake(*args):
        outputs = shapes.allocate_outputs(args)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    if _has_custom_op():
        op = torch.library.custom_op(f"kernelarc::{op_name}", compute, mutates_args=(),
                                     schema=shapes.signature())
        op.register_fake(fake)
        return op
    global _LIBRARY
    if _LIBRARY is None:
        _LIBRARY = torch.library.Library("kernelarc", "DEF")
    _LIBRARY.define(op_name + shapes.signature())
    for dispatch_key in ("CPU", "CUDA"):
        _LIBRARY.impl(op_name, compute, dispatch_key)
    # Meta tensors carry the shapes: what torch 2.0-2.3's tracing runs instead of a fake impl.
    _LIBRARY.impl(op_name, fake, "Meta")
    return getattr(torch.ops.kernelarc, op_name)


def compile_op(target, *, workspace=".kernelarc", problem=None, name=None):
    """The solution `target` (a run id, "latest", a solution path with problem=, or what
    kernelarc.load returned) as the torch op kernelarc::<name> (default: the definition's name);
    returns the op. ValueError when the name is taken by another solution in this process."""
    definition, exported = _exported(target, workspace, problem)
    op_name = _op_name(name, definition)
    extension, digest = build_extension(exported, workspace)
    if op_name in _REGISTERED:
        registered_digest, op = _REGISTERED[op_name]
        if registered_digest != digest:
            raise ValueError(f"kernelarc::{op_name} is already another solution in this process; "
                             f"pass name= to register this one beside it")
        return op
    op = _register(op_name, OpShapes(definition), extension.run)
    _REGISTERED[op_name] = (digest, op)
    return op
