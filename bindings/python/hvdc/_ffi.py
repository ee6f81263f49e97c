"""The C ABI of libhvdc as ctypes: constants, structures, one signature table, and the loader.

Everything here mirrors include/hvdc.h by name; tests/bindings checks values, arities and layouts
against the header. Nothing here knows about arrays or Python-side lifetimes. The module imports
nothing from the package and loads no library by itself (hvdc/__init__.py calls load()), so a
checker can read it by path without a built library.
"""
import ctypes
import os
import pathlib
import subprocess

# ---- Versions --------------------------------------------------------------------------------
HVDC_VERSION_MAJOR = 0
HVDC_VERSION_MINOR = 1
HVDC_VERSION_PATCH = 0
HVDC_VERSION_CODE = 100
HVDC_ABI_VERSION = 0

# ---- Status codes ----------------------------------------------------------------------------
HVD_SUCCESS = 0
HVD_IN_PROGRESS = 1
HVD_ERR_INVALID_ARGUMENT = -1
HVD_ERR_INVALID_USAGE = -2
HVD_ERR_NOT_INITIALIZED = -3
HVD_ERR_UNSUPPORTED = -4
HVD_ERR_SYSTEM = -5
HVD_ERR_INTERNAL = -6
HVD_ERR_INVALID_HANDLE = -7
HVD_ERR_MISMATCH = -8
HVD_ERR_DUPLICATE_NAME = -9
HVD_ERR_ABORTED = -10
HVD_ERR_TIMEOUT = -11
HVD_ERR_PEER_FAILURE = -12
HVD_ERR_SHUT_DOWN = -13
HVD_ERR_OUT_OF_MEMORY = -14
HVD_ERR_TRANSPORT = -15
HVD_ERR_BOOTSTRAP = -16
HVD_ERR_FORKED = -17
HVD_ERR_DEVICE = -18

# ---- Data types, reduce ops, devices ---------------------------------------------------------
HVD_UINT8 = 0
HVD_INT8 = 1
HVD_UINT16 = 2
HVD_INT16 = 3
HVD_INT32 = 4
HVD_INT64 = 5
HVD_FLOAT16 = 6
HVD_FLOAT32 = 7
HVD_FLOAT64 = 8
HVD_BOOL = 9
HVD_BFLOAT16 = 10

HVD_OP_AVERAGE = 0
HVD_OP_SUM = 1
HVD_OP_MIN = 3
HVD_OP_MAX = 4
HVD_OP_PRODUCT = 5

HVD_DEVICE_CPU = 1
HVD_DEVICE_CUDA = 2

HVD_MAX_NDIM = 32

# ---- Configuration keys ----------------------------------------------------------------------
HVD_CFG_LOG_LEVEL = 0
HVD_CFG_HOSTNAME = 1
HVD_CFG_BOOTSTRAP = 2
HVD_CFG_SPIN_MICROS = 3
HVD_CFG_FUSION_THRESHOLD = 4
HVD_CFG_CACHE_CAPACITY = 5
HVD_CFG_DETERMINISTIC = 6
HVD_CFG_PROCESS_SETS = 7
HVD_CFG_RANK = 8
HVD_CFG_SIZE = 9
HVD_CFG_MASTER_ADDR = 10
HVD_CFG_MASTER_PORT = 11
HVD_CFG_SECRET = 12
HVD_CFG_IFACE = 13

HVD_FEATURE_UCX = 0
HVD_FEATURE_MPI = 1
HVD_FEATURE_CUDA = 2
HVD_FEATURE_NCCL = 3


# ---- Structures ------------------------------------------------------------------------------
class hvd_device_t(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int32), ("id", ctypes.c_int32)]


class hvd_tensor_t(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("device", hvd_device_t),
    ]


class hvd_dl_dtype_t(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class hvd_dl_tensor_t(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", hvd_device_t),
        ("ndim", ctypes.c_int32),
        ("dtype", hvd_dl_dtype_t),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


hvd_status_t = ctypes.c_int32
hvd_handle_t = ctypes.c_uint64
hvd_config_p = ctypes.c_void_p  # hvd_config_t* (opaque)
hvd_log_fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_char_p)
hvd_done_fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, hvd_handle_t, hvd_status_t)
hvd_alloc_fn = ctypes.CFUNCTYPE(
    ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(hvd_tensor_t), ctypes.c_size_t)


