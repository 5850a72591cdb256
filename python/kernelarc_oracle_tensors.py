"""Tensor files for the kernelarc oracle: dtype names, a small safetensors reader and writer
(no safetensors or numpy package needed), and the two kinds of job failure.
"""

import ctypes
import json
import math
import os
import socket
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
    # Two E2M1 values a byte, the first in the low nibble. SOL-ExecBench reads both names as
    # torch.float4_e2m1fn_x2, whose shape counts bytes; a safetensors header counts values.
    "float4_e2m1fn_x2": ("float4_e2m1fn_x2", "F4"),
    "float4_e2m1": ("float4_e2m1fn_x2", "F4"),
}
PACKED_ST_NAME = "F4"


class InputFault(Exception):
    """A problem file (not the reference) is wrong; the parent does not cache this failure."""


class ReferenceFault(Exception):
    """The reference or the definition is wrong."""


# ── dtypes and safetensors ──────────────────────────────────────────────────────


def torch_dtype(torch, name):
    if name not in DTYPES:
        raise ReferenceFault(f"dtype {name} is not supported by kernelarc's oracle")
    attribute = DTYPES[name][0]
    if not hasattr(torch, attribute):
        if name.startswith("float8"):
            raise ReferenceFault(f"{name} needs torch >= 2.1 (this is torch {torch.__version__})")
        if name.startswith("float4"):
            raise ReferenceFault(f"{name} needs torch >= 2.8 (torch.float4_e2m1fn_x2; this is "
                                 f"torch {torch.__version__})")
        raise ReferenceFault(f"dtype {name} is not supported by torch {torch.__version__}")
    return getattr(torch, attribute)


def is_packed(torch, dtype):
    return dtype == getattr(torch, "float4_e2m1fn_x2", None)


def safetensors_name(torch, dtype):
    for name, (attribute, st_name) in DTYPES.items():
        if getattr(torch, attribute, None) == dtype:
            return st_name
    raise ReferenceFault(f"cannot store dtype {dtype} in safetensors")


def header_shape(torch, tensor):
    """The shape a safetensors header records: F4 counts values, two per byte."""
    shape = list(tensor.shape)
    if is_packed(torch, tensor.dtype):
        if not shape:
            raise ReferenceFault(f"a 0-D {tensor.dtype} tensor has no dimension to pack along")
        shape[-1] *= 2
    return shape


def tensor_bytes(tensor):
    """The raw bytes of a CPU tensor, without numpy (it may be absent): a view of the tensor's own
    memory, which it keeps alive. A copy into a bytes object cost a zero-filled allocation and a
    pass over the data per tensor, a third of a second per 117 MiB on the CPU machine."""
    flat = tensor.detach().cpu().contiguous().reshape(-1)
    size = flat.numel() * flat.element_size()
    if not size:
        return memoryview(b"")
    view = (ctypes.c_char * size).from_address(flat.data_ptr())
    view.tensor = flat  # the memory's owner, for as long as the view lives
    return memoryview(view).cast("B")


def process_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def remove_dead_writers_temporaries(prefix):
    """Removes the temporaries `prefix` + pid whose writer is gone: an interpreter killed mid-write
    (a stop request, the watchdog, the out-of-memory killer) leaves one, gigabytes for a GPU-sized
    draw. Only this host's are named by `prefix`; a pid alive here may be another writer of the
    same file, and is left alone."""
    directory, name = os.path.split(prefix)
    try:
        entries = os.listdir(directory or ".")
    except OSError:
        return
    for entry in entries:
        pid = entry[len(name):]
        if not entry.startswith(name) or not pid.isdigit() or process_alive(int(pid)):
            continue
        try:
            os.unlink(os.path.join(directory, entry))
        except OSError:
            pass  # another writer removed it first


def write_atomically(path, chunks):
    prefix = f"{path}.tmp-{socket.gethostname()}-"
    remove_dead_writers_temporaries(prefix)
    temporary = f"{prefix}{os.getpid()}"
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
            "shape": header_shape(torch, tensor),
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
            return read_tensor(torch, path, file, key)
    except OSError as error:
        raise InputFault(f"{path}: {error.strerror}") from None


def read_tensor(torch, path, file, key):
    """The tensor `key` of an open safetensors file. Only its own bytes are read, once, into the
    buffer the tensor then uses: reading the file whole and slicing it copied a 117 MiB tensor
    three times (1.2 s on the CPU machine)."""
    size = os.fstat(file.fileno()).st_size
    try:
        (length,) = struct.unpack("<Q", file.read(8))
        header = json.loads(file.read(min(length, size)))
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
    # The bytes a slice of the whole file would hold: none past its end.
    start, stop, _ = slice(8 + length + begin, 8 + length + end).indices(size)
    file.seek(start)
    raw = bytearray(max(0, stop - start))
    file.readinto(raw)
    shape = list(entry["shape"])
    packed = entry["dtype"] == PACKED_ST_NAME
    if packed:
        if not shape or shape[-1] % 2:
            raise InputFault(f"{path}: tensor '{key}' is F4, two values a byte along the last "
                             f"dimension, so it needs an even last dimension, got {shape}")
        shape[-1] //= 2
    element_size = 1 if packed else torch.empty((), dtype=dtype).element_size()
    if len(raw) != math.prod(shape) * element_size:
        raise InputFault(f"{path}: tensor '{key}' has {len(raw)} bytes, its shape needs "
                         f"{math.prod(shape) * element_size}")
    if not raw:
        return torch.empty(shape, dtype=dtype)
    # frombuffer and reshape through uint8, which every torch can, then reinterpret.
    flat = torch.frombuffer(raw, dtype=torch.uint8 if packed else dtype)
    return (flat.view(dtype) if packed else flat).reshape(shape)
