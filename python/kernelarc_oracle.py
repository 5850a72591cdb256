"""kernelarc oracle: generates a problem's inputs, runs its PyTorch reference, times it.

Usage: kernelarc_oracle.py JOB.json
       kernelarc_oracle.py --serve FD

The second form serves job files one after another in one interpreter, so torch is imported once
per kernelarc process rather than once per job file: it reads a job file's path per line from
the socket FD, handles it as the first form would, and writes back the exit code that form would
have had, as a line. It ends at the end of the requests or after a non-zero code.

The job file (written by src/oracle/python_bridge.cpp) names the definition, the device, a
results file, trial jobs (inputs + expected outputs -> two safetensors files) and timing jobs
(-> one JSON file). Everything this script reports goes to files: the reference may print what
it likes, and stdout is sent to stderr anyway.

Results file: JSON lines, appended and flushed one by one so the parent can tell which job was
running if the interpreter dies:
  {"event": "env", "python": ..., "torch": ..., "device": ...}
  {"event": "start", "id": ...}
  {"event": "done", "id": ..., "ok": true} | {... "ok": false, "error": ..., "kind": ...}
"kind" is "input" when a problem file (a safetensors blob) is at fault, "storage" when the cache
could not be written (a full disk) and "reference" when the reference or the definition is.

Exit codes: 0 all jobs handled (each may still have failed), 3 torch cannot be imported,
4 the requested device is not available.

Inputs follow SOL-ExecBench's generator: the same distributions per dtype and the same name
heuristics, so a kernel is scored on the kind of data it will meet there.
"""

import contextlib
import gc
import json
import os
import platform
import signal
import sys
import threading
import time
import traceback
import types

# The helper modules sit beside this file; in isolated mode (-I) its directory is not on the path.
# No __pycache__ next to them: the data directory may be read-only or a source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kernelarc_oracle_inputs import (apply_structure, heuristic_pattern, heuristic_tensor,
                                     random_tensor, structure_for_trial, structured_input,
                                     takes_structure)
from kernelarc_oracle_tensors import (InputFault, ReferenceFault, read_safetensors_tensor,
                                      torch_dtype, write_atomically, write_safetensors)

EXIT_NO_TORCH = 3
EXIT_NO_DEVICE = 4
REFERENCE_FILE = "<reference>"
BASELINE_FILE = "<baseline>"


def python_scalar(torch, value, dtype):
    if dtype == torch.bool:
        return bool(value)
    if dtype.is_floating_point:
        return float(value)
    return int(value)


def check_tensor(role, name, tensor, shape, dtype):
    if tuple(tensor.shape) != tuple(shape):
        raise ReferenceFault(
            f"{role} '{name}': expected shape {list(shape)}, got {list(tensor.shape)}")
    if tensor.dtype != dtype:
        raise ReferenceFault(f"{role} '{name}': expected dtype {dtype}, got {tensor.dtype}")


class StorageFault(Exception):
    """The cache could not be written (e.g. a full disk): not the reference's fault, not cached."""


