"""Shared host memory without an engine: SharedBuffer, mem_alloc, mem_size and the numpy arrays
of shared_zeros / shared_array (zeroed, of the asked size, freed with their last view)."""
import array
import gc

import numpy as np
import pytest

import hvdc


def is_allocated(address):
    try:
        hvdc.mem_size(address)
        return True
    except hvdc.HvdcInvalidArgumentError:
        return False


def test_mem_alloc_is_zeroed_of_the_asked_size_and_found_from_inside():
    buffer = hvdc.mem_alloc(1000)
    assert isinstance(buffer, hvdc.SharedBuffer)
    view = buffer.memoryview()
    assert view.nbytes == 1000 and bytes(view) == bytes(1000)
    view[999] = 7
    assert hvdc.mem_size(buffer.address + 999) == (buffer.address, 1000)
    assert hvdc.mem_size(buffer) == (buffer.address, 1000)
    assert hvdc.mem_size(view[500:]) == (buffer.address, 1000)
    assert bytes(buffer.memoryview()[999:]) == b"\x07"


def test_shared_zeros_is_a_numpy_array_over_the_buffer():
    arr = hvdc.shared_zeros((3, 5), np.float64)
    assert isinstance(arr, np.ndarray) and arr.shape == (3, 5) and arr.dtype == np.float64
    assert arr.flags.c_contiguous and arr.flags.writeable
    assert not arr.any()
    start = arr.__array_interface__["data"][0]
    assert hvdc.mem_size(arr) == (start, 120)
    assert hvdc.mem_size(arr[2, 1:]) == (start, 120)  # an interior view
    one_dim = hvdc.shared_zeros(7, "int32")
    assert one_dim.shape == (7,) and hvdc.mem_size(one_dim)[1] == 28


def test_shared_array_copies_values_and_dtype():
    arr = hvdc.shared_array([[1, 2], [3, 4]], dtype=np.int64)
    assert arr.tolist() == [[1, 2], [3, 4]] and arr.dtype == np.int64
    assert hvdc.mem_size(arr)[1] == 32
    halves = hvdc.shared_array(np.arange(4, dtype=np.float16))
    assert halves.dtype == np.float16 and halves.tolist() == [0, 1, 2, 3]


def test_memory_is_freed_with_the_last_view():
    arr = hvdc.shared_zeros(1024, np.uint8)
    start = hvdc.mem_size(arr)[0]
    part = arr[10:20]
    del arr
    gc.collect()
    assert is_allocated(start)  # `part` still views it
    part[:] = 3
    del part
    gc.collect()
    assert not is_allocated(start)


def test_explicit_free_and_collected_buffers():
    buffer = hvdc.mem_alloc(64)
    start = buffer.address
    view = buffer.memoryview()
    with pytest.raises(BufferError, match="1 views of the buffer are still alive"):
        buffer.free()
    assert is_allocated(start)
    view.release()
    with buffer.memoryview() as scoped:
        scoped[0] = 1
    buffer.free()
    buffer.free()  # a second free does nothing
    assert not is_allocated(start)
    with pytest.raises(ValueError, match="freed"):
        buffer.memoryview()
    other = hvdc.mem_alloc(64)
    start = other.address
    del other
    gc.collect()
    assert not is_allocated(start)


def test_bad_input_is_a_clear_error():
    with pytest.raises(hvdc.HvdcInvalidArgumentError, match="bytes is 0"):
        hvdc.mem_alloc(0)
    with pytest.raises(hvdc.HvdcInvalidArgumentError, match=r"shape: \(0, 4\)"):
        hvdc.shared_zeros((0, 4))
    with pytest.raises(ValueError, match="nbytes: -1 is negative"):
        hvdc.mem_alloc(-1)
    with pytest.raises(ValueError, match=f"nbytes: {1 << 64} is more than a size_t holds"):
        hvdc.mem_alloc(1 << 64)
    with pytest.raises(hvdc.HvdcOutOfMemoryError, match="bytes"):  # beyond any address space
        hvdc.mem_alloc(1 << 60)
    with pytest.raises(TypeError, match="nbytes: expected an int"):
        hvdc.mem_alloc(2.5)
    with pytest.raises(ValueError, match="dimension -2 is negative"):
        hvdc.shared_zeros((3, -2))
    private = np.zeros(4)
    with pytest.raises(hvdc.HvdcInvalidArgumentError, match="in no buffer of hvd_mem_alloc"):
        hvdc.mem_size(private)
    with pytest.raises(hvdc.HvdcInvalidArgumentError, match="in no buffer of hvd_mem_alloc"):
        hvdc.mem_size(array.array("f", [1.0]))
    with pytest.raises(TypeError, match="where: expected an int address"):
        hvdc.mem_size("text")
    # The Python API never frees a raw address (SharedBuffer owns its memory); the library's
    # refusal of a foreign or interior pointer still reaches Python as this exception.
    buffer = hvdc.mem_alloc(16)
    for address in (private.ctypes.data, buffer.address + 8):
        with pytest.raises(hvdc.HvdcInvalidArgumentError, match="not the start of a buffer"):
            hvdc._errors.call("hvd_mem_free", address)
    assert is_allocated(buffer.address)


def test_dlpack_consumers_share_the_memory():
    arr = hvdc.shared_zeros(6, np.float32)
    alias = np.from_dlpack(arr)
    alias[2] = 5.0
    assert arr[2] == 5.0
    assert hvdc.mem_size(alias)[0] == hvdc.mem_size(arr)[0]


def test_collectives_on_shared_memory_as_one_rank():
    """Before init, with an engine, and after shutdown, the same buffer works."""
    arr = hvdc.shared_array([1.0, 2.0, 3.0], dtype=np.float32)
    hvdc.init(bootstrap="singleton")
    try:
        assert hvdc.allreduce_(arr, name="local.shm", op=hvdc.Sum) is arr
        assert arr.tolist() == [1.0, 2.0, 3.0]
    finally:
        hvdc.shutdown()
    arr[0] = 9.0
    assert arr.tolist() == [9.0, 2.0, 3.0] and hvdc.mem_size(arr)[1] == 12
