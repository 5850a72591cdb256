"""Output shapes of the windowed ops (pooling, convolution) for the kernelarc tracer.

Some torch versions have no meta kernel for some of them (torch 1.13: max_pool3d_with_indices),
and the CPU fallback refuses large tensors; the recorder then makes the result from these
shapes: empty meta tensors, contiguous, as the op's CPU kernel would return them.
"""


def spatial_list(value, rank, default=None):
    """A kernel_size / stride / padding argument as `rank` integers (torch repeats a single
    value; an empty stride means the kernel size)."""
    if value is None or (isinstance(value, (list, tuple)) and len(value) == 0):
        value = default
    if isinstance(value, int):
        return [value] * rank
    value = [int(item) for item in value]
    return value * rank if len(value) == 1 else value


def pooled_size(size, kernel, stride, padding, dilation, ceil_mode):
    """torch's pooling_output_shape."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


def argument(args, kwargs, position, name, default=None):
    if position < len(args):
        return args[position]
    return kwargs.get(name, default)


def pool_shape(name, args, kwargs):
    rank = int(name.split("_pool")[1][0])
    x = args[0]
    kernel = spatial_list(argument(args, kwargs, 1, "kernel_size"), rank)
    stride = spatial_list(argument(args, kwargs, 2, "stride"), rank, kernel)
    padding = spatial_list(argument(args, kwargs, 3, "padding", 0), rank)
    if name.startswith("avg"):
        dilation = [1] * rank
        ceil_mode = bool(argument(args, kwargs, 4, "ceil_mode", False))
    else:
        dilation = spatial_list(argument(args, kwargs, 4, "dilation", 1), rank)
        ceil_mode = bool(argument(args, kwargs, 5, "ceil_mode", False))
    lead = list(x.shape[:x.dim() - rank])
    spatial = x.shape[x.dim() - rank:]
    return lead + [pooled_size(size, k, s, p, d, ceil_mode)
                   for size, k, s, p, d in zip(spatial, kernel, stride, padding, dilation)]


def adaptive_shape(name, args, kwargs):
    rank = int(name.split("_pool")[1][0])
    x = args[0]
    output_size = spatial_list(argument(args, kwargs, 1, "output_size"), rank)
    return list(x.shape[:x.dim() - rank]) + output_size


def convolution_shape(args, kwargs):
    x, weight = args[0], args[1]
    rank = weight.dim() - 2
    stride = spatial_list(argument(args, kwargs, 3, "stride", 1), rank)
    padding = spatial_list(argument(args, kwargs, 4, "padding", 0), rank)
    dilation = spatial_list(argument(args, kwargs, 5, "dilation", 1), rank)
    transposed = bool(argument(args, kwargs, 6, "transposed", False))
    output_padding = spatial_list(argument(args, kwargs, 7, "output_padding", 0), rank)
    groups = int(argument(args, kwargs, 8, "groups", 1))
    kernel = list(weight.shape[2:])
    spatial = x.shape[2:]
    if transposed:
        channels = weight.shape[1] * groups
        sizes = [(i - 1) * s - 2 * p + d * (k - 1) + op + 1 for i, k, s, p, d, op in
                 zip(spatial, kernel, stride, padding, dilation, output_padding)]
    else:
        channels = weight.shape[0]
        sizes = [(i + 2 * p - d * (k - 1) - 1) // s + 1
                 for i, k, s, p, d in zip(spatial, kernel, stride, padding, dilation)]
    return [x.shape[0], channels] + sizes


def meta_result(torch, func, args, kwargs):
    """The result of windowed op `func` as empty meta tensors, or None for any other op."""
    name = func.overloadpacket.__name__.lstrip("_")
    x = args[0] if args else None
    if not isinstance(x, torch.Tensor):
        return None
    with_indices = name.endswith("_with_indices") or name.startswith("adaptive_max_pool")
    if name in ("convolution", "convolution_overrideable"):
        shape = convolution_shape(args, kwargs)
    elif name.startswith("adaptive_") and "_pool" in name:
        shape = adaptive_shape(name, args, kwargs)
    elif (name.startswith("avg_pool") or name.startswith("max_pool")) and \
            not name.endswith("backward"):
        shape = pool_shape(name.replace("_with_indices", ""), args, kwargs)
    else:
        return None
    values = torch.empty(shape, dtype=x.dtype, device="meta")
    if with_indices:
        return values, torch.empty(shape, dtype=torch.int64, device="meta")
    return values