class Problem:
    def __init__(self, torch, definition, problem_dir, device):
        self.torch = torch
        self.definition = definition
        self.problem_dir = problem_dir
        self.device = torch.device(device)
        self.module = None
        self.load_error = None
        self.flusher = None
        # The shared parameters on the device, by parameters file: drawn or read once for all
        # the trials of a job file that share them (one file per problem).
        self.parameters = {}
        try:
            self.module = load_reference(definition)
        except Exception as error:
            self.load_error = "the reference does not load: " + describe_exception(error)

    def dtype(self, spec):
        return torch_dtype(self.torch, spec["dtype"])

    def shape(self, spec, axes):
        return None if spec["shape"] is None else [
            axis if isinstance(axis, int) else axes[axis] for axis in spec["shape"]]

    def inputs(self, workload, axes, structure=None, skip=()):
        """Input values in definition order (tensors, or Python numbers for scalars); with a
        structure (kernelarc_oracle_inputs.STRUCTURES), its main random input takes it. Names in
        `skip` are not drawn (None in their place)."""
        values = self.plain_inputs(workload, axes, skip)
        if structure is None:
            return values
        given = workload.get("inputs", {})
        specs = self.definition["inputs"]
        names = list(specs)
        # Only plain random draws take a structure: not scalars, files, custom inputs, or
        # tensors a name heuristic shapes (masks, norm weights, ...).
        random_names = [
            name for name in names
            if given.get(name, {}).get("type", "random") == "random"
            and heuristic_pattern(name, self.shape(specs[name], axes) or [],
                                  specs[name].get("description")) is None]
        shapes = {"outputs": [self.shape(spec, axes) or []
                              for spec in self.definition["outputs"].values()],
                  "random": random_names}
        index = structured_input(self.definition, values, shapes, names, self.torch)
        if index is not None and takes_structure(self.definition, structure, names[index]):
            values[index] = apply_structure(self.torch, structure, names[index], values[index])
        return values

    def plain_inputs(self, workload, axes, skip=()):
        torch = self.torch
        given = workload.get("inputs", {})
        custom = None
        if any(entry.get("type") == "custom" for name, entry in given.items() if name not in skip):
            custom = self.custom_inputs(given, axes)
        values = []
        for name, spec in self.definition["inputs"].items():
            if name in skip:
                values.append(None)
                continue
            dtype = self.dtype(spec)
            shape = self.shape(spec, axes)
            entry = given.get(name, {"type": "random"})
            kind = entry.get("type", "random")
            if kind == "scalar":
                value = entry["value"]
                values.append(python_scalar(torch, value, dtype) if shape is None else
                              torch.tensor(value, dtype=dtype, device=self.device))
            elif kind == "safetensors":
                path = os.path.join(self.problem_dir, entry["path"])
                tensor = read_safetensors_tensor(torch, path, entry["tensor_key"])
                check_tensor(f"safetensors input ({path})", name, tensor, shape, dtype)
                values.append(tensor.to(self.device))
            elif kind == "custom":
                if name not in custom:
                    raise ReferenceFault(
                        f"{self.definition['custom_inputs_entrypoint']} returned no '{name}'")
                value = custom[name]
                if isinstance(value, torch.Tensor):
                    check_tensor("custom input", name, value, shape or [], dtype)
                    value = value.to(self.device)
                elif shape is not None:
                    raise ReferenceFault(f"custom input '{name}': expected a tensor of shape "
                                         f"{shape}, got {type(value).__name__}")
                values.append(value)
            elif shape is None:
                values.append(random_tensor(torch, (), dtype, self.device).item())
            else:
                values.append(self.random_input(name, spec, shape, dtype))
        return values

    def random_input(self, name, spec, shape, dtype):
        torch = self.torch
        pattern = None
        if dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
            pattern = heuristic_pattern(name, shape, spec.get("description"))
        value = (heuristic_tensor(torch, pattern, shape, dtype, self.device) if pattern
                 else random_tensor(torch, shape, dtype, self.device))
        if self.definition.get("op_type") == "sampling" and name == "probs":
            value = torch.softmax(value, dim=-1)
        return value

    def custom_inputs(self, given, axes):
        entry_name = self.definition.get("custom_inputs_entrypoint")
        if not entry_name:
            raise ReferenceFault("the workload has custom inputs but the definition names no "
                                 "custom_inputs_entrypoint")
        function = getattr(self.module, entry_name, None)
        if not callable(function):
            raise ReferenceFault(f"the reference defines no function '{entry_name}'")
        axes_and_scalars = dict(axes)
        for name, entry in given.items():
            if entry.get("type") == "scalar":
                axes_and_scalars[name] = entry["value"]
        result = function(axes_and_scalars, self.device)
        if not isinstance(result, dict):
            raise ReferenceFault(f"{entry_name} returned {type(result).__name__}, expected a dict")
        return result

    def given_inputs(self, path, shared=None):
        """Input values in definition order from a safetensors file of saved_inputs' form; the
        names in `shared` (tensors by name) are taken from it instead."""
        values = []
        for name, spec in self.definition["inputs"].items():
            if shared and name in shared:
                values.append(shared[name].clone())
                continue
            tensor = read_safetensors_tensor(self.torch, path, name)
            values.append(tensor.item() if spec["shape"] is None else tensor.to(self.device))
        return values

    def saved_inputs(self, values, axes):
        """The inputs as CPU tensors (scalars as 0-D tensors), copied before the reference runs."""
        torch = self.torch
        saved = {}
        for (name, spec), value in zip(self.definition["inputs"].items(), values):
            if isinstance(value, torch.Tensor):
                saved[name] = value.detach().to("cpu", copy=True)
            else:
                saved[name] = torch.tensor(value, dtype=self.dtype(spec))
        return saved

    def outputs(self, result, axes):
        """The reference's return value as CPU tensors by output name, checked against the
        definition."""
        torch = self.torch
        specs = self.definition["outputs"]
        names = list(specs)
        values = returned_values(result, names, ReferenceFault)
        outputs = {}
        for name, value in zip(names, values):
            dtype = self.dtype(specs[name])
            shape = self.shape(specs[name], axes) or []
            if not isinstance(value, torch.Tensor):
                value = torch.tensor(value, dtype=dtype)
            check_tensor("output", name, value, shape, dtype)
            outputs[name] = value.detach().cpu()
        return outputs

    def check_loaded(self):
        if self.load_error:
            raise ReferenceFault(self.load_error)
        for role in ("inputs", "outputs"):
            for spec in self.definition[role].values():
                self.dtype(spec)


