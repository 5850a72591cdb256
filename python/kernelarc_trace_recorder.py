"""The op recorder of the kernelarc tracer: a TorchDispatchMode that records every ATen op the
reference runs, with the tensors it reads and makes, in the raw form of one trace (sizes as
plain integers; kernelarc_trace_merge.py turns two of them into the op graph).

Works on torch 1.13 and 2.x: it uses only TorchDispatchMode, OpOverload._schema and
torch._decomp.decomposition_table, which both have.
"""

import math

from torch.utils._python_dispatch import TorchDispatchMode

from kernelarc_trace_shapes import meta_result

# docs/RECOGNITION.md §1: the ops the lowering knows; every other ATen op is decomposed when
# torch._decomp can, so composite ops arrive as these primitives.
KNOWN_OPS = frozenset("""
view _unsafe_view reshape expand expand_as view_as t transpose permute unsqueeze squeeze slice
select narrow alias detach lift_fresh as_strided diagonal unfold split split_with_sizes chunk
unbind movedim
abs neg exp exp2 expm1 log log2 log10 log1p sqrt rsqrt reciprocal sin cos tan asin acos atan
sinh cosh tanh sigmoid erf erfc relu gelu silu softplus elu selu celu leaky_relu hardtanh
hardsigmoid hardswish hardshrink softshrink threshold mish logit floor ceil round trunc frac
sign sgn clamp clamp_min clamp_max pow square add sub rsub mul div true_divide floor_divide
maximum minimum fmax fmin fmod remainder atan2 xlogy where eq ne lt le gt ge logical_and
logical_or logical_xor logical_not bitwise_not isnan isinf isfinite nan_to_num masked_fill lerp
addcmul addcdiv _to_copy to clone copy contiguous fill zeros_like ones_like full_like empty_like
zeros ones full empty scalar_tensor arange tril triu diag diag_embed eye cat stack flip roll
repeat constant_pad_nd index_select gather index
sum mean amax amin max min prod argmax argmin var std var_mean std_mean norm linalg_vector_norm
logsumexp all any
_softmax _log_softmax native_layer_norm native_group_norm native_batch_norm
_native_batch_norm_legit _native_batch_norm_legit_no_training mse_loss l1_loss smooth_l1_loss
huber_loss kl_div nll_loss_forward nll_loss2d_forward binary_cross_entropy
cumsum cumprod logcumsumexp cummax cummin
topk sort argsort
index_put index_put_ index_add index_add_ index_copy index_copy_ scatter scatter_ scatter_add
scatter_add_
mm bmm addmm baddbmm mv addmv dot outer
convolution _convolution avg_pool1d avg_pool2d avg_pool3d max_pool1d max_pool2d max_pool3d
max_pool1d_with_indices max_pool2d_with_indices max_pool3d_with_indices adaptive_avg_pool1d
adaptive_avg_pool2d adaptive_avg_pool3d _adaptive_avg_pool2d _adaptive_avg_pool3d
adaptive_max_pool1d adaptive_max_pool2d adaptive_max_pool3d
""".split())

# Ops whose result depends on tensor values: traced on real data they would bake one draw of
# random inputs into the graph.
DATA_DEPENDENT_OPS = frozenset("""
_local_scalar_dense item is_nonzero equal nonzero nonzero_static masked_select unique _unique
_unique2 unique_dim unique_consecutive bincount histc
""".split())

CONSTANT_LIMIT = 4096  # elements; a bigger tensor from outside the trace is not a constant


class TraceFailure(Exception):
    """The reference cannot be turned into an op graph; the message says why."""


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def storage_key(tensor):
    """Identity of the memory a tensor views (meta tensors have storages too)."""
    if hasattr(tensor, "untyped_storage"):
        return tensor.untyped_storage()._cdata
    return tensor.storage()._cdata


