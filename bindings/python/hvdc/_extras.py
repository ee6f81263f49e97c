"""Timeline, statistics, hang reports, abort, and Horovod's broadcast helpers."""
import array
import ctypes
import pickle

from . import _errors, _ffi, _lifecycle, _ops


def start_timeline(file_path):
    """Rank 0 records a Chrome trace of every tensor into file_path (other ranks: no-op)."""
    _lifecycle.enter()
    _errors.call("hvd_timeline_start", str(file_path).encode())


def stop_timeline():
    _lifecycle.enter()
    _errors.call("hvd_timeline_stop")


def stats():
    """This rank's engine counters since init, as a dict."""
    _lifecycle.enter()
    counters = _ffi.hvd_stats_t(struct_size=ctypes.sizeof(_ffi.hvd_stats_t))
    _errors.call("hvd_stats_get", ctypes.byref(counters))
    return {name: getattr(counters, name) for name, _ in _ffi.hvd_stats_t._fields_
            if name not in ("struct_size", "reserved")}


def dump_pending():
    """The report of every op in flight on this rank (also logged at warning level)."""
    _lifecycle.enter()
    length = ctypes.c_size_t()
    _errors.call("hvd_dump_pending", None, 0, ctypes.byref(length))
    # Each call makes a new report, which may have grown: retry with the size it asked for.
    while True:
        buffer = ctypes.create_string_buffer(length.value + 1)
        _errors.call("hvd_dump_pending", buffer, len(buffer), ctypes.byref(length))
        if length.value < len(buffer):
            _lifecycle.enter()  # the report went to the log too
            return buffer.value.decode(errors="replace")


def device_count():
    """The CUDA devices usable now. Raises HvdcUnsupportedError, saying why, without a GPU or
    driver, or where the library was built without CUDA. Needs no init."""
    count = ctypes.c_int32()
    _errors.call("hvd_device_count", ctypes.byref(count))
    return count.value


def abort(reason):
    """Fails every pending and later op on every rank with HvdcAbortedError."""
    _lifecycle.enter()
    _errors.call("hvd_abort", str(reason).encode())


def broadcast_parameters(params, root_rank, process_set=None):
    """Broadcasts, in place, every array of a dict (or of (name, array) pairs) from root_rank."""
    items = sorted(params.items()) if isinstance(params, dict) else list(params)
    handles = [_ops.broadcast_async_(value, root_rank, name=f"broadcast_parameters.{key}",
                                     process_set=process_set) for key, value in items]
    for handle in handles:
        _ops.synchronize(handle)


def broadcast_object(obj, root_rank=0, name=None, process_set=None):
    """root_rank's obj, pickled, on every rank."""
    name = name or "broadcast_object"
    rank = _lifecycle.set_rank_and_size(process_set)[0]
    payload = bytearray(pickle.dumps(obj)) if rank == root_rank else bytearray()
    length = array.array("q", [len(payload)])
    _ops.broadcast_(length, root_rank, name=f"{name}.length", process_set=process_set)
    if rank != root_rank:
        payload = bytearray(length[0])
    _ops.broadcast_(payload, root_rank, name=f"{name}.data", process_set=process_set)
    return pickle.loads(bytes(payload))