def returned_values(result, names, fault):
    """run()'s return value (a tensor, a tuple or list, or a dict by output name) as one value
    per output name, in order; `fault` (an exception class) says what does not fit."""
    if isinstance(result, dict):
        missing = [name for name in names if name not in result]
        if missing:
            raise fault(f"run() returned a dict without {missing}")
        values = [result[name] for name in names]
    elif isinstance(result, (tuple, list)):
        values = list(result)
    else:
        values = [result]
    if len(values) != len(names):
        raise fault(f"run() returned {len(values)} values, the definition has "
                    f"{len(names)} outputs ({', '.join(names)})")
    return values


def load_reference(definition):
    return load_module(definition["reference"], "kernelarc_reference", REFERENCE_FILE)


def load_baseline(definition):
    """The definition's baseline code (kernelarc.baseline), or None when the reference is the
    baseline."""
    source = definition.get("baseline")
    return load_module(source, "kernelarc_baseline", BASELINE_FILE) if source else None


def load_module(source, name, file):
    module = types.ModuleType(name)
    module.__file__ = file
    sys.modules[module.__name__] = module
    exec(compile(source, file, "exec"), module.__dict__)
    if not callable(getattr(module, "run", None)):
        raise ReferenceFault(f"the {file.strip('<>')} defines no function run(...)")
    return module


def describe_exception(error):
    text = "".join(traceback.format_exception_only(type(error), error)).strip()
    if isinstance(error, (ReferenceFault, InputFault)):
        return str(error)
    frames = [frame for frame in traceback.extract_tb(error.__traceback__)
              if frame.filename in (REFERENCE_FILE, BASELINE_FILE)]
    if not frames:
        return text
    return f"{text} ({frames[-1].filename.strip('<>')} line {frames[-1].lineno})"


# ── jobs ────────────────────────────────────────────────────────────────────────


def trial_job(problem, job):
    """Inputs drawn from the job's seed, or read from job["inputs_in"] (written by kernelarc,
    e.g. a twin of a trial); the inputs file is written only for drawn inputs. The workload's
    shared parameters (job["shared"]) come from shared_parameters() and are not written."""
    torch = problem.torch
    problem.check_loaded()
    shared = shared_parameters(problem, job) if job.get("shared") else {}
    if job.get("inputs_in"):
        values = problem.given_inputs(job["inputs_in"], shared)
        saved = None
        expected = run_reference(problem, values, job["axes"])
    else:
        structure = structure_for_trial(job.get("trial", 0))
        torch.manual_seed(job["seed"])
        values = with_shared(problem, problem.inputs(job["workload"], job["axes"], structure,
                                                     shared), shared)
        # Saved before the reference runs: one that updates an input in place
        # (x.index_add_(...); return x) must not hand its result to solutions as their input.
        saved = problem.saved_inputs(values, job["axes"])
        expected = run_reference(problem, values, job["axes"])
        if structure and not all(bool(torch.isfinite(tensor.float()).all())
                                 for tensor in expected.values() if tensor.is_floating_point()):
            # The structure takes the reference outside its domain: a plain draw instead.
            torch.manual_seed(job["seed"])
            values = with_shared(
                problem, problem.inputs(job["workload"], job["axes"], skip=shared), shared)
            saved = problem.saved_inputs(values, job["axes"])
            expected = run_reference(problem, values, job["axes"])
        for name in shared:
            del saved[name]  # in the parameters file
    try:
        if saved is not None:
            write_safetensors(torch, job["inputs_out"], saved)
        write_safetensors(torch, job["expected_out"], expected)
    except OSError as error:
        raise StorageFault(f"cannot write the oracle cache: {error}") from error


