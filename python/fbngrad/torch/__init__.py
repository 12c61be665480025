"""fbngrad as PyTorch's CPU batch-norm backward.

    import fbngrad.torch            # from now on fbngrad serves nn.BatchNorm*'s CPU backward
    with fbngrad.torch.disabled():  # PyTorch's own kernel inside the block
        ...
    fbngrad.torch.stats()           # which kernel served how many calls

Importing this module loads libfbngrad_torch.so (integrations/torch/) and registers its CPU
kernels for aten::native_batch_norm_backward (and aten::batch_norm_backward in PyTorch 2.x).
They run fbngrad for float32, bfloat16 and float16 inputs of 2 to 5 dimensions, contiguous
or channels_last / channels_last_3d, and hand every other call (float64, other strides, other
devices) to PyTorch's own CPU kernel unchanged. fbngrad's parallel loops then run on
PyTorch's intra-op thread pool, so torch.set_num_threads governs them. docs/pytorch.md says
more.
"""

import contextlib as _contextlib
import ctypes as _ctypes
import threading as _threading

import torch as _torch

from .. import library_path as _library_path

__all__ = ["enable", "disable", "is_enabled", "disabled", "enabled", "stats", "reset_stats",
           "last_fallback", "COUNTERS"]

# The counters of libfbngrad_torch.so, in its order (integrations/torch/fbngrad_torch.cpp).
COUNTERS = (
    "fused",          # fbngrad's fused op: grad_input (and grad_weight / grad_bias when asked)
    "reduce_only",    # fbngrad's split-phase sums: grad_weight / grad_bias without grad_input
    "apply_only",     # eval, grad_input alone: fbngrad's apply step, no sums
    "nothing_asked",  # output_mask all false: no work
    "fallback",       # PyTorch's own kernel (last_fallback() says why)
    "grad_out_copy",  # grad_out was copied into the input's layout first (counted as well)
)


def _load():
    path = _library_path("torch", "libfbngrad_torch.so")
    # PyTorch's libraries are loaded (import torch above): the library binds to those. PyDLL:
    # calls keep the GIL (enable/disable change PyTorch's process-wide warning handler briefly).
    lib = _ctypes.PyDLL(path)
    built = lib.fbngrad_torch_built_against
    built.restype = _ctypes.c_char_p
    built_against = built().decode()
    running = ".".join(_torch.__version__.split(".")[:2])
    if built_against != running:
        # A C++ library built against another PyTorch can crash on load or on call.
        raise ImportError(
            f"fbngrad.torch: {path} was built against PyTorch {built_against}, this is PyTorch "
            f"{_torch.__version__}: reinstall fbngrad with this PyTorch importable "
            f"(`pip install --no-build-isolation <fbngrad repository>`)")
    lib.fbngrad_torch_enable.argtypes = [_ctypes.c_char_p, _ctypes.c_size_t]
    lib.fbngrad_torch_enable.restype = _ctypes.c_int
    lib.fbngrad_torch_disable.restype = None
    lib.fbngrad_torch_enabled.restype = _ctypes.c_int
    lib.fbngrad_torch_counter_count.restype = _ctypes.c_int
    lib.fbngrad_torch_counters.argtypes = [_ctypes.POINTER(_ctypes.c_int64)]
    lib.fbngrad_torch_counters.restype = None
    lib.fbngrad_torch_reset_counters.restype = None
    lib.fbngrad_torch_last_fallback.argtypes = [_ctypes.c_char_p, _ctypes.c_size_t]
    lib.fbngrad_torch_last_fallback.restype = _ctypes.c_size_t
    lib.fbngrad_torch_fbngrad_version.restype = _ctypes.c_char_p
    lib.fbngrad_torch_has_batch_norm_backward.restype = _ctypes.c_int
    if lib.fbngrad_torch_counter_count() != len(COUNTERS):
        raise ImportError(f"fbngrad.torch: {path} does not match this module (counters)")
    return lib


_lib = _load()
_lock = _threading.Lock()

#: The fbngrad version inside the kernel library.
fbngrad_version = _lib.fbngrad_torch_fbngrad_version().decode()
#: The operators whose CPU kernel fbngrad provides while enabled.
operators = ("aten::native_batch_norm_backward",) + (
    ("aten::batch_norm_backward",) if _lib.fbngrad_torch_has_batch_norm_backward() else ())


def enable():
    """Registers fbngrad's CPU kernels (a no-op when they are registered)."""
    with _lock:
        error = _ctypes.create_string_buffer(1024)
        if _lib.fbngrad_torch_enable(error, len(error)) != 0:
            raise RuntimeError(f"fbngrad.torch: cannot register the kernels: {error.value.decode()}")


def disable():
    """Removes fbngrad's kernels: PyTorch's own CPU kernels serve again."""
    with _lock:
        _lib.fbngrad_torch_disable()


def is_enabled():
    """True while fbngrad's kernels are registered."""
    return bool(_lib.fbngrad_torch_enabled())


@_contextlib.contextmanager
def _state(on):
    with _lock:
        was = bool(_lib.fbngrad_torch_enabled())
    (enable if on else disable)()
    try:
        yield
    finally:
        (enable if was else disable)()


def disabled():
    """A context manager: PyTorch's own kernels inside, the previous state after."""
    return _state(False)


def enabled():
    """A context manager: fbngrad's kernels inside, the previous state after."""
    return _state(True)


def stats():
    """The calls served since the last reset_stats(), by path (see COUNTERS)."""
    values = (_ctypes.c_int64 * len(COUNTERS))()
    _lib.fbngrad_torch_counters(values)
    return dict(zip(COUNTERS, values))


def reset_stats():
    """Sets every counter to zero and forgets the last fallback's reason."""
    _lib.fbngrad_torch_reset_counters()


def last_fallback():
    """Why the last call since reset_stats() went to PyTorch's kernel, or ''."""
    buf = _ctypes.create_string_buffer(512)
    _lib.fbngrad_torch_last_fallback(buf, len(buf))
    return buf.value.decode()


enable()
