"""kernelarc tracer: records what a problem's PyTorch reference computes as an op graph
(docs/RECOGNITION.md §1).

Usage: kernelarc_trace.py JOB.json OUT.json

The job file (written by src/oracle/graph_trace.cpp):
  {"definition": <the definition as src/oracle/python_bridge.cpp's definition_to_job_json writes
                  it>,
   "axes": {name: {"kind": "var"} | {"kind": "const", "value": n} |
                  {"kind": "expr", "expression": "..."}},   in definition order
   "traces": [{axis: value, ...}, {axis: value, ...}],      every axis resolved, twice
   "scalars": {input name: number}}                          int and bool scalar inputs

OUT.json gets {"ok": true, "graph": <the op graph>}, or {"ok": false, "error": "..."} when the
reference cannot be traced.
Exit codes: 0 OUT.json written, 3 torch cannot be imported.

The reference runs on meta tensors (no data, no time). When that fails (an op without a meta
kernel, code that reads values), it runs on CPU tensors, only if every input and output of both
traces stays under CPU_FALLBACK_BYTES.
"""

import json
import os
import sys

EXIT_NO_TORCH = 3

try:
    import torch
except Exception as torch_error:
    print(f"kernelarc tracer: cannot import torch: {torch_error}", file=sys.stderr)
    sys.exit(EXIT_NO_TORCH)

# The helper modules sit beside this file; in isolated mode (-I) its directory is not on the path.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kernelarc_oracle import describe_exception, load_reference, returned_values
from kernelarc_oracle_tensors import ReferenceFault, torch_dtype, write_atomically
from kernelarc_trace_merge import Monomials, merge_traces
from kernelarc_trace_recorder import Recorder, TraceFailure, dtype_name, literal_tensors

CPU_FALLBACK_BYTES = 64 << 20
GRAPH_VERSION = 1


def float_sentinel(input_index, trace_index):
    """The value a float scalar input takes in one trace: distinct per input and per trace, and
    unlike any constant a reference would hold."""
    return 1.0e-3 * (1.0 + 0.0123456789 * (2 * input_index + trace_index + 1))


