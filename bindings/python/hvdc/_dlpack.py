"""DLPack both ways, zero-copy.

Importing: a producer's capsule (legacy "dltensor" or versioned "dltensor_versioned") is renamed
"used_..." so that its own destructor leaves it alone, and its deleter is called exactly once, by
DLPackImport.release(), after the op is done with the memory.

Exporting: LibraryBuffer hands memory owned by an hvdc handle to numpy or torch as a legacy
capsule; the consumer's deleter call drops the reference that keeps the handle alive.
"""
import ctypes
import threading

from . import _ffi

_api = ctypes.pythonapi
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
# In a capsule's destructor its reference count is 0: it must not become a py_object again.
_raw_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_capsule_destructor_t = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _capsule_destructor_t]

LEGACY_NAME = b"dltensor"
VERSIONED_NAME = b"dltensor_versioned"
# PyCapsule_SetName keeps the pointer it is given: these buffers live as long as the module.
_USED_LEGACY = ctypes.create_string_buffer(b"used_dltensor")
_USED_VERSIONED = ctypes.create_string_buffer(b"used_dltensor_versioned")
FLAG_READ_ONLY = 1

_deleter_t = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _ffi.hvd_dl_tensor_t), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _deleter_t)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _deleter_t), ("flags", ctypes.c_uint64),
                ("dl_tensor", _ffi.hvd_dl_tensor_t)]


def take_capsule(producer):
    """The producer's capsule, versioned where it offers one."""
    try:
        return producer.__dlpack__(max_version=(1, 0))
    except TypeError:  # a producer from before DLPack 1.0 takes no max_version
        return producer.__dlpack__()


class DLPackImport:
    """Owns one consumed capsule's managed tensor until release()."""

    def __init__(self, capsule, argname, writable):
        name = _api.PyCapsule_GetName(capsule)
        if name == VERSIONED_NAME:
            self._managed = DLManagedTensorVersioned.from_address(
                _api.PyCapsule_GetPointer(capsule, name))
            used = _USED_VERSIONED
        elif name == LEGACY_NAME:
            self._managed = DLManagedTensor.from_address(_api.PyCapsule_GetPointer(capsule, name))
            used = _USED_LEGACY
        else:
            raise TypeError(f"{argname}: __dlpack__ gave a capsule named {name!r}, which is not "
                            "an unconsumed DLPack tensor")
        _api.PyCapsule_SetName(capsule, used)  # ours now: its destructor no longer deletes it
        self._released = False
        if writable and name == VERSIONED_NAME and self._managed.flags & FLAG_READ_ONLY:
            self.release()
            raise ValueError(f"{argname}: the tensor is read-only, but it receives the result")

    @property
    def dl_tensor(self):
        return self._managed.dl_tensor

    def release(self):
        """Calls the producer's deleter; later calls do nothing."""
        if self._released:
            return
        self._released = True
        deleter = self._managed.deleter
        if deleter:
            deleter(ctypes.addressof(self._managed))


# ---- Export ------------------------------------------------------------------------------------
_exports_lock = threading.Lock()
_exports = {}  # manager_ctx key -> (owner, managed tensor, shape array)
_next_key = [1]


@_deleter_t
def _export_deleter(managed_address):
    managed = DLManagedTensor.from_address(managed_address)
    with _exports_lock:
        _exports.pop(managed.manager_ctx, None)


@_capsule_destructor_t
def _capsule_destructor(capsule):
    # Still named "dltensor": no consumer took it, so the deleter is ours to call.
    if _api.PyCapsule_IsValid(capsule, LEGACY_NAME):
        _export_deleter(_raw_get_pointer(capsule, LEGACY_NAME))


_DL_CODES = {  # hvd dtype -> (DLPack type code, bits)
    _ffi.HVD_UINT8: (1, 8), _ffi.HVD_INT8: (0, 8), _ffi.HVD_UINT16: (1, 16),
    _ffi.HVD_INT16: (0, 16), _ffi.HVD_INT32: (0, 32), _ffi.HVD_INT64: (0, 64),
    _ffi.HVD_FLOAT16: (2, 16), _ffi.HVD_FLOAT32: (2, 32), _ffi.HVD_FLOAT64: (2, 64),
    _ffi.HVD_BOOL: (6, 8), _ffi.HVD_BFLOAT16: (4, 16),
}


class LibraryBuffer:
    """Memory described by an hvd_tensor_t that `owner` keeps valid, offered through DLPack."""

    def __init__(self, owner, tensor, shape):
        self._owner = owner
        self._tensor = tensor
        self._shape = tuple(shape)

    def __dlpack_device__(self):
        return (self._tensor.device.type, self._tensor.device.id)

    def __dlpack__(self, stream=None, **_ignored):
        """A legacy capsule; numpy and torch accept it whatever max_version they ask for."""
        shape = (ctypes.c_int64 * max(1, len(self._shape)))(*self._shape)
        managed = DLManagedTensor()
        dl = managed.dl_tensor
        dl.data = self._tensor.data
        dl.device = self._tensor.device
        dl.ndim = len(self._shape)
        dl.dtype.code, dl.dtype.bits = _DL_CODES[self._tensor.dtype]
        dl.dtype.lanes = 1
        dl.shape = shape
        with _exports_lock:
            key = _next_key[0]
            _next_key[0] += 1
            _exports[key] = (self._owner, managed, shape)
        managed.manager_ctx = key
        managed.deleter = _export_deleter
        return _api.PyCapsule_New(ctypes.addressof(managed), LEGACY_NAME, _capsule_destructor)


def live_exports():
    """How many exported capsules have not been deleted yet (tests check deleter calls)."""
    with _exports_lock:
        return len(_exports)
