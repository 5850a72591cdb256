"""kernelarc import kernelbench: turns KernelBench problem files into kernelarc problems.

Usage: kernelarc_import_kernelbench.py OUT_DIR RESULTS.jsonl FILE.py [FILE.py ...]

A KernelBench file defines `class Model(nn.Module)`, `get_inputs()` and usually
`get_init_inputs()` (taken as no arguments when absent). This script runs each file once under a
fixed seed, on meta tensors where it can (KernelBench's sizes take gigabytes; on the CPU when the
forward needs data), to learn the shapes and dtypes of the inputs, parameters and outputs, then
writes OUT_DIR/<name>/definition.json and workload.jsonl. The files are imported one after the
other in this one interpreter (starting one with torch is the slow part); one that fails does not
stop the others.

RESULTS.jsonl gets one JSON line per event, flushed at once, so that the parent
(src/cli/import_command.cpp) knows which file was running if the interpreter dies:
  {"event": "start", "file": ...}
  {"event": "done", "file": ..., "ok": true, "problem_dir": ..., "name": ...}
  {"event": "done", "file": ..., "ok": false, "error": ...}

Every axis is const, named after the module-level integer constant of the same value when
exactly one has it (M, K, N, batch_size...), else d<value>. The reference embeds the file's
source, so the problem does not depend on the file staying where it was.

A model with parameters or buffers (nn.Linear, BatchNorm...) gets each of them as an input named
after its dotted path (`gemm.weight` -> `gemm_weight`): a kernel can only compute what it is
given. The reference then runs the model functionally on those inputs, and the definition's
custom_inputs_entrypoint draws them: it builds Model(*get_init_inputs()) under the oracle's seed
for the draw (so the weights follow the module's own init and a BatchNorm's running_var stays
positive) and calls get_inputs(). So does a model with an integer tensor input (class targets,
indices), whose range only get_inputs() knows. Other models keep kernelarc's random inputs. The
model stays in training mode, as KernelBench runs it (BatchNorm uses batch statistics).

Exit codes: 0 every file handled (each may have failed), 2 bad arguments, 3 torch cannot be
imported.
"""

import contextlib
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

EXIT_BAD_ARGUMENTS = 2
EXIT_NO_TORCH = 3
SEED = 42
TOLERANCE = {"max_atol": 1e-2, "max_rtol": 1e-2}  # KernelBench's own atol = rtol = 1e-2
ENTRYPOINT = "make_inputs"
# Names the reference defines at module level; an input must not shadow them.
REFERENCE_GLOBALS = {"sys", "types", "torch", "functional_call", "KERNELBENCH_SOURCE", "FORWARD_INPUTS",
                     "PARAMETERS", "BUFFERS", "_MODEL", "_namespace", "_build", ENTRYPOINT}


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


def unique_names(wanted, taken):
    names = []
    for name in wanted:
        while name in taken:
            name += "_"
        taken.add(name)
        names.append(name)
    return names


# Tensors a module keeps as plain attributes (an RNN's initial hidden state, `self.h0 =
# torch.randn(...)`) are state like buffers, but neither named_buffers() nor functional_call
# sees them. Registered as buffers, they become inputs too. The same text runs here and in the
# reference that import writes, so both name them alike.
PROMOTE_TENSOR_ATTRIBUTES = '''
def _promote_tensor_attributes(model):
    import torch
    for module in model.modules():
        for name, value in list(vars(module).items()):
            if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
                delattr(module, name)
                module.register_buffer(name, value)
    return model
'''
exec(PROMOTE_TENSOR_ATTRIBUTES)  # noqa: S102 (our own text, defines _promote_tensor_attributes)


def model_state(model):
    """(dotted path, tensor, is_buffer) for every parameter and buffer, parameters first."""
    return ([(path, tensor, False) for path, tensor in model.named_parameters()] +
            [(path, tensor, True) for path, tensor in model.named_buffers()])


def state_input_name(path):
    name = re.sub(r"\W+", "_", path).strip("_") or "state"
    return "p_" + name if name[0].isdigit() else name


PLAIN_REFERENCE = '''

@torch.no_grad()
def run({params}):
    result = _MODEL({params})
    return tuple(result) if isinstance(result, (tuple, list)) else result
'''