def shared_parameters(problem, job):
    """The workload's shared parameters (large inputs of const-axis shape, src/oracle/
    shared_parameters.h) on the device, by name: drawn once per problem from job["shared"]
    ["seed"] and written to its "path", or read from there when a former process wrote it."""
    torch = problem.torch
    shared = job["shared"]
    path, names = shared["path"], shared["names"]
    if path in problem.parameters:
        return problem.parameters[path]
    problem.parameters = {}  # another file's are not needed again: free them first
    tensors = None
    if os.path.exists(path):
        try:
            tensors = {name: read_safetensors_tensor(torch, path, name).to(problem.device)
                       for name in names}
        except InputFault:
            tensors = None  # torn or foreign: drawn again and replaced
    if tensors is None:
        torch.manual_seed(shared["seed"])
        skip = [name for name in problem.definition["inputs"] if name not in names]
        # Drawn as the source workload draws (the first that shares them), whichever workload
        # asks: every process writes the same bytes to this path.
        values = problem.plain_inputs(shared["workload"], shared["axes"], skip)
        tensors = {name: value for name, value in zip(problem.definition["inputs"], values)
                   if name in names}
        try:
            write_safetensors(torch, path, tensors)
        except OSError as error:
            raise StorageFault(f"cannot write the oracle cache: {error}") from error
    problem.parameters[path] = tensors
    return tensors


def with_shared(problem, values, shared):
    """`values` with the shared parameters in place of their skipped draws; copies, as a
    reference may write to its inputs and the next trial must see the same parameters."""
    return [shared[name].clone() if name in shared else value
            for name, value in zip(problem.definition["inputs"], values)]


def run_reference(problem, values, axes):
    """The reference's outputs for `values`, as CPU tensors by output name."""
    with problem.torch.no_grad():
        result = problem.module.run(*values)
    synchronize(problem)
    return problem.outputs(result, axes)


def synchronize(problem):
    if problem.device.type == "cuda":
        problem.torch.cuda.synchronize(problem.device)


def cache_flusher(problem, job):
    """A function that evicts the last-level cache (CPU) or L2 (CUDA) by writing twice its size,
    and its description. The buffer is allocated once per process."""
    if problem.flusher is None:
        problem.flusher = make_cache_flusher(problem, job)
    return problem.flusher


