"""Python arrays as hvd_tensor_t, zero-copy, and results of the input's kind.

Inputs: objects with __dlpack__ first (numpy >= 1.22, torch), then the buffer protocol
(array.array, bytearray, memoryview, numpy without DLPack). An Export pins the memory (a consumed
DLPack capsule or a Py_buffer) until release(), which the op's handle calls once the op is over.
"""
import array
import ctypes
import sys

from . import _dlpack, _errors, _ffi

_api = ctypes.pythonapi


class Py_buffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int),
                ("ndim", ctypes.c_int), ("format", ctypes.c_char_p),
                ("shape", ctypes.POINTER(ctypes.c_ssize_t)),
                ("strides", ctypes.POINTER(ctypes.c_ssize_t)),
                ("suboffsets", ctypes.POINTER(ctypes.c_ssize_t)), ("internal", ctypes.c_void_p)]


_api.PyObject_GetBuffer.argtypes = [ctypes.py_object, ctypes.POINTER(Py_buffer), ctypes.c_int]
_api.PyObject_GetBuffer.restype = ctypes.c_int
_api.PyBuffer_Release.argtypes = [ctypes.POINTER(Py_buffer)]
_api.PyBuffer_Release.restype = None
_api.PyBuffer_IsContiguous.argtypes = [ctypes.POINTER(Py_buffer), ctypes.c_char]
_api.PyBuffer_IsContiguous.restype = ctypes.c_int
_PYBUF_WRITABLE, PYBUF_RECORDS_RO = 0x0001, 0x001C  # STRIDES | FORMAT (ND included)

# Buffer-protocol format letters by (letter, itemsize); '@', '=' and '<' prefixes mean native
# little-endian here. Unsigned types wider than 16 bits have no hvdc dtype.
_FORMAT_DTYPES = {
    ("b", 1): _ffi.HVD_INT8, ("B", 1): _ffi.HVD_UINT8, ("c", 1): _ffi.HVD_UINT8,
    ("h", 2): _ffi.HVD_INT16, ("H", 2): _ffi.HVD_UINT16, ("i", 4): _ffi.HVD_INT32,
    ("l", 4): _ffi.HVD_INT32, ("l", 8): _ffi.HVD_INT64, ("q", 8): _ffi.HVD_INT64,
    ("n", 8): _ffi.HVD_INT64, ("e", 2): _ffi.HVD_FLOAT16, ("f", 4): _ffi.HVD_FLOAT32,
    ("d", 8): _ffi.HVD_FLOAT64, ("?", 1): _ffi.HVD_BOOL,
}
# The reverse, for memoryviews over library-owned outputs.
DTYPE_FORMATS = {
    _ffi.HVD_INT8: "b", _ffi.HVD_UINT8: "B", _ffi.HVD_INT16: "h", _ffi.HVD_UINT16: "H",
    _ffi.HVD_INT32: "i", _ffi.HVD_INT64: "q", _ffi.HVD_FLOAT16: "e", _ffi.HVD_FLOAT32: "f",
    _ffi.HVD_FLOAT64: "d", _ffi.HVD_BOOL: "?",
}
ITEMSIZES = {_ffi.HVD_UINT8: 1, _ffi.HVD_INT8: 1, _ffi.HVD_UINT16: 2, _ffi.HVD_INT16: 2,
             _ffi.HVD_INT32: 4, _ffi.HVD_INT64: 8, _ffi.HVD_FLOAT16: 2, _ffi.HVD_FLOAT32: 4,
             _ffi.HVD_FLOAT64: 8, _ffi.HVD_BOOL: 1, _ffi.HVD_BFLOAT16: 2}


def buffer_dtype(fmt, itemsize, argname):
    letter = fmt.lstrip("@=<")
    dtype = _FORMAT_DTYPES.get((letter, itemsize)) if fmt[:1] not in (">", "!") else None
    if dtype is None:
        raise TypeError(f"{argname}: buffer format {fmt!r} ({itemsize}-byte items) has no hvdc "
                        "dtype (int8/16/32/64, uint8/16, float16/32/64, bool)")
    return dtype


class Export:
    """One tensor handed to the library: .tensor is the hvd_tensor_t; the memory stays pinned
    until release()."""

    def __init__(self, obj, tensor, shape, pin):
        self.obj = obj
        self.tensor = tensor
        self.shape = tuple(shape)
        self._shape_array = tensor.shape  # keeps the array tensor.shape points into alive
        self._pin = pin

    @property
    def nbytes(self):
        count = 1
        for dim in self.shape:
            count *= dim
        return count * ITEMSIZES[self.tensor.dtype]

    def release(self):
        pin, self._pin = self._pin, None
        if isinstance(pin, _dlpack.DLPackImport):
            pin.release()
        elif pin is not None:
            _api.PyBuffer_Release(ctypes.byref(pin))


def _from_dlpack(obj, argname, writable):
    capsule = _dlpack.take_capsule(obj)
    imported = _dlpack.DLPackImport(capsule, argname, writable)
    tensor = _ffi.hvd_tensor_t()
    status = _ffi.lib.hvd_tensor_from_dlpack(ctypes.byref(imported.dl_tensor),
                                             ctypes.byref(tensor))
    if status != _ffi.HVD_SUCCESS:
        message = _ffi.lib.hvd_last_error_message().decode(errors="replace")
        imported.release()
        raise _errors.error_for(status, f"{argname}: {message}")
    shape = [tensor.shape[i] for i in range(tensor.ndim)]
    # Own the shape: the producer's may go with its capsule, and this tensor outlives neither.
    tensor.shape = (ctypes.c_int64 * max(1, len(shape)))(*shape)
    return Export(obj, tensor, shape, imported)


