"""init / shutdown, topology, process sets."""
import atexit
import ctypes

from . import _errors, _ffi, _handles, _log

# init(**settings): keyword -> (config key, Python type)
SETTINGS = {
    "log_level": (_ffi.HVD_CFG_LOG_LEVEL, int),
    "hostname": (_ffi.HVD_CFG_HOSTNAME, str),
    "bootstrap": (_ffi.HVD_CFG_BOOTSTRAP, str),
    "spin_micros": (_ffi.HVD_CFG_SPIN_MICROS, int),
    "fusion_threshold": (_ffi.HVD_CFG_FUSION_THRESHOLD, int),
    "cache_capacity": (_ffi.HVD_CFG_CACHE_CAPACITY, int),
    "deterministic": (_ffi.HVD_CFG_DETERMINISTIC, int),
    "process_sets": (_ffi.HVD_CFG_PROCESS_SETS, str),
    "rank": (_ffi.HVD_CFG_RANK, int),
    "size": (_ffi.HVD_CFG_SIZE, int),
    "master_addr": (_ffi.HVD_CFG_MASTER_ADDR, str),
    "master_port": (_ffi.HVD_CFG_MASTER_PORT, int),
    "secret": (_ffi.HVD_CFG_SECRET, str),
    "iface": (_ffi.HVD_CFG_IFACE, str),
}
_atexit_registered = [False]


def enter():
    """Every binding call starts here: queued frees and log records, on a Python thread."""
    _handles.drain_free_queue()
    _log.flush()


class ProcessSet:
    """A subset of the ranks. Create it with add_process_set() or pass it to init()."""

    def __init__(self, ranks):
        self.ranks = sorted(int(r) for r in ranks)
        self.process_set_id = None

    def _id(self):
        if self.process_set_id is None:
            raise ValueError(f"process_set: {self!r} is not registered; pass it to init() or "
                             "add_process_set()")
        return self.process_set_id

    def _query(self, fn):
        enter()
        out = ctypes.c_int32()
        _errors.call(fn, self._id(), ctypes.byref(out))
        return out.value

    def rank(self):
        return self._query("hvd_process_set_rank")

    def size(self):
        return self._query("hvd_process_set_size")

    def included(self):
        return bool(self._query("hvd_process_set_included"))

    def __repr__(self):
        return f"ProcessSet(id={self.process_set_id}, ranks={self.ranks})"


class _GlobalProcessSet(ProcessSet):
    def __init__(self):
        super().__init__([])
        self.process_set_id = 0

    @property
    def ranks(self):
        return list(range(max(0, _ffi.lib.hvd_size())))

    @ranks.setter
    def ranks(self, _value):
        pass  # the members of set 0 are every rank, always


global_process_set = _GlobalProcessSet()


def process_set_id(process_set):
    if process_set is None:
        return 0
    if isinstance(process_set, ProcessSet):
        return process_set._id()
    if isinstance(process_set, int):
        return process_set
    raise TypeError(f"process_set: expected a ProcessSet or an id, got {process_set!r}")


def set_rank_and_size(process_set):
    """(this rank's rank in the set, the set's size)."""
    set_id = process_set_id(process_set)
    rank_, count = ctypes.c_int32(), ctypes.c_int32()
    _errors.call("hvd_process_set_rank", set_id, ctypes.byref(rank_))
    _errors.call("hvd_process_set_size", set_id, ctypes.byref(count))
    return rank_.value, count.value


def _static_sets(value):
    sets = [s if isinstance(s, ProcessSet) else ProcessSet(s) for s in value]
    return sets, ";".join(",".join(str(r) for r in s.ranks) for s in sets)


def _make_config(settings):
    config = ctypes.c_void_p()
    _errors.call("hvd_config_create", ctypes.byref(config))
    try:
        for key, value in settings.items():
            cfg_key, kind = SETTINGS[key]
            if kind is int:
                _errors.call("hvd_config_set_int", config, cfg_key, int(value))
            else:
                _errors.call("hvd_config_set_str", config, cfg_key, str(value).encode())
    except Exception:
        _ffi.lib.hvd_config_destroy(config)
        raise
    return config


def init(**settings):
    """Starts hvdc on every rank. Keywords override HVDC_* settings (see SETTINGS);
    process_sets=[[0, 2], [1, 3]] (or ProcessSet objects) creates static sets 1, 2, ..."""
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        raise TypeError(f"init: unknown setting {unknown[0]!r}; known: {', '.join(SETTINGS)}")
    enter()
    static = []
    if "process_sets" in settings and not isinstance(settings["process_sets"], str):
        static, settings["process_sets"] = _static_sets(settings["process_sets"])
    config = _make_config(settings)
    _log.install()
    try:
        _errors.call("hvd_init_with_config", config)
    except Exception:
        _log.uninstall()
        raise
    finally:
        _ffi.lib.hvd_config_destroy(config)
    for set_id, process_set in enumerate(static, start=1):
        process_set.process_set_id = set_id
    if not _atexit_registered[0]:
        atexit.register(shutdown)
        _atexit_registered[0] = True


def shutdown():
    """Fails pending ops (HvdcShutDownError), stops the engine; init() may follow."""
    enter()
    try:
        _errors.call("hvd_shutdown")
    finally:
        _handles.drain_free_queue()
        _log.uninstall()


def is_initialized():
    return bool(_ffi.lib.hvd_is_initialized())


def rank():
    return _ffi.lib.hvd_rank()


def size():
    return _ffi.lib.hvd_size()


def local_rank():
    return _ffi.lib.hvd_local_rank()


def local_size():
    return _ffi.lib.hvd_local_size()


def cross_rank():
    return _ffi.lib.hvd_cross_rank()


def cross_size():
    return _ffi.lib.hvd_cross_size()


def add_process_set(process_set):
    """Creates a set on every rank (collective); returns the ProcessSet with its id."""
    enter()
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    ranks = (ctypes.c_int32 * max(1, len(process_set.ranks)))(*process_set.ranks)
    set_id = ctypes.c_int32()
    _errors.call("hvd_process_set_create", ranks, len(process_set.ranks), ctypes.byref(set_id))
    process_set.process_set_id = set_id.value
    return process_set


def remove_process_set(process_set):
    """Removes a set on every rank (collective)."""
    enter()
    _errors.call("hvd_process_set_destroy", process_set_id(process_set))
    if isinstance(process_set, ProcessSet):
        process_set.process_set_id = None
