"""Shared host memory: buffers of hvd_mem_alloc, which the ranks on this host map, so that a
collective on them reads and reduces the local peers' data in place.

SharedBuffer owns one buffer and frees it when it is collected. Every array over the buffer
keeps its SharedBuffer alive through its base (numpy array -> ctypes array -> owner), so the
memory goes when the last view does. None of this needs init: buffers outlive shutdown.
"""
import ctypes
import operator
import weakref

from . import _errors, _ffi, _tensors

_SIZE_MAX = (1 << (8 * ctypes.sizeof(ctypes.c_size_t))) - 1


class SharedBuffer:
    """`nbytes` of zeroed, page-aligned shared host memory (from mem_alloc). `address` is its
    start; memoryview() and the arrays of shared_zeros/shared_array view it without a copy."""

    def __init__(self, nbytes):
        try:
            nbytes = operator.index(nbytes)
        except TypeError:
            raise TypeError(f"nbytes: expected an int, got {type(nbytes).__name__}") from None
        if nbytes < 0:
            raise ValueError(f"nbytes: {nbytes} is negative")
        if nbytes > _SIZE_MAX:  # ctypes would wrap it around silently
            raise ValueError(f"nbytes: {nbytes} is more than a size_t holds")
        address = ctypes.c_void_p()
        _errors.call("hvd_mem_alloc", nbytes, ctypes.byref(address))
        self.address = address.value
        self.nbytes = nbytes
        # id -> weak reference, one per live ctypes array that views of the buffer hold (ctypes
        # arrays cannot be hashed, so no WeakSet).
        self._views = {}
        # Bound now: at interpreter exit the module's globals may be gone before __del__ runs.
        self._free = _ffi.lib.hvd_mem_free

    def _raw(self):
        """A ctypes array over the bytes that keeps this owner alive."""
        if self.address is None:
            raise ValueError("SharedBuffer: the buffer was freed")
        raw = (ctypes.c_char * self.nbytes).from_address(self.address)
        raw.owner = self
        views = self._views  # the callback must not hold self: raw already does
        ref = weakref.ref(raw, lambda gone: views.pop(id(gone), None))
        views[id(ref)] = ref
        return raw

    def memoryview(self):
        """A writable byte view; it keeps the buffer alive."""
        return memoryview(self._raw()).cast("B")

    def free(self):
        """Frees now; a second call does nothing. While a view of the buffer is alive (an array
        or memoryview not yet collected or released), raises BufferError and frees nothing."""
        if self.address is None:
            return
        if len(self._views):
            raise BufferError(f"SharedBuffer.free: {len(self._views)} views of the buffer are "
                              "still alive; drop or release them first")
        address, self.address = self.address, None
        _errors.check(self._free(address))

    def __del__(self):
        address, self.address = getattr(self, "address", None), None
        if address is not None:
            self._free(address)

    def __repr__(self):
        where = "freed" if self.address is None else hex(self.address)
        return f"SharedBuffer({self.nbytes} bytes at {where})"


def mem_alloc(nbytes):
    """A SharedBuffer of nbytes zeroed bytes. 0 raises HvdcInvalidArgumentError."""
    return SharedBuffer(nbytes)


def mem_size(where):
    """(start address, size in bytes) of the mem_alloc buffer holding `where`: an int address
    anywhere inside it, a SharedBuffer, or an array or buffer over its memory. An address in no
    such buffer raises HvdcInvalidArgumentError."""
    base, nbytes = ctypes.c_void_p(), ctypes.c_size_t()
    _errors.call("hvd_mem_size", _address_of(where), ctypes.byref(base), ctypes.byref(nbytes))
    return base.value, nbytes.value


def _address_of(where):
    if isinstance(where, SharedBuffer):
        return where.address
    if isinstance(where, int) and not isinstance(where, bool):
        return where
    interface = getattr(where, "__array_interface__", None)
    if interface is not None:  # numpy: the first element's address, offsets included
        return interface["data"][0]
    view = _tensors.Py_buffer()
    try:  # _tensors declared the buffer calls of ctypes.pythonapi
        ctypes.pythonapi.PyObject_GetBuffer(where, ctypes.byref(view), _tensors.PYBUF_RECORDS_RO)
    except (TypeError, BufferError):
        raise TypeError(f"where: expected an int address, a SharedBuffer, or an array or "
                        f"buffer, got {type(where).__name__}") from None
    address = view.buf
    ctypes.pythonapi.PyBuffer_Release(ctypes.byref(view))
    return address


def _numpy_dtype_and_size(shape, dtype):
    import numpy as np
    dtype = np.dtype(dtype)
    shape = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else \
        tuple(operator.index(d) for d in shape)
    count = 1
    for dim in shape:
        if dim < 0:
            raise ValueError(f"shape: dimension {dim} is negative")
        count *= dim
    return np, dtype, shape, count * dtype.itemsize


def shared_zeros(shape, dtype="float32"):
    """A new numpy array of zeros in shared host memory; the memory is freed when the last view
    of it is collected. An empty shape (no elements) raises HvdcInvalidArgumentError."""
    np, dtype, shape, nbytes = _numpy_dtype_and_size(shape, dtype)
    if nbytes == 0:
        raise _errors.error_for(_ffi.HVD_ERR_INVALID_ARGUMENT,
                                f"shape: {shape} of {dtype} holds no bytes; shared memory "
                                "needs at least one")
    raw = SharedBuffer(nbytes)._raw()
    return np.frombuffer(raw, dtype=dtype).reshape(shape)


def shared_array(values, dtype=None):
    """A copy of `values` (anything numpy.asarray takes) in shared host memory, as a numpy
    array of its shape and of `dtype` (default: the values' own)."""
    import numpy as np
    source = np.asarray(values, dtype=dtype)
    out = shared_zeros(source.shape, source.dtype)
    out[...] = source
    return out