class hvd_op_args_t(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("process_set", ctypes.c_int32),
        ("prescale_factor", ctypes.c_double),
        ("postscale_factor", ctypes.c_double),
        ("on_done", hvd_done_fn),
        ("on_done_user_data", ctypes.c_void_p),
        ("alloc", hvd_alloc_fn),
        ("alloc_user_data", ctypes.c_void_p),
        ("cuda_stream", ctypes.c_void_p),
        ("flags", ctypes.c_uint32),
    ]


HVD_OP_STREAM_ORDERED = 1
HVD_OP_HOST_PATH = 2


class hvd_stats_t(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("reserved", ctypes.c_uint32)] + [
        (name, ctypes.c_uint64)
        for name in ("coordinator_requests", "rounds", "cache_hits", "cache_misses",
                     "cache_evictions", "collectives", "tensors", "fused_collectives",
                     "fused_tensors", "fused_bytes")
    ]


# ---- Signatures: every exported function, (restype, [argtypes]) -------------------------------
_P = ctypes.POINTER
_I32, _I64, _SIZE, _STR = ctypes.c_int32, ctypes.c_int64, ctypes.c_size_t, ctypes.c_char_p
_ST, _H = hvd_status_t, hvd_handle_t
_T, _ARGS = _P(hvd_tensor_t), _P(hvd_op_args_t)

FUNCTIONS = {
    "hvd_version_string": (_STR, []),
    "hvd_abi_version": (_I32, []),
    "hvd_status_string": (_STR, [_ST]),
    "hvd_last_error_message": (_STR, []),
    "hvd_tensor_from_dlpack": (_ST, [_P(hvd_dl_tensor_t), _T]),
    "hvd_config_create": (_ST, [_P(hvd_config_p)]),
    "hvd_config_set_int": (_ST, [hvd_config_p, _I32, _I64]),
    "hvd_config_set_str": (_ST, [hvd_config_p, _I32, _STR]),
    "hvd_config_destroy": (None, [hvd_config_p]),
    "hvd_set_log_callback": (_ST, [hvd_log_fn, ctypes.c_void_p]),
    "hvd_init": (_ST, []),
    "hvd_init_with_config": (_ST, [hvd_config_p]),
    "hvd_shutdown": (_ST, []),
    "hvd_is_initialized": (_I32, []),
    "hvd_rank": (_I32, []),
    "hvd_size": (_I32, []),
    "hvd_local_rank": (_I32, []),
    "hvd_local_size": (_I32, []),
    "hvd_cross_rank": (_I32, []),
    "hvd_cross_size": (_I32, []),
    "hvd_op_args_init": (_ST, [_ARGS, _SIZE]),
    "hvd_allreduce_async": (_ST, [_T, ctypes.c_void_p, _I32, _STR, _ARGS, _P(_H)]),
    "hvd_allgather_async": (_ST, [_T, _STR, _ARGS, _P(_H)]),
    "hvd_broadcast_async": (_ST, [_T, ctypes.c_void_p, _I32, _STR, _ARGS, _P(_H)]),
    "hvd_grouped_allreduce_async": (
        _ST, [_T, _P(ctypes.c_void_p), _SIZE, _I32, _P(_STR), _ARGS, _P(_H)]),
    "hvd_alltoall_async": (_ST, [_T, _P(_I32), _STR, _ARGS, _P(_H)]),
    "hvd_handle_received_splits": (_ST, [_H, _P(_I32), _I32]),
    "hvd_reducescatter_async": (_ST, [_T, ctypes.c_void_p, _I32, _STR, _ARGS, _P(_H)]),
    "hvd_join": (_ST, [_P(_I32)]),
    "hvd_barrier_async": (_ST, [_STR, _ARGS, _P(_H)]),
    "hvd_handle_output": (_ST, [_H, _T]),
    "hvd_test": (_ST, [_H, _P(_I32)]),
    "hvd_wait": (_ST, [_H]),
    "hvd_wait_all": (_ST, [_P(_H), _SIZE]),
    "hvd_handle_free": (_ST, [_H]),
    "hvd_process_set_create": (_ST, [_P(_I32), _I32, _P(_I32)]),
    "hvd_process_set_destroy": (_ST, [_I32]),
    "hvd_process_set_rank": (_ST, [_I32, _P(_I32)]),
    "hvd_process_set_size": (_ST, [_I32, _P(_I32)]),
    "hvd_process_set_included": (_ST, [_I32, _P(_I32)]),
    "hvd_process_set_ranks": (_ST, [_I32, _P(_I32), _I32, _P(_I32)]),
    "hvd_process_set_ids": (_ST, [_P(_I32), _I32, _P(_I32)]),
    "hvd_abort": (_ST, [_STR]),
    "hvd_get_async_error": (_ST, [_P(_ST)]),
    "hvd_dump_pending": (_ST, [_P(ctypes.c_char), _SIZE, _P(_SIZE)]),
    "hvd_timeline_start": (_ST, [_STR]),
    "hvd_timeline_stop": (_ST, []),
    "hvd_stats_get": (_ST, [_P(hvd_stats_t)]),
    "hvd_stats_format": (_ST, [_P(ctypes.c_char), _SIZE, _P(_SIZE)]),
    "hvd_has_feature": (_I32, [_I32]),
    "hvd_device_count": (_ST, [_P(_I32)]),
    "hvd_mem_alloc": (_ST, [_SIZE, _P(ctypes.c_void_p)]),
    "hvd_mem_free": (_ST, [ctypes.c_void_p]),
    "hvd_mem_size": (_ST, [ctypes.c_void_p, _P(ctypes.c_void_p), _P(_SIZE)]),
}

