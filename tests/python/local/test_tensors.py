"""Zero-copy inputs, results of the input's kind, and bad input, on a singleton engine."""
import array
import ctypes

import numpy as np
import pytest

import hvdc
from hvdc import _dlpack


@pytest.fixture(scope="module", autouse=True)
def engine():
    hvdc.init(bootstrap="singleton")
    yield
    hvdc.shutdown()


class CountingProducer:
    """A DLPack producer whose deleter counts its calls: legacy or versioned capsules."""

    def __init__(self, values, versioned, read_only=False):
        self.values = np.ascontiguousarray(values, dtype=np.float32)
        self.versioned = versioned
        self.read_only = read_only
        self.deleted = 0
        self._shape = (ctypes.c_int64 * 1)(len(self.values))
        self._deleter = _dlpack._deleter_t(self._delete)

    def _delete(self, _address):
        self.deleted += 1

    def __dlpack__(self, stream=None, max_version=None):
        cls = _dlpack.DLManagedTensorVersioned if self.versioned else _dlpack.DLManagedTensor
        self.managed = managed = cls()
        dl = managed.dl_tensor
        dl.data = self.values.ctypes.data
        dl.device.type, dl.device.id = hvdc._ffi.HVD_DEVICE_CPU, 0
        dl.ndim = 1
        dl.dtype.code, dl.dtype.bits, dl.dtype.lanes = 2, 32, 1
        dl.shape = self._shape
        managed.deleter = self._deleter
        if self.versioned:
            managed.version.major = 1
            managed.flags = _dlpack.FLAG_READ_ONLY if self.read_only else 0
        name = _dlpack.VERSIONED_NAME if self.versioned else _dlpack.LEGACY_NAME
        return _dlpack._api.PyCapsule_New(ctypes.addressof(managed), name,
                                          _dlpack._capsule_destructor_t())

    def __dlpack_device__(self):
        return (hvdc._ffi.HVD_DEVICE_CPU, 0)


@pytest.mark.parametrize("versioned", [False, True])
def test_dlpack_capsule_deleter_runs_exactly_once(versioned):
    producer = CountingProducer([1, 2, 3], versioned)
    out = hvdc.allreduce(producer, op=hvdc.Sum, name=f"dl.{versioned}")
    assert producer.deleted == 1
    assert isinstance(out, np.ndarray) and out.tolist() == [1, 2, 3]


def test_dlpack_read_only_versioned_output_is_refused():
    producer = CountingProducer([1, 2], versioned=True, read_only=True)
    with pytest.raises(ValueError, match="tensor: the tensor is read-only"):
        hvdc.allreduce_(producer)
    assert producer.deleted == 1
    assert hvdc.allreduce(CountingProducer([4], versioned=True, read_only=True)).tolist() == [4]


@pytest.mark.parametrize("make", [
    lambda: array.array("d", [1.5, 2.5]),
    lambda: bytearray(b"\x01\x02\x03"),
    lambda: memoryview(array.array("i", [1, 2, 3, 4, 5, 6])).cast("B").cast("i", (2, 3)),
    lambda: np.arange(6, dtype=np.int64).reshape(2, 3),
])
def test_results_are_of_the_input_kind(make):
    tensor = make()
    out = hvdc.allreduce(tensor, op=hvdc.Sum)
    assert type(out) is type(tensor)
    assert memoryview(out).tolist() == memoryview(tensor).tolist()


def test_readonly_buffer_is_an_input_but_not_an_output():
    data = bytes(array.array("f", [1, 2]))
    view = memoryview(data).cast("f")
    assert hvdc.allreduce(view).tolist() == [1, 2]
    with pytest.raises(ValueError, match="tensor: memoryview does not give a writable buffer"):
        hvdc.allreduce_(view)
    frozen = np.ones(3, np.float32)
    frozen.flags.writeable = False
    assert hvdc.allreduce(frozen).tolist() == [1, 1, 1]
    with pytest.raises(ValueError, match="tensor"):
        hvdc.broadcast_(frozen, 0)


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="tensor"):
        hvdc.allreduce(np.ones((4, 4), np.float32)[:, ::2])  # non-contiguous through DLPack
    with pytest.raises(ValueError, match="tensor: the buffer is not C-contiguous"):
        hvdc.allreduce(memoryview(np.ones((4, 4), np.float32)[:, ::2]))
    with pytest.raises(TypeError, match="tensor: buffer format 'I'"):
        hvdc.allreduce(array.array("I", [1]))
    with pytest.raises(ValueError, match="tensor: "):  # complex: no hvdc dtype
        hvdc.allreduce(np.ones(2, np.complex64))
    with pytest.raises(TypeError, match="tensor: int is neither"):
        hvdc.allreduce(3)
    with pytest.raises(TypeError, match="name: expected a str"):
        hvdc.allreduce(bytearray(1), name=5)


def test_allgather_output_shares_the_library_buffer_and_keeps_the_handle():
    out = hvdc.allgather(np.arange(4, dtype=np.float64), name="gather.keep")
    base_live = _dlpack.live_exports()
    assert base_live >= 1 and out.tolist() == [0, 1, 2, 3]
    view = out[1:]
    del out
    assert view.tolist() == [1, 2, 3]  # the slice's base still holds the handle's memory
    del view
    assert _dlpack.live_exports() == base_live - 1
    assert hvdc.barrier() is None  # the next binding call frees the queued handle
    assert hvdc._handles.pending_frees() == 0
    mv = hvdc.allgather(array.array("h", [7, 8]))
    assert isinstance(mv, memoryview) and mv.tolist() == [7, 8]


def test_alltoall_and_reducescatter_on_one_rank():
    out, splits = hvdc.alltoall(np.arange(3, dtype=np.int32), splits=[3])
    assert out.tolist() == [0, 1, 2] and splits == [3]
    assert hvdc.reducescatter(np.ones((2, 2), np.float32), op=hvdc.Sum).shape == (2, 2)


def test_allreduce_into_a_given_output():
    tensor, output = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    assert hvdc.allreduce(tensor, op=hvdc.Sum, output=output) is output
    assert output.tolist() == [0, 1, 2, 3]
    handle = hvdc.allreduce_async(array.array("f", [5]), output=memoryview(bytearray(4)).cast("f"))
    assert hvdc.synchronize(handle).tolist() == [5]
    with pytest.raises(ValueError, match="output: 16 bytes of dtype 8"):
        hvdc.allreduce(tensor, output=np.zeros(2, np.float64))