def _from_buffer(obj, argname, writable):
    view = Py_buffer()
    flags = PYBUF_RECORDS_RO | (_PYBUF_WRITABLE if writable else 0)
    try:
        _api.PyObject_GetBuffer(obj, ctypes.byref(view), flags)
    except BufferError as exc:
        kind = "a writable" if writable else "a"
        raise ValueError(f"{argname}: {type(obj).__name__} does not give {kind} buffer: "
                         f"{exc}") from None
    try:
        if not _api.PyBuffer_IsContiguous(ctypes.byref(view), b"C"):
            raise ValueError(f"{argname}: the buffer is not C-contiguous; pass a contiguous copy")
        fmt = (view.format or b"B").decode()
        dtype = buffer_dtype(fmt, view.itemsize, argname)
    except Exception:
        _api.PyBuffer_Release(ctypes.byref(view))
        raise
    shape = [view.shape[i] for i in range(view.ndim)] if view.shape else [view.len]
    tensor = _ffi.hvd_tensor_t(data=view.buf, dtype=dtype, ndim=len(shape))
    tensor.shape = (ctypes.c_int64 * max(1, len(shape)))(*shape)
    tensor.device = _ffi.hvd_device_t(_ffi.HVD_DEVICE_CPU, 0)
    return Export(obj, tensor, shape, view)


def export(obj, argname, writable=False):
    """Pins obj's memory for the library; ValueError/TypeError name argname on bad input."""
    if hasattr(obj, "__dlpack__"):
        try:
            return _from_dlpack(obj, argname, writable)
        except BufferError:
            pass  # e.g. numpy's legacy export refuses read-only arrays; the buffer view works
    try:
        memoryview(obj).release()
    except TypeError:
        raise TypeError(f"{argname}: {type(obj).__name__} is neither a DLPack tensor nor a "
                        "buffer") from None
    return _from_buffer(obj, argname, writable)


# ---- Results of the input's kind ---------------------------------------------------------------
def _module_of(obj):
    return type(obj).__module__.split(".")[0]


def _numpy():
    return sys.modules.get("numpy") or __import__("numpy")


_NUMPY_NAMES = {_ffi.HVD_UINT8: "uint8", _ffi.HVD_INT8: "int8", _ffi.HVD_UINT16: "uint16",
                _ffi.HVD_INT16: "int16", _ffi.HVD_INT32: "int32", _ffi.HVD_INT64: "int64",
                _ffi.HVD_FLOAT16: "float16", _ffi.HVD_FLOAT32: "float32",
                _ffi.HVD_FLOAT64: "float64", _ffi.HVD_BOOL: "bool"}


def empty_like(obj, exported, shape=None):
    """A new, writable, contiguous array of obj's kind and dtype, of `shape` (default: obj's).
    `exported` describes obj (an Export, or the hvd_tensor_t of a result): another DLPack
    producer gets a numpy array of that dtype, found without taking a second capsule from it."""
    kind = _module_of(obj)
    if kind == "torch":
        import torch
        return torch.empty(obj.shape if shape is None else shape, dtype=obj.dtype,
                           device=obj.device)
    if kind == "numpy":
        np = _numpy()
        return np.empty(obj.shape if shape is None else shape, dtype=obj.dtype)
    if hasattr(obj, "__dlpack__") and not _is_buffer(obj):
        tensor = getattr(exported, "tensor", exported)
        dtype = _NUMPY_NAMES.get(tensor.dtype)
        if dtype is None:
            raise TypeError(f"{type(obj).__name__}: numpy has no dtype for hvdc dtype "
                            f"{tensor.dtype}")
        return _numpy().empty(exported.shape if shape is None else shape, dtype=dtype)
    return _empty_buffer_like(obj, shape)


def _is_buffer(obj):
    try:
        memoryview(obj).release()
        return True
    except TypeError:
        return False


def _empty_buffer_like(obj, shape):
    with memoryview(obj) as view:
        fmt, itemsize = view.format, view.itemsize
        shape = view.shape if shape is None else tuple(shape)
    count = 1
    for dim in shape:
        count *= dim
    if isinstance(obj, array.array) and len(shape) == 1:
        return array.array(obj.typecode, bytes(count * itemsize))
    if isinstance(obj, bytearray) and len(shape) == 1:
        return bytearray(count)
    return memoryview(bytearray(count * itemsize)).cast(fmt.lstrip("@=<"), shape)


def wrap_library_output(like, owner, tensor):
    """An array of like's kind over memory that `owner` keeps valid, without a copy."""
    shape = [tensor.shape[i] for i in range(tensor.ndim)]
    kind = _module_of(like)
    if kind == "torch":
        import torch
        return torch.from_dlpack(_dlpack.LibraryBuffer(owner, tensor, shape))
    if kind == "numpy" or (hasattr(like, "__dlpack__") and not _is_buffer(like)):
        return _numpy().from_dlpack(_dlpack.LibraryBuffer(owner, tensor, shape))
    count = 1
    for dim in shape:
        count *= dim
    nbytes = count * ITEMSIZES[tensor.dtype]
    raw = (ctypes.c_char * nbytes).from_address(tensor.data) if nbytes else bytearray(0)
    if nbytes:
        raw.owner = owner  # the memoryview's base keeps the handle alive
    return memoryview(raw).cast("B").cast(DTYPE_FORMATS[tensor.dtype], shape)