class Tracer:
    def __init__(self, torch, job):
        self.torch = torch
        self.job = job
        self.definition = job["definition"]
        self.module = load_reference(self.definition)
        self.float_scalars = [name for name, spec in self.definition["inputs"].items()
                              if spec["shape"] is None and
                              torch_dtype(torch, spec["dtype"]).is_floating_point]

    def shape(self, spec, axes):
        return [axes[axis] for axis in spec["shape"] or []]

    def dtype(self, spec):
        try:
            return torch_dtype(self.torch, spec["dtype"])
        except (KeyError, AttributeError):
            raise TraceFailure(f"dtype {spec['dtype']} is not available in torch "
                               f"{self.torch.__version__}")

    def trace(self, trace_index, device):
        """One run of the reference in raw form (sizes as integers)."""
        torch = self.torch
        axes = self.job["traces"][trace_index]
        sentinel = {name: float_sentinel(index, trace_index)
                    for index, name in enumerate(self.float_scalars)}
        recorder = Recorder(torch, device, {value: name for name, value in sentinel.items()})
        arguments, inputs = [], []
        for name, spec in self.definition["inputs"].items():
            dtype = self.dtype(spec)
            if spec["shape"] is None:
                inputs.append(self.scalar_input(name, dtype))
                arguments.append(sentinel[name] if name in sentinel else inputs[-1]["constant"])
                continue
            tensor = self.input_tensor(self.shape(spec, axes), dtype, device)
            arguments.append(tensor)
            inputs.append({"name": name, "value": recorder.add_input(name, tensor)})
        try:
            with torch.no_grad(), recorder, literal_tensors(torch, recorder):
                result = self.module.run(*arguments)
        except TraceFailure:
            raise
        except Exception as error:
            raise ReferenceRunFailed(describe_exception(error)) from error
        return {"inputs": inputs, "values": recorder.values, "buffers": recorder.buffers,
                "nodes": recorder.nodes, "outputs": self.outputs(recorder, result, axes)}

    def scalar_input(self, name, dtype):
        entry = {"name": name, "scalar": dtype_name(dtype)}
        if name in self.float_scalars:
            return entry
        if name not in self.job.get("scalars", {}):
            raise TraceFailure(f"the scalar input '{name}' has no value in the first workload")
        value = self.job["scalars"][name]
        entry["constant"] = bool(value) if dtype == self.torch.bool else int(value)
        return entry

    def input_tensor(self, shape, dtype, device):
        torch = self.torch
        if device == "meta":
            return torch.empty(shape, dtype=dtype, device="meta")
        if dtype == getattr(torch, "float4_e2m1fn_x2", None):
            # torch casts nothing to float4; zero bytes are valid codes (+0, +0).
            return torch.zeros(shape, dtype=torch.uint8).view(dtype)
        if dtype.is_floating_point:
            return torch.randn(shape, dtype=torch.float32).to(dtype)
        # Zeros are a valid index into any dimension and a valid class for any loss.
        return torch.zeros(shape, dtype=dtype)

    def outputs(self, recorder, result, axes):
        torch = self.torch
        specs = self.definition["outputs"]
        names = list(specs)
        values = returned_values(result, names, TraceFailure)
        outputs = []
        for name, value in zip(names, values):
            if not isinstance(value, torch.Tensor):
                raise TraceFailure(f"output '{name}' is a {type(value).__name__}, not a tensor")
            expected = self.shape(specs[name], axes)
            dtype = self.dtype(specs[name])
            if list(value.shape) != expected or value.dtype != dtype:
                raise TraceFailure(
                    f"output '{name}': the definition says shape {expected}, dtype "
                    f"{dtype_name(dtype)}; the reference returned shape {list(value.shape)}, "
                    f"dtype {dtype_name(value.dtype)} ({format_axes(axes)})")
            outputs.append({"name": name, "value": recorder.value_id(value)})
        return outputs

    def fits_on_cpu(self):
        for axes in self.job["traces"]:
            for role in ("inputs", "outputs"):
                for name, spec in self.definition[role].items():
                    if spec["shape"] is None:
                        continue
                    elements = 1
                    for size in self.shape(spec, axes):
                        elements *= size
                    itemsize = self.torch.empty((), dtype=self.dtype(spec)).element_size()
                    if elements * itemsize > CPU_FALLBACK_BYTES:
                        return False
        return True

    def graph(self):
        try:
            raw = [self.trace(0, "meta"), self.trace(1, "meta")]
            mode = "meta"
        except ReferenceRunFailed as meta_error:
            # A TraceFailure would recur on CPU; a failing op may only lack a meta kernel.
            if not self.fits_on_cpu():
                raise TraceFailure(
                    f"tracing on meta tensors failed ({meta_error}), and a trace on CPU "
                    f"tensors would need tensors over {CPU_FALLBACK_BYTES >> 20} MiB")
            try:
                raw = [self.trace(0, "cpu"), self.trace(1, "cpu")]
            except ReferenceRunFailed as cpu_error:
                raise TraceFailure(f"the reference fails on meta tensors ({meta_error}) and on "
                                   f"CPU tensors ({cpu_error})")
            mode = "cpu"
        var_names = [name for name, axis in self.job["axes"].items() if axis["kind"] == "var"]
        graph = {"version": GRAPH_VERSION, "torch": self.torch.__version__, "trace": mode,
                 "axes": self.axes_section()}
        graph.update(merge_traces(raw[0], raw[1], Monomials(var_names, *self.job["traces"])))
        return graph

    def axes_section(self):
        section = {}
        for name, axis in self.job["axes"].items():
            entry = dict(axis)
            if axis["kind"] != "const":
                entry["traced"] = [axes[name] for axes in self.job["traces"]]
            section[name] = entry
        return section


class ReferenceRunFailed(Exception):
    """The reference raised while being traced."""


def format_axes(axes):
    return " ".join(f"{name}={value}" for name, value in axes.items())


def main():
    os.dup2(2, 1)  # the reference's prints must never reach whoever reads our stdout
    job_path, out_path = sys.argv[1], sys.argv[2]
    with open(job_path) as file:
        job = json.load(file)
    try:
        result = {"ok": True, "graph": Tracer(torch, job).graph()}
    except (TraceFailure, ReferenceRunFailed, ReferenceFault) as error:
        result = {"ok": False, "error": str(error)}
    except Exception as error:
        result = {"ok": False, "error": "the reference does not load or cannot be traced: " +
                  describe_exception(error)}
    write_atomically(out_path, [json.dumps(result, allow_nan=False).encode()])
    return 0


if __name__ == "__main__":
    sys.exit(main())
