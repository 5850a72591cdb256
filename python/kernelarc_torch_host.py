"""Hosts a PyTorch-extension solution (`binding: torch`), or a PyTorch solution written in
Python, inside kernelarc's worker process.

The worker loads a small C library built beside the extension (its `ka_run`); on the first call
that library starts this interpreter and asks `load` for the solution's entry. Each call hands
over DLPack capsules of the guard's own buffers (so outputs are written where the guard reads
them) and the worker's CUDA stream, which becomes torch's current stream for the call.
"""

import contextlib
import ctypes
import importlib.machinery
import importlib.util
import os
import sys
import traceback

import torch
from torch.utils import dlpack

class Entry:
    """The solution's entry point and how to call it (from the definition)."""

    def __init__(self, library, module, entry, meta):
        if library.endswith(".py"):
            # A PyTorch solution: its directory first on the path, for imports among its files.
            sys.path.insert(0, os.path.dirname(library))
            spec = importlib.util.spec_from_file_location(module, library)
        else:
            loader = importlib.machinery.ExtensionFileLoader(module, library)
            spec = importlib.util.spec_from_file_location(module, library, loader=loader)
        extension = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(extension)
        if not hasattr(extension, entry):
            names = sorted(name for name in dir(extension) if not name.startswith("_"))
            raise AttributeError(
                "the solution defines no `%s` (spec.entry_point); it defines: %s"
                % (entry, ", ".join(names) or "nothing"))
        self.function = getattr(extension, entry)
        # The worker runs on the cores the guard gave it; torch's pool defaults to every core of
        # the machine, and its threads would then spin against each other on fewer.
        torch.set_num_threads(max(1, len(os.sched_getaffinity(0))))
        _keep_freed_memory()
        self.dps = meta["destination_passing_style"]
        self.cuda = meta["cuda"]
        self.inputs = meta["inputs"]    # [{"name", "dtype", "scalar": bool}]
        self.outputs = meta["outputs"]  # [{"name", "dtype"}]

    def device(self):
        return torch.cuda.current_device() if self.cuda else -1

    def __call__(self, inputs, outputs, stream):
        """Runs one call; returns None, or the reason it failed (the worker reports it)."""
        try:
            self._call(inputs, outputs, stream)
            return None
        except Exception:  # the guard reports any failure of the candidate as its result
            return traceback.format_exc(limit=8)

    def _call(self, inputs, outputs, stream):
        arguments = [self._argument(capsule, spec) for capsule, spec in zip(inputs, self.inputs)]
        destinations = [_tensor(capsule, spec["dtype"]) for capsule, spec in zip(outputs, self.outputs)]
        on_stream = contextlib.nullcontext()
        if self.cuda:
            on_stream = torch.cuda.stream(torch.cuda.ExternalStream(stream))
        with torch.no_grad(), on_stream:
            if self.dps:
                self.function(*arguments, *destinations)
                return
            returned = self.function(*arguments)
            results = returned if isinstance(returned, (tuple, list)) else (returned,)
            if len(results) != len(destinations):
                raise ValueError("the solution returned %d value(s); the definition has %d output(s)"
                                 % (len(results), len(destinations)))
            for result, destination, spec in zip(results, destinations, self.outputs):
                if not isinstance(result, torch.Tensor) or result.shape != destination.shape:
                    raise ValueError("output `%s`: returned %s, expected a tensor of shape %s"
                                     % (spec["name"], _describe(result), list(destination.shape)))
                if result.dtype != destination.dtype:
                    raise ValueError("output `%s`: returned dtype %s, expected %s"
                                     % (spec["name"], result.dtype, destination.dtype))
                destination.copy_(result)

    def _argument(self, capsule, spec):
        tensor = _tensor(capsule, spec["dtype"])
        return tensor.item() if spec["scalar"] else tensor


def _keep_freed_memory():
    """Keeps the memory torch frees for its next call's temporaries, as a long-running PyTorch
    process reaches by itself: glibc would hand large blocks back to the system after each call,
    and the next call would fault every page in again (tens of ms per call on a CPU)."""
    try:
        libc = ctypes.CDLL(None)
        m_trim_threshold, m_mmap_threshold = -1, -3
        libc.mallopt(m_mmap_threshold, 32 << 20)  # glibc's largest: blocks below it use the heap
        libc.mallopt(m_trim_threshold, 1 << 30)
    except (OSError, AttributeError):
        pass  # not glibc: its allocator decides


def _tensor(capsule, dtype):
    # Types DLPack (or this torch's reader of it) lacks arrive as bytes and are viewed here.
    tensor = dlpack.from_dlpack(capsule)
    wanted = getattr(torch, dtype, None)  # the format's dtype names are torch's
    if isinstance(wanted, torch.dtype) and tensor.dtype != wanted:
        tensor = tensor.view(wanted)
    return tensor


def _describe(value):
    if isinstance(value, torch.Tensor):
        return "a tensor of shape %s" % list(value.shape)
    return "a %s" % type(value).__name__


def load(library, module, entry, meta):
    return Entry(library, module, entry, meta)
