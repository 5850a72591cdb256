"""kernelarc import kernelbench: turns a KernelBench problem file into a kernelarc problem.

Usage: kernelarc_import_kernelbench.py FILE.py OUT_DIR RESULT.json

A KernelBench file defines `class Model(nn.Module)`, `get_inputs()` and usually
`get_init_inputs()` (taken as no arguments when absent). This script runs the file once under a
fixed seed to learn the shapes and dtypes of the inputs and outputs, then writes
OUT_DIR/<name>/definition.json and workload.jsonl, and RESULT.json ({"problem_dir", "name"}) for
the parent (src/cli/import_command.cpp), which loads the problem to prove it valid.

Every axis is const, named after the module-level integer constant of the same value when
exactly one has it (M, K, N, batch_size...), else d<value>. The reference embeds the file's
source, so the problem does not depend on the file staying where it was. The model stays in
training mode, as KernelBench runs it.

Exit codes: 0 written, 2 the file is not a usable KernelBench problem (the message says why),
3 torch cannot be imported.
"""

import inspect
import json
import os
import re
import sys
import traceback
import types
import uuid

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kernelarc_oracle_inputs import heuristic_pattern
from kernelarc_oracle_tensors import DTYPES, write_atomically

EXIT_BAD_FILE = 2
EXIT_NO_TORCH = 3
SEED = 42
TOLERANCE = {"max_atol": 1e-2, "max_rtol": 1e-2}  # KernelBench's own atol = rtol = 1e-2
# Names the reference defines at module level; an input must not shadow them.
REFERENCE_GLOBALS = {"torch", "KERNELBENCH_SOURCE", "SEED", "_models", "_model"}


class BadFile(Exception):
    pass


def problem_name(path):
    stem = os.path.splitext(os.path.basename(path))[0]
    name = re.sub(r"[^0-9a-z]+", "_", stem.lower()).strip("_")
    # KernelBench files are numbered ("19_ReLU.py"); a name must not start with a digit.
    return "kb_" + name if not name or name[0].isdigit() else name


def load_module(torch, path):
    try:
        with open(path, encoding="utf-8") as file:
            source = file.read()
    except OSError as error:
        raise BadFile(f"cannot read it: {error.strerror}")
    module = types.ModuleType("kernelbench_problem")
    module.__file__ = path
    torch.manual_seed(SEED)
    try:
        exec(compile(source, path, "exec"), module.__dict__)
    except Exception:
        raise BadFile("running it failed:\n" + traceback.format_exc(limit=-3))
    if not inspect.isclass(getattr(module, "Model", None)):
        raise BadFile("it defines no class Model (the module to import)")
    if not callable(getattr(module, "get_inputs", None)):
        raise BadFile("it defines no function get_inputs() (the forward arguments)")
    return source, module


def call(what, function, *args):
    try:
        return function(*args)
    except Exception as error:
        # The traceback starts below this frame, in the file's own code.
        lines = traceback.format_exception(type(error), error, error.__traceback__.tb_next, limit=-3)
        raise BadFile(f"{what} failed:\n" + "".join(lines))


def dtype_name(torch, dtype, what):
    for name, (attribute, _) in DTYPES.items():
        if getattr(torch, attribute, None) == dtype:
            return name
    raise BadFile(f"{what} has dtype {dtype}, which kernelarc does not support "
                  f"(supported: {', '.join(DTYPES)})")


def scalar_dtype(value, what):
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    raise BadFile(f"{what} is a {type(value).__name__}; expected a tensor, int, float or bool")