ENTRY_POINT = '''
# Forward's arguments (get_inputs()), then Model's parameters and buffers by input name.
FORWARD_INPUTS = {forward!r}
PARAMETERS = {parameters!r}
BUFFERS = {buffers!r}


def {entrypoint}(axes, device):
    """The inputs of one draw: Model(*get_init_inputs()) built under the draw's seed (set by the
    oracle), so its weights follow the module's own init, then get_inputs()."""
    namespace = _namespace()
    model = _build(namespace)
    state = dict(model.named_parameters())
    state.update(model.named_buffers())
    values = namespace["get_inputs"]()
    inputs = {{name: value.detach() for name, value in zip(FORWARD_INPUTS, values)
              if isinstance(value, torch.Tensor)}}
    for name, path in {{**PARAMETERS, **BUFFERS}}.items():
        inputs[name] = state[path].detach()
    return inputs
'''

FUNCTIONAL_REFERENCE = '''
try:
    from torch.func import functional_call  # torch 2.x
except ImportError:
    from torch.nn.utils.stateless import functional_call  # torch 1.13


@torch.no_grad()
def run({params}):
    # The model only lends its forward: every parameter and buffer is replaced by an input.
    state = {{{parameter_state}}}
    # A clone, so the reference leaves its inputs as drawn: training-mode BatchNorm updates its
    # running statistics in place.
    state.update({{{buffer_state}}})
    result = functional_call(_MODEL, state, ({forward_args}))
    return tuple(result) if isinstance(result, (tuple, list)) else result
'''


def reference_source(source, path, forward, parameters, buffers, custom):
    """The reference: the file's source, the entry point drawing the inputs when `custom`, and
    run(), a functional call of the model when it has parameters or buffers."""
    text = (
        "import sys\nimport types\n\nimport torch\n\n"
        f"# The KernelBench file {os.path.basename(path)}, run as a module by _namespace().\n"
        f"KERNELBENCH_SOURCE = {source!r}\n\n\n"
        "def _namespace():\n"
        "    # A registered module: torch.compile looks up the module of every class it traces.\n"
        "    module = types.ModuleType(\"kernelbench_problem\")\n"
        "    sys.modules[module.__name__] = module\n"
        f"    exec(compile(KERNELBENCH_SOURCE, {os.path.basename(path)!r}, \"exec\"), module.__dict__)\n"
        "    return module.__dict__\n\n\n"
        f"{PROMOTE_TENSOR_ATTRIBUTES}\n\n"
        "def _build(namespace):\n"
        "    \"\"\"Model(*get_init_inputs()), in training mode as KernelBench runs it.\"\"\"\n"
        "    init = namespace.get(\"get_init_inputs\", list)()\n"
        "    return _promote_tensor_attributes(namespace[\"Model\"](*init))\n\n\n"
        "# Built when the reference loads, not in run(): a tracer of run() sees only the forward.\n"
        "# Under a fixed seed, apart from the global random state: loading draws nothing.\n"
        "with torch.random.fork_rng(devices=[]):\n"
        f"    torch.manual_seed({SEED})\n"
        "    _MODEL = _build(_namespace())\n")
    if custom:
        text += ENTRY_POINT.format(forward=forward, parameters=parameters, buffers=buffers,
                                   entrypoint=ENTRYPOINT)
    params = ", ".join(forward + list(parameters) + list(buffers))
    if not parameters and not buffers:
        return text + PLAIN_REFERENCE.format(params=params)
    return text + FUNCTIONAL_REFERENCE.format(
        params=params,
        parameter_state=", ".join(f"{path!r}: {name}" for name, path in parameters.items()),
        buffer_state=", ".join(f"{path!r}: {name}.clone()" for name, path in buffers.items()),
        forward_args="".join(f"{name}, " for name in forward))


# The functions that make a tensor from sizes: under MetaFactories they make a meta tensor.
FACTORIES = {"randn", "rand", "randint", "randperm", "normal", "zeros", "ones", "empty", "full",
             "eye", "arange", "linspace", "logspace", "tensor", "as_tensor", "empty_strided"}
# Past this many bytes of inputs, a file whose forward needs real data is not run on the CPU.
CPU_FALLBACK_BYTES = 1 << 30


