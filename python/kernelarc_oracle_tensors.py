"""Tensor files for the kernelarc oracle: dtype names, a small safetensors reader and writer
(no safetensors or numpy package needed), and the two kinds of job failure.
"""

import ctypes
import json
import math
import os
import struct

# definition.json dtype -> (torch attribute, safetensors name)
DTYPES = {
    "float64": ("float64", "F64"),
    "float32": ("float32", "F32"),
    "float16": ("float16", "F16"),
    "bfloat16": ("bfloat16", "BF16"),
    "float8_e4m3fn": ("float8_e4m3fn", "F8_E4M3"),
    "float8_e5m2": ("float8_e5m2", "F8_E5M2"),
    "int64": ("int64", "I64"),
    "int32": ("int32", "I32"),
    "int16": ("int16", "I16"),
    "int8": ("int8", "I8"),
    "uint8": ("uint8", "U8"),
    "bool": ("bool", "BOOL"),
}


class InputFault(Exception):
    """A problem file (not the reference) is wrong; the parent does not cache this failure."""


class ReferenceFault(Exception):
    """The reference or the definition is wrong."""


# ── dtypes and safetensors ──────────────────────────────────────────────────────


def torch_dtype(torch, name):
    if name not in DTYPES:  # the packed float4 types: definitions may name them, nothing runs them
        raise ReferenceFault(f"dtype {name} is not supported by kernelarc's oracle")
    attribute = DTYPES[name][0]
    if not hasattr(torch, attribute):
        if name.startswith("float8"):
            raise ReferenceFault(f"{name} needs torch >= 2.1 (this is torch {torch.__version__})")
        raise ReferenceFault(f"dtype {name} is not supported by torch {torch.__version__}")
    return getattr(torch, attribute)


def safetensors_name(torch, dtype):
    for name, (attribute, st_name) in DTYPES.items():
        if getattr(torch, attribute, None) == dtype:
            return st_name
    raise ReferenceFault(f"cannot store dtype {dtype} in safetensors")


def tensor_bytes(tensor):
    """Raw bytes of a CPU tensor, without numpy (it may be absent)."""
    flat = tensor.detach().cpu().contiguous().reshape(-1)
    size = flat.numel() * flat.element_size()
    buffer = bytearray(size)
    if size:
        ctypes.memmove((ctypes.c_char * size).from_buffer(buffer), flat.data_ptr(), size)
    return buffer


def write_atomically(path, chunks):
    temporary = f"{path}.tmp-{os.getpid()}"
    try:
        with open(temporary, "wb") as file:
            for chunk in chunks:
                file.write(chunk)
        os.replace(temporary, path)
    except OSError:
        # A full disk must not leave a half-written file behind.
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def write_safetensors(torch, path, tensors):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        tensor = tensors[name]
        blob = tensor_bytes(tensor)
        header[name] = {
            "dtype": safetensors_name(torch, tensor.dtype),
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    write_atomically(path, [struct.pack("<Q", len(text)), text] + blobs)


def read_safetensors_tensor(torch, path, key):
    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError as error:
        raise InputFault(f"{path}: {error.strerror}") from None
    try:
        (length,) = struct.unpack_from("<Q", data, 0)
        header = json.loads(data[8 : 8 + length])
    except (struct.error, ValueError) as error:
        raise InputFault(f"{path}: not a safetensors file ({error})") from None
    if key not in header or key == "__metadata__":
        raise InputFault(f"{path}: no tensor '{key}'")
    entry = header[key]
    by_st_name = {st_name: name for name, (_, st_name) in DTYPES.items()}
    if entry.get("dtype") not in by_st_name:
        raise InputFault(f"{path}: tensor '{key}' has unsupported dtype {entry.get('dtype')}")
    dtype = torch_dtype(torch, by_st_name[entry["dtype"]])
    begin, end = entry["data_offsets"]
    raw = bytearray(data[8 + length + begin : 8 + length + end])
    shape = entry["shape"]
    if len(raw) != math.prod(shape) * torch.empty((), dtype=dtype).element_size():
        raise InputFault(f"{path}: tensor '{key}' has {len(raw)} bytes, its shape needs more")
    if not raw:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(raw, dtype=dtype).reshape(shape)
