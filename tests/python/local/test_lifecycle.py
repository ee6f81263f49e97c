"""Loading, errors, handles, callbacks, logging and the engine's reports, on one rank."""
import gc
import json
import logging
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import hvdc
from hvdc import _errors, _ffi, _handles


def test_before_init():
    assert not hvdc.is_initialized()
    assert [hvdc.rank(), hvdc.size(), hvdc.local_rank(), hvdc.local_size(), hvdc.cross_rank(),
            hvdc.cross_size()] == [-1] * 6
    with pytest.raises(hvdc.HvdcNotInitializedError, match="not initialized"):
        hvdc.allreduce(bytearray(1))
    with pytest.raises(TypeError, match="init: unknown setting 'fusion'"):
        hvdc.init(fusion=1)


def test_every_status_maps_to_its_class_and_unknown_codes_to_the_base():
    for code, cls in _errors.ERROR_CLASSES.items():
        error = _errors.error_for(code, "detail")
        assert type(error) is cls and error.code == code and "detail" in str(error)
        assert isinstance(error, hvdc.HvdcError)
    classes = [hvdc.HvdcInvalidArgumentError, hvdc.HvdcInvalidUsageError,
               hvdc.HvdcNotInitializedError, hvdc.HvdcUnsupportedError, hvdc.HvdcSystemError,
               hvdc.HvdcInternalError, hvdc.HvdcInvalidHandleError, hvdc.HvdcMismatchError,
               hvdc.HvdcDuplicateNameError, hvdc.HvdcAbortedError, hvdc.HvdcTimeoutError,
               hvdc.HvdcPeerFailureError, hvdc.HvdcShutDownError, hvdc.HvdcOutOfMemoryError,
               hvdc.HvdcTransportError, hvdc.HvdcBootstrapError, hvdc.HvdcForkedError,
               hvdc.HvdcDeviceError]
    assert sorted(c.__name__ for c in classes) == sorted(_errors.ERROR_NAMES[:-1])
    assert type(_errors.error_for(-999, "x")) is hvdc.HvdcError
    assert hvdc.HvdcError(-999).code == -999


def test_device_count_is_a_count_or_says_why_not():
    try:
        count = hvdc.device_count()
    except hvdc.HvdcUnsupportedError as error:
        assert str(error).strip(), "the refusal must say why"
    else:
        assert count > 0


def _python(code, **env):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=60)


def test_loading_reports_what_it_tried():
    bad = _python("import hvdc", HVDC_LIBRARY="/nonexistent/libhvdc.so.0")
    assert bad.returncode != 0 and "ImportError" in bad.stderr
    assert "HVDC_LIBRARY: /nonexistent/libhvdc.so.0" in bad.stderr
    assert hvdc.library_path() == (os.environ["HVDC_LIBRARY"], "HVDC_LIBRARY")
    good = _python("import hvdc; print(hvdc.library_path()[1], hvdc.__version__)")
    assert good.stdout.split() == ["HVDC_LIBRARY", "0.1.0"], good.stderr


def test_every_header_function_has_a_signature():
    header = os.path.join(os.path.dirname(__file__), "../../../include/hvdc.h")
    with open(header) as f:
        text = f.read()
    import re
    declared = set(re.findall(r"HVDC_API[^;(]*?\b(hvd_\w+)\s*\(", text))
    assert declared == set(_ffi.FUNCTIONS)


@pytest.fixture
def engine():
    hvdc.init(bootstrap="singleton", log_level=2)
    yield
    hvdc.shutdown()


def test_singleton_topology_and_reports(engine, tmp_path):
    assert hvdc.is_initialized()
    assert (hvdc.rank(), hvdc.size(), hvdc.local_rank(), hvdc.local_size()) == (0, 1, 0, 1)
    assert (hvdc.cross_rank(), hvdc.cross_size()) == (0, 1)
    assert hvdc.join() == 0
    path = tmp_path / "timeline.json"
    hvdc.start_timeline(str(path))
    hvdc.allreduce(np.ones(3, np.float32), name="timeline.tensor")
    hvdc.stop_timeline()
    assert "timeline.tensor" in json.dumps(json.loads(path.read_text() or "[]"))
    counters = hvdc.stats()
    assert counters["tensors"] >= 1 and "fused_bytes" in counters
    assert isinstance(hvdc.dump_pending(), str)


def test_async_on_done_runs_on_the_callers_thread(engine):
    seen = []

    def on_done(h):
        seen.append(threading.get_ident())
        assert hvdc.synchronize(h).tolist() == [3.0, 3.0]  # the result is ready here

    handle = hvdc.allreduce_async(np.full(2, 3.0), op=hvdc.Max, on_done=on_done)
    assert isinstance(handle, hvdc.Handle)
    while not hvdc.poll(handle):
        pass
    assert seen == [threading.get_ident()]
    assert hvdc.synchronize(handle).tolist() == [3.0, 3.0]
    assert seen == [threading.get_ident()]  # once


def test_dropped_handle_is_freed_by_the_next_call_not_the_finalizer(engine):
    tensor = np.arange(1000, dtype=np.float32)
    hvdc.allreduce_async_(tensor, op=hvdc.Min, name="dropped")
    gc.collect()
    hvdc.barrier()
    assert _handles.pending_frees() == 0
    with pytest.raises(hvdc.HvdcInvalidHandleError):
        _errors.call("hvd_wait", 123456789)


def test_abort_fails_later_ops(engine):
    hvdc.abort("test abort")
    with pytest.raises(hvdc.HvdcAbortedError, match="test abort"):
        hvdc.allreduce(np.ones(1))


def test_log_lines_reach_the_hvdc_logger(caplog):
    with caplog.at_level(logging.DEBUG, logger="hvdc"):
        hvdc.init(bootstrap="singleton", log_level=1)
        hvdc.shutdown()
    assert caplog.records and all(r.name == "hvdc" for r in caplog.records)


def test_shutdown_fails_pending_ops_and_init_works_again():
    hvdc.init(bootstrap="singleton")
    hvdc.shutdown()
    assert not hvdc.is_initialized()
    hvdc.init(bootstrap="singleton")
    out = hvdc.grouped_allreduce([np.ones(2), array_of(3)], op=hvdc.Sum, name="g")
    assert [o.tolist() for o in out] == [[1, 1], [3]]
    hvdc.shutdown()


def array_of(value):
    return np.array([value], dtype=np.int32)


def test_abi_mismatch_is_refused(tmp_path):
    """A library with every function but another ABI version: the import names both."""
    source = tmp_path / "fake.c"
    stubs = [f"void {name}(void) {{}}" for name in _ffi.FUNCTIONS if name != "hvd_abi_version"]
    source.write_text("\n".join(stubs + ["int hvd_abi_version(void) { return 99; }"]) + "\n")
    fake = tmp_path / "libfake.so"
    compiled = subprocess.run(["cc", "-shared", "-fPIC", "-o", str(fake), str(source)],
                              capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    run = _python("import hvdc", HVDC_LIBRARY=str(fake))
    assert f"{fake} (from HVDC_LIBRARY) has ABI version 99, but this package needs 0" in run.stderr


def test_exit_with_ops_in_flight_is_clean():
    """atexit shuts down; handles still referenced at exit are left to the OS, not freed."""
    run = _python("import hvdc, numpy as np\n"
                  "hvdc.init(bootstrap='singleton')\n"
                  "kept = [hvdc.allreduce_async(np.ones(1 << 16), name=f't{i}') for i in range(8)]\n"
                  "hvdc.allgather_async(np.ones(4))\n")
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr and "Exception ignored" not in run.stderr