def meta_factories(torch):
    """A mode in which the factory functions make meta tensors unless told a device, so that
    a model and its inputs of KernelBench's sizes (gigabytes) cost nothing to build."""
    from torch.overrides import TorchFunctionMode

    class MetaFactories(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if getattr(func, "__name__", "") in FACTORIES and kwargs.get("device") is None:
                kwargs["device"] = "meta"
            return func(*args, **kwargs)

    return MetaFactories()


def run_file(torch, module, on_meta):
    """(model, get_inputs() values, outputs) of one forward pass, on meta tensors or the CPU's."""
    torch.manual_seed(SEED)
    with meta_factories(torch) if on_meta else contextlib.nullcontext():
        init = call("get_init_inputs()", getattr(module, "get_init_inputs", list))
        if not isinstance(init, (list, tuple)):
            raise BadFile(f"get_init_inputs() returned a {type(init).__name__}; expected a list")
        model = _promote_tensor_attributes(
            call("Model(*get_init_inputs())", module.Model, *init))
        values = call("get_inputs()", module.get_inputs)
    if not isinstance(values, (list, tuple)):
        raise BadFile(f"get_inputs() returned a {type(values).__name__}; expected a list")
    if on_meta:
        model.to("meta")
    with torch.no_grad():
        outputs = as_outputs(torch, call("Model.forward(*get_inputs())", model, *values))
    return model, values, outputs


def tensor_bytes(torch, values):
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def shapes_run(torch, module):
    """run_file on meta tensors; on the CPU when the forward needs data (an op without a meta
    kernel, .item()) and its inputs are small enough."""
    try:
        return run_file(torch, module, on_meta=True)
    except BadFile as meta_error:
        try:
            _, values, _ = run_file(torch, module, on_meta=True)
            size = tensor_bytes(torch, values)
        except BadFile:
            size = 0  # get_inputs() itself needs data: its sizes are unknown, try the CPU
        if size > CPU_FALLBACK_BYTES:
            raise BadFile(f"its forward does not run on meta tensors and its inputs "
                          f"({size / (1 << 30):.1f} GiB) are too large to run it on the CPU to "
                          f"learn its output shapes; on meta tensors {meta_error}")
    return run_file(torch, module, on_meta=False)


def build(torch, path):
    source, module = load_module(torch, path)
    model, values, outputs = shapes_run(torch, module)
    state = model_state(model)

    original = forward_names(model, len(values))
    output_names = ["output"] if len(outputs) == 1 else [f"output{i}" for i in range(len(outputs))]
    taken = set(output_names) | REFERENCE_GLOBALS
    # kernelarc's generator draws integers in [-1024, 1024): class targets or indices must come
    # from get_inputs(), which knows their range.
    integral = any(isinstance(v, torch.Tensor) and not v.is_floating_point() for v in values)
    custom = bool(state) or integral
    wanted = []
    for name, value in zip(original, values):
        shape = list(value.shape) if isinstance(value, torch.Tensor) else []
        # Drawn by kernelarc's generator, a name it treats specially (A, g, weight, cos...)
        # would not get the randn that get_inputs() draws, so such inputs are renamed.
        special = (not custom and isinstance(value, torch.Tensor)
                   and value.is_floating_point() and heuristic_pattern(name, shape, ""))
        wanted.append(name + "_input" if special else name)
    input_names = unique_names(wanted, taken)
    state_names = unique_names([state_input_name(p) for p, _, _ in state], taken)
    axes = AxisNamer(module, taken)

    def spec(value, what, description):
        if isinstance(value, torch.Tensor):
            shape = [axes.name(size) for size in value.shape]
            return {"shape": shape, "dtype": dtype_name(torch, value.dtype, what),
                    "description": description}
        return {"shape": None, "dtype": scalar_dtype(value, what), "description": description}

    inputs, workload_inputs, sizes = {}, {}, []
    tensor_input = {"type": "custom"} if custom else {"type": "random"}
    for i, (name, value) in enumerate(zip(input_names, values)):
        what = f"get_inputs()[{i}] ({original[i]})"
        inputs[name] = spec(value, what, f"argument {i} of Model.forward ({original[i]})")
        if isinstance(value, torch.Tensor):
            workload_inputs[name] = dict(tensor_input)
            sizes.append((value.element_size(), inputs[name]["shape"]))
        else:
            workload_inputs[name] = {"type": "scalar", "value": value}
            sizes.append((8, []))
    parameters, buffers = {}, {}
    for name, (dotted, tensor, is_buffer) in zip(state_names, state):
        kind = "buffer" if is_buffer else "parameter"
        inputs[name] = spec(tensor, f"the {kind} {dotted}", f"the model's {kind} {dotted}")
        workload_inputs[name] = dict(tensor_input)
        sizes.append((tensor.element_size(), inputs[name]["shape"]))
        (buffers if is_buffer else parameters)[name] = dotted
    outs = {}
    for i, (name, value) in enumerate(zip(output_names, outputs)):
        outs[name] = spec(value, f"output {i} of Model.forward", f"output {i} of Model.forward")
        sizes.append((value.element_size(), outs[name]["shape"]))

    name = problem_name(path)
    how = (f"The model's parameters and buffers are inputs, the reference runs the model "
           "functionally on them. " if state else
           f"The reference builds Model(*get_init_inputs()) once under torch.manual_seed({SEED}) "
           "and calls its forward. ")
    how += (f"The tensors are drawn by {ENTRYPOINT}, which builds Model(*get_init_inputs()) under "
            "the draw's seed and calls get_inputs()." if custom else
            "The tensors are drawn by kernelarc's input generator.")
    definition = {
        "name": name,
        "op_type": "kernelbench",
        "description": (
            f"Imported from the KernelBench file {os.path.basename(path)} by kernelarc import "
            f"kernelbench. {how} The shapes are those get_inputs() returned."),
        "axes": {a: {"type": "const", "value": v} for a, v in axes.axes.items()},
        "inputs": inputs,
        "outputs": outs,
        "reference": reference_source(source, path, input_names, parameters, buffers, custom),
    }
    if custom:
        definition["custom_inputs_entrypoint"] = ENTRYPOINT
    definition["kernelarc"] = {"bytes": " + ".join(
        " * ".join([str(elem)] + shape) for elem, shape in sizes)}
    workload = {"uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, "kernelarc/kernelbench/" + name)),
                "axes": {}, "inputs": workload_inputs,
                "tolerance": TOLERANCE}
    return name, definition, workload


class Results:
    """RESULTS.jsonl, one flushed line per event."""

    def __init__(self, path):
        self.file = open(path, "a", encoding="utf-8")

    def write(self, **event):
        self.file.write(json.dumps(event) + "\n")
        self.file.flush()


def import_file(torch, path, out_dir, written):
    """Writes the problem of one file; `written` maps the problem names this run wrote to their
    files, so that two files of one name do not overwrite each other."""
    name, definition, workload = build(torch, path)
    if name in written:
        raise BadFile(f"its problem name {name} is that of {written[name]}, imported before it")
    problem_dir = os.path.join(out_dir, name)
    os.makedirs(problem_dir, exist_ok=True)
    write_atomically(os.path.join(problem_dir, "definition.json"),
                     [(json.dumps(definition, indent=2) + "\n").encode()])
    write_atomically(os.path.join(problem_dir, "workload.jsonl"),
                     [(json.dumps(workload) + "\n").encode()])
    written[name] = path
    return name, problem_dir


def main():
    if len(sys.argv) < 4:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return EXIT_BAD_ARGUMENTS
    out_dir, results_path, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    try:
        import torch
    except ImportError as error:
        print(f"torch cannot be imported: {error}", file=sys.stderr)
        return EXIT_NO_TORCH
    results = Results(results_path)
    written = {}
    for path in files:
        results.write(event="start", file=path)
        try:
            name, problem_dir = import_file(torch, path, out_dir, written)
        except BadFile as error:
            results.write(event="done", file=path, ok=False, error=f"{path}: {error}")
        except Exception:
            results.write(event="done", file=path, ok=False,
                          error=f"{path}: importing it failed:\n" + traceback.format_exc(limit=-3))
        else:
            results.write(event="done", file=path, ok=True, problem_dir=problem_dir, name=name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