def make_cache_flusher(problem, job):
    torch = problem.torch
    if problem.device.type == "cuda":
        properties = torch.cuda.get_device_properties(problem.device)
        size = getattr(properties, "L2_cache_size", 0) or (64 << 20)
        description = f"L2 flushed ({2 * size >> 20} MiB written)"
    else:
        # kernelarc's size (sysfs or cpuid, capped per CPU where a VM claims hundreds of MiB).
        size = job.get("cpu_cache_bytes") or (32 << 20)
        description = f"last-level cache flushed ({2 * size >> 20} MiB written)"
    buffer = torch.empty(2 * size // 4, dtype=torch.int32, device=problem.device)
    return (lambda: buffer.zero_()), description


class BaselineDisagrees(Exception):
    """The definition's baseline code computes something else than its reference."""


def baseline_function(problem, job, values):
    """The function timed as the baseline and what it is: the definition's baseline code once it
    agrees with the reference on `values` within the workload's tolerance, or the definition's
    kernelarc.baseline_tolerance where it declares one (BaselineDisagrees otherwise), or the
    reference when the definition names none."""
    if not problem.definition.get("baseline"):
        return problem.module.run, "the reference"
    module = load_baseline(problem.definition)
    torch = problem.torch
    tolerance = job.get("baseline_tolerance") or job["tolerance"]
    with torch.no_grad():
        expected = problem.outputs(problem.module.run(*values), job["axes"])
        got = problem.outputs(module.run(*values), job["axes"])
    for name, reference in expected.items():
        why = disagreement(torch, got[name], reference, tolerance)
        if why:
            raise BaselineDisagrees(
                f"the baseline code disagrees with the reference on '{name}': {why}")
    if "baseline_tolerance" in job:
        return module.run, (
            f"the definition's baseline code, held to its baseline_tolerance (atol "
            f"{tolerance['max_atol']}, rtol {tolerance['max_rtol']}, "
            f"{tolerance['required_matched_ratio']:.0%} matched)")
    return module.run, "the definition's baseline code"


def disagreement(torch, got, reference, tolerance):
    """Why `got` is outside the tolerance of `reference` (the guard's rule: |got - ref| <= atol +
    rtol * |ref| for a required share of the elements), or None."""
    got, reference = got.double(), reference.double()
    both_nan = torch.isnan(got) & torch.isnan(reference)
    close = ((got - reference).abs() <= tolerance["max_atol"] + tolerance["max_rtol"] *
             reference.abs()) | both_nan | (got == reference)
    total = reference.numel()
    matched = int(close.sum()) if total else 0
    if total == 0 or matched >= tolerance["required_matched_ratio"] * total:
        return None
    finite = torch.isfinite(got) & torch.isfinite(reference)
    worst = float((got - reference)[finite].abs().max()) if bool(finite.any()) else float("nan")
    return (f"{total - matched} of {total} elements outside atol {tolerance['max_atol']} / rtol "
            f"{tolerance['max_rtol']} (largest difference {worst:.4g})")


class WarmupTimeout(Exception):
    """The warm-up calls outlasted the job's warmup_limit_s."""


@contextlib.contextmanager
def time_limit(seconds):
    """Raises WarmupTimeout in the body once `seconds` have passed (none when 0, or off the
    main thread, where no signal is delivered). torch.compile compiles in Python here, so the
    alarm interrupts a compilation too, at its next Python instruction."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise WarmupTimeout()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def timed_calls(job, call_s):
    """Calls per timed loop by the guard's rule for candidates: as many as timing_budget_s holds
    at `call_s` a call (a warm call's time), within [min_iterations, iterations]."""
    most = job["iterations"]
    budget = job.get("timing_budget_s") or 0
    if budget <= 0 or call_s <= 0:
        return most
    least = min(job.get("min_iterations") or most, most)
    return max(least, min(most, int(budget / call_s)))


def warm_up(problem, job, flush, function, values):
    """The job's untimed calls, each flushed and waited for, within its warmup_limit_s; returns
    the last call's seconds (0 without warm-up calls)."""
    last = 0.0
    with time_limit(job.get("warmup_limit_s") or 0):
        for _ in range(job["warmup"]):
            flush()
            begin = time.perf_counter()
            function(*values)
            synchronize(problem)
            last = time.perf_counter() - begin
    return last


def timing_job(problem, job):
    torch = problem.torch
    baseline = job["baseline"]
    if baseline == "compiled" and not hasattr(torch, "compile"):
        return {"unavailable": f"torch.compile unavailable: torch {torch.__version__}"}
    try:
        problem.check_loaded()
        torch.manual_seed(job["seed"])
        values = problem.inputs(job["workload"], job["axes"])
    except Exception as error:
        return {"unavailable": "reference failed: " + describe_exception(error)}
    try:
        function, source = baseline_function(problem, job, values)
    except BaselineDisagrees as error:
        return {"unavailable": str(error)}
    except Exception as error:
        return {"unavailable": "baseline code failed: " + describe_exception(error)}
    baseline = f"{baseline} ({source})"
    if job["baseline"] == "compiled":
        # Dynamo caches compiled code on the function; after a second shape it recompiles with
        # dynamic shapes, a generic kernel a user tuning for one shape would not get. Each
        # workload gets its own static compilation.
        try:
            torch._dynamo.reset()
            function = torch.compile(function, dynamic=False)
        except Exception as error:
            return {"unavailable": "torch.compile failed: " + describe_exception(error)}
    flush, flush_note = cache_flusher(problem, job)
    cuda = problem.device.type == "cuda"
    stage = "torch.compile" if job["baseline"] == "compiled" else source
    try:
        with torch.no_grad():
            calls = timed_calls(job, warm_up(problem, job, flush, function, values))
            if calls < job["iterations"]:
                flush_note += (f"; {calls} timed calls, not {job['iterations']}: the timing "
                               f"budget is {job['timing_budget_s']:g} s")
            if not cuda:
                times = [cpu_call_ns(problem, flush, function, values) for _ in range(calls)]
                return {"times_ns": times,
                        "note": f"{baseline}, time.perf_counter_ns, {flush_note}"}
            end_to_end = [event_call_ns(problem, flush, function, values) for _ in range(calls)]
            spans, kernels = gpu_spans_ns(problem, flush, function, values, calls)
    except WarmupTimeout:
        if job["baseline"] == "compiled":
            torch._dynamo.reset()  # whatever it compiled so far is not used again
        return {"unavailable": f"{stage}: the {job['warmup']} warm-up calls took longer than "
                               f"{job['warmup_limit_s']:g} s (--baseline-warmup-limit)"}
    except Exception as error:
        return {"unavailable": f"{stage} failed: " + describe_exception(error)}
    # A GPU span cannot exceed the events bracketing the same call. On the H200 the profiler
    # once reported 2.7 ms spans for a 0.04 ms F.linear (M=1); such a span is not trusted, and
    # the events, which flatter kernelarc by the launch gaps, are used and said to be used.
    # Under the profiler a launch-bound call (many small kernels) is also stretched by the
    # profiler's own per-launch cost, which shows up the same way.
    if any(span is None for span in spans):
        reason = "the profiler recorded no GPU work for a call"
    elif median(spans) > 1.2 * median(end_to_end) + 5e3:
        reason = (f"profiler span {median(spans) / 1e3:.1f} us exceeds the events' "
                  f"{median(end_to_end) / 1e3:.1f} us")
    else:
        reason = None
    if reason:
        return {"times_ns": end_to_end, "end_to_end_ns": end_to_end,
                "note": f"{baseline}, CUDA events ({reason}), {flush_note}; kernels: {kernels}"}
    return {"times_ns": spans, "end_to_end_ns": end_to_end,
            "note": f"{baseline}, GPU span (CUPTI via torch.profiler), {flush_note}; "
                    f"end_to_end_ns: CUDA events around the Python call; kernels: {kernels}"}


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def cpu_call_ns(problem, flush, function, values):
    flush()
    begin = time.perf_counter_ns()
    function(*values)
    return float(time.perf_counter_ns() - begin)


def event_call_ns(problem, flush, function, values):
    """Time of one call as a Python user sees it: CUDA events around it, launch gaps included."""
    torch = problem.torch
    flush()
    synchronize(problem)
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    function(*values)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e6


def gpu_spans_ns(problem, flush, function, values, iterations):
    """The clock kernelarc times candidates with: first start to last end of every kernel, copy
    and memset a call launched (CUPTI activity records, through the Kineto profiler), one value
    per call. One profiler session covers every call, because starting and stopping a session
    costs far more than the calls; the calls are told apart by the cache flush that precedes
    each. When the flushes cannot be found exactly once per call, a session per call is used.
    Returns the spans and kernel_summary() of what the calls ran (which backend a library op
    dispatched to: SDPA's flash, cuDNN or memory-efficient kernels, say)."""
    flush_names = {name for name, _, _ in profiled_gpu_events(problem, flush)}
    def calls():
        for _ in range(iterations):
            flush()
            synchronize(problem)
            function(*values)
            synchronize(problem)
    events = profiled_gpu_events(problem, calls)
    spans, current, names = [], None, []
    for name, start, end in events:
        if name in flush_names:
            if current is not None:
                spans.append(current)
            current = []
            continue
        if current is not None:
            current.append((start, end))
            names.append(name)
    if current is not None:
        spans.append(current)
    if len(spans) != iterations or not all(spans):
        calls = [one_call_events(problem, flush, function, values) for _ in range(iterations)]
        names = [name for events in calls for name, _, _ in events]
        return [span_of(events) for events in calls], kernel_summary(names, iterations)
    return [span_of(call) for call in spans], kernel_summary(names, iterations)


def kernel_summary(names, calls, most=4, width=80):
    """The GPU activities of `calls` calls by name, most frequent first, with their count per
    call: "flash_fwd_kernel x1, [memset] x2". A name is cut at its template or parameter list,
    and at `width` characters; past `most` names, how many more there were."""
    counts = {}
    for name in names:
        short = name.split("<")[0].split("(")[0].strip() or name
        short = short[len("void "):] if short.startswith("void ") else short
        short = short if len(short) <= width else short[:width - 3] + "..."
        counts[short] = counts.get(short, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    text = ", ".join(f"{name} x{count / calls:g}" for name, count in ranked[:most])
    if len(ranked) > most:
        text += f", {len(ranked) - most} more"
    return text or "none"


def one_call_events(problem, flush, function, values):
    """The GPU events of one call in a profiler session of its own, the cache flushed before."""
    flush()
    return profiled_gpu_events(problem, lambda: function(*values))


def span_of(events):
    """First start to last end of (…, start, end) tuples; None when there are none."""
    if not events:
        return None
    return float(max(event[-1] for event in events) - min(event[-2] for event in events))


def profiled_gpu_events(problem, body):
    """(name, start_ns, end_ns) of every GPU activity `body` caused, in start order."""
    from torch.profiler import ProfilerActivity, profile
    synchronize(problem)
    with profile(activities=[ProfilerActivity.CUDA]) as recorder:
        body()
        synchronize(problem)
    events = []
    for event in recorder.profiler.kineto_results.events():
        # Newer Kineto also records synchronisations (CUDA_SYNC) as GPU events; they are waits,
        # not work the call launched.
        if not str(event.device_type()).endswith("CUDA") or "Sync" in event.name():
            continue
        start = event.start_ns() if hasattr(event, "start_ns") else event.start_us() * 1000
        end = (event.end_ns() if hasattr(event, "end_ns")
               else start + event.duration_us() * 1000)
        events.append((event.name(), start, end))
    return sorted(events, key=lambda event: event[1])


def run_job_file(path):
    """Handles one job file; returns the script's exit code for it."""
    with open(path) as file:
        job_file = json.load(file)
    with open(job_file["results"], "a", buffering=1) as results:
        return handle_jobs(job_file, results)


def handle_jobs(job_file, results):
    def emit(**fields):
        results.write(json.dumps(fields) + "\n")
        results.flush()

    try:
        import torch
    except Exception as error:
        print(f"kernelarc oracle: cannot import torch: {error}", file=sys.stderr)
        return EXIT_NO_TORCH
    device = job_file["device"]
    if device.startswith("cuda") and not torch.cuda.is_available():
        print(f"kernelarc oracle: device {device} requested but torch {torch.__version__} "
              "sees no CUDA device", file=sys.stderr)
        return EXIT_NO_DEVICE
    emit(event="env", python=platform.python_version(), torch=torch.__version__, device=device)
    if not job_file.get("jobs") and not job_file.get("timing"):
        return 0

    with open(job_file["definition"]) as file:
        definition = json.load(file)
    problem = Problem(torch, definition, job_file["problem_dir"], device)
    for job in job_file.get("jobs", []):
        emit(event="start", id=job["id"])
        try:
            trial_job(problem, job)
            emit(event="done", id=job["id"], ok=True)
        except Exception as error:
            kind = ("input" if isinstance(error, InputFault) else
                    "storage" if isinstance(error, StorageFault) else "reference")
            emit(event="done", id=job["id"], ok=False, kind=kind, error=describe_exception(error))
    for job in job_file.get("timing", []):
        emit(event="start", id=job["id"])
        result = timing_job(problem, job)
        result["baseline"] = job["baseline"]
        write_atomically(job["out"], [json.dumps(result).encode()])
        emit(event="done", id=job["id"], ok=True)
    return 0


def serve(fd):
    with os.fdopen(fd) as requests, os.fdopen(os.dup(fd), "w", buffering=1) as replies:
        for line in requests:
            code = run_job_file(line.rstrip("\n"))
            # Tensors of this job file are garbage now: give their device memory back, since
            # the kernels timed next share the device with this idle interpreter.
            gc.collect()
            torch = sys.modules.get("torch")
            if torch is not None and torch.cuda.is_available():
                torch.cuda.empty_cache()
            replies.write(f"{code}\n")
            if code:
                return code
    return 0


def main():
    # The reference's prints must never reach whoever reads our stdout; the replies of
    # --serve go to their own descriptor.
    os.dup2(2, 1)
    if sys.argv[1] == "--serve":
        return serve(int(sys.argv[2]))
    return run_job_file(sys.argv[1])


if __name__ == "__main__":
    sys.exit(main())