def plain_number(value):
    """A constant's element for JSON: inf and nan as strings, bools as 0/1."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


class Recorder(TorchDispatchMode):
    """Records one run of the reference. `device` is "meta" or "cpu"; `sentinels` maps the float
    value passed for each float scalar input to its name."""

    def __init__(self, torch, device, sentinels):
        super().__init__()
        self.torch = torch
        self.device = device
        self.sentinels = sentinels
        self.values = []
        self.buffers = []
        self.nodes = []
        self.value_of = {}  # id(tensor) -> value id; every tensor is kept alive in `held`
        self.buffer_of = {}  # storage key -> buffer id
        self.runnable = {}  # id(constant tensor) -> the tensor the ops run on (meta copy)
        self.held = []
        self.decomposing = set()
        self.paused = False  # while a literal tensor is built (LiteralTensors)

    # ── values and buffers ──────────────────────────────────────────────────────

    def add_buffer(self, source):
        buffer = {"id": len(self.buffers), **source}
        self.buffers.append(buffer)
        return buffer["id"]

    def add_value(self, tensor, buffer):
        value = {"id": len(self.values), "dtype": dtype_name(tensor.dtype),
                 "shape": list(tensor.shape), "stride": list(tensor.stride()),
                 "offset": tensor.storage_offset(), "buffer": buffer}
        self.values.append(value)
        self.value_of[id(tensor)] = value["id"]
        self.held.append(tensor)
        return value["id"]

    def add_input(self, name, tensor):
        buffer = self.add_buffer({"source": "input", "input": name})
        self.buffer_of[storage_key(tensor)] = buffer
        return self.add_value(tensor, buffer)

    def add_constant(self, tensor):
        """A tensor the reference made outside the trace (torch.tensor(...) on torch 1.13, a
        module-level table): a constant buffer when small and readable, else a failure."""
        torch = self.torch
        description = f"shape {list(tensor.shape)}, dtype {dtype_name(tensor.dtype)}"
        if isinstance(tensor, torch.nn.Parameter) or tensor.requires_grad:
            raise TraceFailure("the reference uses a tensor that is not one of its inputs (a "
                               f"module parameter?): {description}")
        if tensor.device.type == "meta" or tensor.numel() > CONSTANT_LIMIT:
            raise TraceFailure("the reference uses a tensor that is not one of its inputs, is "
                               f"not made by an op it runs and is not a small constant: "
                               f"{description}")
        data = tensor.detach().to("cpu").contiguous()
        readable = data.float() if data.is_floating_point() and data.dtype != torch.float64 \
            else data
        buffer = self.add_buffer({"source": "constant", "dtype": dtype_name(tensor.dtype),
                                  "shape": list(tensor.shape),
                                  "data": [plain_number(x) for x in readable.flatten().tolist()]})
        runnable = data.to(self.device)
        self.buffer_of[storage_key(runnable)] = buffer
        self.runnable[id(tensor)] = runnable
        self.held.append(tensor)
        value = self.add_value(runnable, buffer)
        self.value_of[id(tensor)] = value
        return value

    def value_id(self, tensor):
        found = self.value_of.get(id(tensor))
        return found if found is not None else self.add_constant(tensor)

    def run_form(self, tensor):
        """The tensor an op runs on: a constant's copy on the trace's device, else itself."""
        return self.runnable.get(id(tensor), tensor)

    # ── arguments ───────────────────────────────────────────────────────────────

    def encode(self, argument):
        torch = self.torch
        if isinstance(argument, torch.Tensor):
            return {"value": self.value_id(argument)}
        if isinstance(argument, bool):
            return {"bool": argument}
        if isinstance(argument, int):
            return {"int": argument}
        if isinstance(argument, float):
            if argument in self.sentinels:
                return {"input": self.sentinels[argument]}
            if math.isfinite(argument):
                return {"float": argument}
            return {"float": "nan" if math.isnan(argument) else
                    ("inf" if argument > 0 else "-inf")}
        if argument is None:
            return {"none": True}
        if isinstance(argument, str):
            return {"string": argument}
        if isinstance(argument, torch.dtype):
            return {"dtype": dtype_name(argument)}
        if isinstance(argument, torch.device):
            return {"device": str(argument)}
        if isinstance(argument, (list, tuple)):
            return {"list": [self.encode(item) for item in argument]}
        return {"other": repr(argument)}

    def runnable_arguments(self, argument):
        if isinstance(argument, (list, tuple)):
            return type(argument)(self.runnable_arguments(item) for item in argument)
        if isinstance(argument, self.torch.Tensor):
            return self.run_form(argument)
        return argument

    # ── the dispatch hook ───────────────────────────────────────────────────────

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.paused:
            return func(*args, **kwargs)
        namespace, name = str(func).split(".")[0], func.overloadpacket.__name__
        if namespace == "prims" and name == "convert_element_type":
            # Decompositions cast with this prim; the lowering knows the ATen form.
            with self:
                return self.torch.ops.aten._to_copy.default(args[0], dtype=args[1])
        if name in DATA_DEPENDENT_OPS and self.device != "meta":
            raise TraceFailure(f"the reference reads tensor values ({func}), so what it "
                               "computes depends on the data")
        if namespace == "aten" and name not in KNOWN_OPS and func not in self.decomposing:
            decomposed = self.try_decomposition(func, args, kwargs)
            if decomposed is not None:
                return decomposed[0]
        return self.record(func, args, kwargs)

    def try_decomposition(self, func, args, kwargs):
        """(result,) when torch._decomp decomposes `func` here, its pieces recorded; None when
        it has no decomposition or the decomposition fails (nothing of it is kept then)."""
        from torch._decomp import decomposition_table
        decomposition = decomposition_table.get(func)
        if decomposition is None:
            return None
        mark = (len(self.values), len(self.buffers), len(self.nodes), len(self.held))
        self.decomposing.add(func)
        try:
            with self:
                return (decomposition(*args, **kwargs),)
        except TraceFailure:
            raise
        except Exception:
            self.roll_back(mark)
            return None
        finally:
            self.decomposing.discard(func)

    def roll_back(self, mark):
        values, buffers, nodes, held = mark
        del self.values[values:], self.buffers[buffers:], self.nodes[nodes:], self.held[held:]
        self.value_of = {key: value for key, value in self.value_of.items() if value < values}
        self.buffer_of = {key: buffer for key, buffer in self.buffer_of.items()
                          if buffer < buffers}
        alive = {id(tensor) for tensor in self.held}
        self.runnable = {key: tensor for key, tensor in self.runnable.items() if key in alive}

    def record(self, func, args, kwargs):
        node = {"id": len(self.nodes), "op": str(func), "view": False,
                "args": [self.encode(argument) for argument in args],
                "kwargs": {key: self.encode(argument) for key, argument in kwargs.items()}}
        run_args = self.runnable_arguments(args)
        run_kwargs = {key: self.runnable_arguments(argument) for key, argument in kwargs.items()}
        schema_arguments = {argument.name: argument for argument in func._schema.arguments}
        if self.device == "meta" and "device" in schema_arguments:
            # Factory ops and .to(device) make meta tensors too, whatever device they name.
            run_kwargs["device"] = self.torch.device("meta")
            if run_kwargs.get("pin_memory"):
                run_kwargs["pin_memory"] = False
        try:
            result = func(*run_args, **run_kwargs)
        except Exception:
            # A windowed op without a meta kernel in this torch version gets its result's shape.
            result = meta_result(self.torch, func, run_args, run_kwargs) \
                if self.device == "meta" else None
            if result is None:
                raise

        mutates = any(argument.alias_info is not None and argument.alias_info.is_write
                      for argument in func._schema.arguments)
        read_storages = {storage_key(tensor) for tensor in self.tensors_in((run_args, run_kwargs))}
        outputs = self.tensors_in(result)
        node["view"] = bool(outputs) and not mutates and all(
            storage_key(tensor) in read_storages for tensor in outputs)
        node["outputs"] = []
        for tensor in outputs:
            key = storage_key(tensor)
            if key not in self.buffer_of:
                self.buffer_of[key] = self.add_buffer({"source": "node", "node": node["id"]})
            # A tensor an in-place op returns is the mutated one: it gets a new value, so later
            # reads see the op's result.
            node["outputs"].append(self.add_value(tensor, self.buffer_of[key]))
        self.nodes.append(node)
        return result

    def tensors_in(self, structure):
        torch = self.torch
        if isinstance(structure, torch.Tensor):
            return [structure]
        if isinstance(structure, (list, tuple)):
            return [tensor for item in structure for tensor in self.tensors_in(item)]
        if isinstance(structure, dict):
            return [tensor for item in structure.values() for tensor in self.tensors_in(item)]
        return []


LITERAL_FACTORIES = ("tensor", "as_tensor")


def holds_tensors(torch, data):
    if isinstance(data, torch.Tensor):
        return True
    if isinstance(data, (list, tuple)):
        return any(holds_tensors(torch, item) for item in data)
    return False


def repeat_interleave_by_views(tensor, repeats, dim=None, output_size=None):
    """tensor.repeat_interleave(repeats, dim) for an int `repeats`, as the views it amounts to:
    each slice along `dim` repeated in place, i.e. unsqueeze, expand, then merge the two axes.
    Run as itself, the op draws its index from a tensor it fills in place (empty, fill_,
    repeat_interleave.Tensor, index_select), which the lowering cannot follow; as views it is the
    broadcast the attention and MoE references mean by it (GQA's shared kv heads, a scale per
    block of values)."""
    del output_size  # only a hint of the result's length, which the views know
    if dim is None:
        tensor, dim = tensor.reshape(-1), 0
    dim = dim % tensor.dim()
    shape = list(tensor.shape)
    expanded = tensor.unsqueeze(dim + 1).expand(*shape[:dim + 1], repeats, *shape[dim + 1:])
    return expanded.reshape(*shape[:dim], shape[dim] * repeats, *shape[dim + 1:])


def literal_tensors(torch, recorder):
    """A mode over the reference's torch calls, for what the ATen ops alone would lose:
    - torch.tensor(...) and torch.as_tensor(...) of Python numbers, which the reference builds
      inside its forward (`torch.min(x, torch.tensor(0.5, device=x.device))`), become the
      recorder's constants. Without it their values are lost: the factories do not dispatch an
      op on torch 1.13, and on meta tensors there is no value to read.
    - repeat_interleave by an int count runs as views (repeat_interleave_by_views)."""
    from torch.overrides import TorchFunctionMode

    class LiteralTensors(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            name = getattr(func, "__name__", "")
            if name == "repeat_interleave" and len(args) >= 2 and \
                    isinstance(args[0], torch.Tensor) and args[0].dim() > 0 and \
                    isinstance(args[1], int) and not isinstance(args[1], bool):
                return repeat_interleave_by_views(*args, **kwargs)
            if name not in LITERAL_FACTORIES or not args or holds_tensors(torch, args[0]):
                return func(*args, **kwargs)
            kwargs.pop("device", None)
            kwargs.pop("pin_memory", None)
            # Built on the CPU, with its data, and registered: nothing of it is an op of the
            # reference, so the recorder lets these calls through unrecorded.
            recorder.paused = True
            try:
                value = func(*args, **kwargs)
                recorder.add_constant(value)
            finally:
                recorder.paused = False
            return recorder.run_form(value)

    return LiteralTensors()