def forward_names(model, count):
    """The names of forward's first `count` positional parameters, input<i> past them."""
    names = []
    try:
        parameters = inspect.signature(model.forward).parameters.values()
        names = [p.name for p in parameters
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        pass
    return [names[i] if i < len(names) else f"input{i}" for i in range(count)]


class AxisNamer:
    """One const axis per distinct size, named after the module constant that holds it."""

    def __init__(self, module, reserved):
        by_value = {}
        for name, value in vars(module).items():
            if (type(value) is int and value >= 0 and re.fullmatch(r"[A-Za-z]\w*", name)
                    and name not in reserved):
                by_value.setdefault(value, []).append(name)
        self.constants = {value: names[0] for value, names in by_value.items() if len(names) == 1}
        self.reserved = set(reserved)
        self.axes = {}

    def name(self, size):
        for name, value in self.axes.items():
            if value == size:
                return name
        name = self.constants.get(size, f"d{size}")
        while name in self.reserved or name in self.axes:
            name += "_"
        self.axes[name] = size
        return name


def as_outputs(torch, result):
    outputs = list(result) if isinstance(result, (tuple, list)) else [result]
    if not outputs or not all(isinstance(o, torch.Tensor) for o in outputs):
        kinds = ", ".join(type(o).__name__ for o in outputs) or "nothing"
        raise BadFile(f"Model.forward returned {kinds}; expected a tensor or a tuple of tensors")
    return outputs


def reference_source(source, path, names):
    params = ", ".join(names)
    return (
        "import torch\n\n"
        f"# The KernelBench file {os.path.basename(path)}, run as a module by _model().\n"
        f"KERNELBENCH_SOURCE = {source!r}\n"
        f"SEED = {SEED}\n"
        "_models = {}\n\n\n"
        "def _model(device):\n"
        "    \"\"\"Model(*get_init_inputs()) built once per device, its weights drawn under SEED.\"\"\"\n"
        "    if device not in _models:\n"
        "        namespace = {\"__name__\": \"kernelbench_problem\"}\n"
        f"        exec(compile(KERNELBENCH_SOURCE, {os.path.basename(path)!r}, \"exec\"), namespace)\n"
        "        torch.manual_seed(SEED)\n"
        "        init = namespace.get(\"get_init_inputs\", list)()\n"
        "        _models[device] = namespace[\"Model\"](*init).to(device)\n"
        "    return _models[device]\n\n\n"
        "@torch.no_grad()\n"
        f"def run({params}):\n"
        f"    args = [{params}]\n"
        "    device = next((a.device for a in args if isinstance(a, torch.Tensor)), torch.device(\"cpu\"))\n"
        "    result = _model(device)(*args)\n"
        "    return tuple(result) if isinstance(result, (tuple, list)) else result\n")


def unique_names(wanted, taken):
    names = []
    for name in wanted:
        while name in taken:
            name += "_"
        taken.add(name)
        names.append(name)
    return names


def build(torch, path):
    source, module = load_module(torch, path)
    torch.manual_seed(SEED)
    init = call("get_init_inputs()", getattr(module, "get_init_inputs", list))
    if not isinstance(init, (list, tuple)):
        raise BadFile(f"get_init_inputs() returned a {type(init).__name__}; expected a list")
    model = call("Model(*get_init_inputs())", module.Model, *init)
    values = call("get_inputs()", module.get_inputs)
    if not isinstance(values, (list, tuple)):
        raise BadFile(f"get_inputs() returned a {type(values).__name__}; expected a list")
    with torch.no_grad():
        outputs = as_outputs(torch, call("Model.forward(*get_inputs())", model, *values))

    original = forward_names(model, len(values))
    output_names = ["output"] if len(outputs) == 1 else [f"output{i}" for i in range(len(outputs))]
    taken = set(output_names) | REFERENCE_GLOBALS
    # A name the input generator treats specially (A, g, weight, cos...) would not get the
    # randn that get_inputs() draws, so such inputs are renamed.
    wanted = []
    for name, value in zip(original, values):
        shape = list(value.shape) if isinstance(value, torch.Tensor) else []
        special = (isinstance(value, torch.Tensor) and value.is_floating_point()
                   and heuristic_pattern(name, shape, ""))
        wanted.append(name + "_input" if special else name)
    input_names = unique_names(wanted, taken)
    axes = AxisNamer(module, taken)

    def spec(value, what, description):
        if isinstance(value, torch.Tensor):
            shape = [axes.name(size) for size in value.shape]
            return {"shape": shape, "dtype": dtype_name(torch, value.dtype, what),
                    "description": description}
        return {"shape": None, "dtype": scalar_dtype(value, what), "description": description}

    inputs, workload_inputs, sizes = {}, {}, []
    for i, (name, value) in enumerate(zip(input_names, values)):
        what = f"get_inputs()[{i}] ({original[i]})"
        inputs[name] = spec(value, what, f"argument {i} of Model.forward ({original[i]})")
        if isinstance(value, torch.Tensor):
            workload_inputs[name] = {"type": "random"}
            sizes.append((value.element_size(), inputs[name]["shape"]))
        else:
            workload_inputs[name] = {"type": "scalar", "value": value}
            sizes.append((8, []))
    outs = {}
    for i, (name, value) in enumerate(zip(output_names, outputs)):
        outs[name] = spec(value, f"output {i} of Model.forward", f"output {i} of Model.forward")
        sizes.append((value.element_size(), outs[name]["shape"]))

    name = problem_name(path)
    definition = {
        "name": name,
        "op_type": "kernelbench",
        "description": (
            f"Imported from the KernelBench file {os.path.basename(path)} by kernelarc import "
            f"kernelbench. The reference builds Model(*get_init_inputs()) once under "
            f"torch.manual_seed({SEED}) and calls forward; the shapes are those get_inputs() "
            "returned, the tensors are drawn by kernelarc's input generator."),
        "axes": {a: {"type": "const", "value": v} for a, v in axes.axes.items()},
        "inputs": inputs,
        "outputs": outs,
        "reference": reference_source(source, path, input_names),
        "kernelarc": {"bytes": " + ".join(
            " * ".join([str(elem)] + shape) for elem, shape in sizes)},
    }
    workload = {"uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, "kernelarc/kernelbench/" + name)),
                "axes": {}, "inputs": workload_inputs,
                "tolerance": TOLERANCE}
    return name, definition, workload


def main():
    if len(sys.argv) != 4:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return EXIT_BAD_FILE
    path, out_dir, result_path = sys.argv[1:]
    try:
        import torch
    except ImportError as error:
        print(f"torch cannot be imported: {error}", file=sys.stderr)
        return EXIT_NO_TORCH
    try:
        name, definition, workload = build(torch, path)
    except BadFile as error:
        print(f"{path}: {error}", file=sys.stderr)
        return EXIT_BAD_FILE
    problem_dir = os.path.join(out_dir, name)
    os.makedirs(problem_dir, exist_ok=True)
    write_atomically(os.path.join(problem_dir, "definition.json"),
                     [(json.dumps(definition, indent=2) + "\n").encode()])
    write_atomically(os.path.join(problem_dir, "workload.jsonl"),
                     [(json.dumps(workload) + "\n").encode()])
    write_atomically(result_path,
                     [json.dumps({"problem_dir": problem_dir, "name": name}).encode()])
    return 0


if __name__ == "__main__":
    sys.exit(main())
