"""hvdc: Horovod-style collectives over libhvdc's C ABI (pure Python, ctypes, zero-copy).

    import hvdc, numpy as np
    hvdc.init()
    print(hvdc.rank(), hvdc.allreduce(np.ones(4, np.float32), op=hvdc.Sum))

Launch with `hvdcrun -np 2 python3 script.py` (or mpirun, srun, torchrun).
"""
from . import _ffi

_ffi.load()  # before anything that calls the library

from ._errors import (HvdcAbortedError, HvdcBootstrapError, HvdcDeviceError,
                      HvdcDuplicateNameError, HvdcError, HvdcForkedError, HvdcInternalError,
                      HvdcInvalidArgumentError, HvdcInvalidHandleError, HvdcInvalidUsageError,
                      HvdcMismatchError, HvdcNotInitializedError, HvdcOutOfMemoryError,
                      HvdcPeerFailureError, HvdcShutDownError, HvdcSystemError, HvdcTimeoutError,
                      HvdcTransportError, HvdcUnsupportedError)
from ._errors import ERROR_NAMES as _ERROR_NAMES
from ._extras import (abort, broadcast_object, broadcast_parameters, device_count, dump_pending,
                      start_timeline, stats, stop_timeline)
from ._handles import Handle
from ._memory import SharedBuffer, mem_alloc, mem_size, shared_array, shared_zeros
from ._lifecycle import (ProcessSet, add_process_set, cross_rank, cross_size, global_process_set,
                         init, is_initialized, local_rank, local_size, rank, remove_process_set,
                         shutdown, size)
from ._ops import (Average, Max, Min, Product, Sum, allgather, allgather_async, allreduce,
                   allreduce_, allreduce_async, allreduce_async_, alltoall, alltoall_async,
                   barrier, broadcast, broadcast_, broadcast_async, broadcast_async_,
                   grouped_allreduce, grouped_allreduce_async, join, poll, reducescatter,
                   reducescatter_async, synchronize)

__version__ = _ffi.lib.hvd_version_string().decode().split()[0]


def library_path():
    """The libhvdc that was loaded, and how it was found ("HVDC_LIBRARY", "package", ...)."""
    return _ffi.LIBRARY_PATH, _ffi.LIBRARY_SOURCE


__all__ = [
    "init", "shutdown", "is_initialized", "rank", "size", "local_rank", "local_size",
    "cross_rank", "cross_size",
    "Average", "Sum", "Min", "Max", "Product",
    "allreduce", "allreduce_async", "allreduce_", "allreduce_async_",
    "grouped_allreduce", "grouped_allreduce_async", "allgather", "allgather_async",
    "broadcast", "broadcast_async", "broadcast_", "broadcast_async_", "alltoall",
    "alltoall_async", "reducescatter", "reducescatter_async", "barrier", "join",
    "synchronize", "poll", "Handle",
    "ProcessSet", "global_process_set", "add_process_set", "remove_process_set",
    "start_timeline", "stop_timeline", "stats", "dump_pending", "abort",
    "broadcast_parameters", "broadcast_object", "library_path", "device_count",
    "SharedBuffer", "mem_alloc", "mem_size", "shared_zeros", "shared_array",
] + _ERROR_NAMES