# ---- Loading ---------------------------------------------------------------------------------
SONAME = "libhvdc.so.0"
_PACKAGE_DIR = pathlib.Path(__file__).resolve().parent


def _package_candidates():
    """Where a wheel puts the library: meson-python relocates it into .hvdc.mesonpy.libs beside
    the package, under its full versioned name (wheels hold no symlinks); a hand-made layout may
    use hvdc/_lib."""
    libs = _PACKAGE_DIR.parent / ".hvdc.mesonpy.libs"
    return [_PACKAGE_DIR / "_lib" / SONAME] + sorted(libs.glob(SONAME + "*"))


def _point_at_wheel_plugin():
    """The wheel puts the MPI plugin at the top of site-packages, not beside the library where
    libhvdc looks for it: name it through HVDC_MPI_PLUGIN unless the user already did."""
    plugin = _PACKAGE_DIR.parent / "libhvdc_mpi.so"
    if plugin.exists():
        os.environ.setdefault("HVDC_MPI_PLUGIN", str(plugin))


def _pkg_config_candidate():
    try:
        out = subprocess.run(["pkg-config", "--variable=libdir", "hvdc"], capture_output=True,
                             text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    libdir = out.stdout.strip()
    return pathlib.Path(libdir) / SONAME if out.returncode == 0 and libdir else None


def _candidates():
    """(where it came from, path or name), in the documented search order."""
    override = os.environ.get("HVDC_LIBRARY")
    if override:
        return [("HVDC_LIBRARY", override)]  # an explicit choice is never second-guessed
    found = [("package", str(p)) for p in _package_candidates() if p.exists()]
    pc = _pkg_config_candidate()
    if pc is not None and pc.exists():
        found.append(("pkg-config", str(pc)))
    found.append(("soname", SONAME))
    return found


def _declare(lib):
    for name, (restype, argtypes) in FUNCTIONS.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


lib = None  # the loaded CDLL, after load()
LIBRARY_SOURCE = LIBRARY_PATH = None


def load():
    """Loads the first library that opens, checks its ABI version, declares every signature and
    sets `lib`, LIBRARY_SOURCE and LIBRARY_PATH. Later calls do nothing."""
    global lib, LIBRARY_SOURCE, LIBRARY_PATH
    if lib is None:
        lib, LIBRARY_SOURCE, LIBRARY_PATH = _load_first()


def _load_first():
    """(lib, where, path) of the first candidate that opens and has the right ABI."""
    tried = []
    for where, path in _candidates():
        try:
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        except OSError as exc:
            tried.append(f"  {where}: {path}: {exc}")
            continue
        try:
            _declare(lib)
        except AttributeError as exc:
            raise ImportError(f"hvdc: {path} (from {where}) lacks a function: {exc}") from None
        abi = lib.hvd_abi_version()
        if abi != HVDC_ABI_VERSION:
            raise ImportError(
                f"hvdc: {path} (from {where}) has ABI version {abi}, but this package needs "
                f"{HVDC_ABI_VERSION}; set HVDC_LIBRARY to a matching libhvdc.so")
        if where == "package":
            _point_at_wheel_plugin()
        return lib, where, path
    raise ImportError("hvdc: cannot load libhvdc; tried:\n" + "\n".join(tried) +
                      "\nSet HVDC_LIBRARY to the library's full path.")

