"""Status codes as exceptions. The detail message is read at once, on the failing thread."""
from . import _ffi


class HvdcError(RuntimeError):
    """A failed hvdc call: .code is the hvd_status_t, str() the library's message."""

    def __init__(self, code, message=""):
        self.code = code
        text = _ffi.lib.hvd_status_string(code).decode()
        super().__init__(f"{text}: {message}" if message else text)


class HvdcInvalidArgumentError(HvdcError, ValueError):
    pass


class HvdcInvalidUsageError(HvdcError):
    pass


class HvdcNotInitializedError(HvdcError):
    pass


class HvdcUnsupportedError(HvdcError):
    pass


class HvdcSystemError(HvdcError):
    pass


class HvdcInternalError(HvdcError):
    pass


class HvdcInvalidHandleError(HvdcError):
    pass


class HvdcMismatchError(HvdcError):
    pass


class HvdcDuplicateNameError(HvdcError):
    pass


class HvdcAbortedError(HvdcError):
    pass


class HvdcTimeoutError(HvdcError):
    pass


class HvdcPeerFailureError(HvdcError):
    pass


class HvdcShutDownError(HvdcError):
    pass


class HvdcOutOfMemoryError(HvdcError, MemoryError):
    pass


class HvdcTransportError(HvdcError):
    pass


class HvdcBootstrapError(HvdcError):
    pass


class HvdcForkedError(HvdcError):
    pass


class HvdcDeviceError(HvdcError):
    """CUDA or NCCL failed; the message carries its text."""


ERROR_CLASSES = {
    _ffi.HVD_ERR_INVALID_ARGUMENT: HvdcInvalidArgumentError,
    _ffi.HVD_ERR_INVALID_USAGE: HvdcInvalidUsageError,
    _ffi.HVD_ERR_NOT_INITIALIZED: HvdcNotInitializedError,
    _ffi.HVD_ERR_UNSUPPORTED: HvdcUnsupportedError,
    _ffi.HVD_ERR_SYSTEM: HvdcSystemError,
    _ffi.HVD_ERR_INTERNAL: HvdcInternalError,
    _ffi.HVD_ERR_INVALID_HANDLE: HvdcInvalidHandleError,
    _ffi.HVD_ERR_MISMATCH: HvdcMismatchError,
    _ffi.HVD_ERR_DUPLICATE_NAME: HvdcDuplicateNameError,
    _ffi.HVD_ERR_ABORTED: HvdcAbortedError,
    _ffi.HVD_ERR_TIMEOUT: HvdcTimeoutError,
    _ffi.HVD_ERR_PEER_FAILURE: HvdcPeerFailureError,
    _ffi.HVD_ERR_SHUT_DOWN: HvdcShutDownError,
    _ffi.HVD_ERR_OUT_OF_MEMORY: HvdcOutOfMemoryError,
    _ffi.HVD_ERR_TRANSPORT: HvdcTransportError,
    _ffi.HVD_ERR_BOOTSTRAP: HvdcBootstrapError,
    _ffi.HVD_ERR_FORKED: HvdcForkedError,
    _ffi.HVD_ERR_DEVICE: HvdcDeviceError,
}

ERROR_NAMES = [cls.__name__ for cls in ERROR_CLASSES.values()] + ["HvdcError"]


def error_for(code, message=None):
    """The exception for a status code; an unknown code gets the base class."""
    if message is None:
        message = _ffi.lib.hvd_last_error_message().decode(errors="replace")
    return ERROR_CLASSES.get(code, HvdcError)(code, message)


def check(code):
    """Raises for an error status; returns the status otherwise (HVD_SUCCESS or IN_PROGRESS)."""
    if code < 0:
        raise error_for(code)
    return code


def call(name, *args):
    """Calls an hvd_* function that returns a status and raises on failure."""
    return check(getattr(_ffi.lib, name)(*args))
