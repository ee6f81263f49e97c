"""cuda_stream, stream_ordered and host_path reach hvd_op_args_t as the C layer defines them."""
import numpy as np
import pytest

import hvdc
from hvdc import _ffi, _ops


@pytest.fixture(scope="module", autouse=True)
def engine():
    hvdc.init(bootstrap="singleton")
    yield
    hvdc.shutdown()


class TorchLikeStream:
    cuda_stream = 0x7F00


class CupyLikeStream:
    ptr = 0x7F10


def test_defaults_are_the_default_stream_and_no_flags():
    args = _ops._op_args(None)
    assert args.cuda_stream is None
    assert args.flags == 0


@pytest.mark.parametrize("stream_ordered,host_path,flags", [
    (True, False, _ffi.HVD_OP_STREAM_ORDERED),
    (False, True, _ffi.HVD_OP_HOST_PATH),
    (True, True, _ffi.HVD_OP_STREAM_ORDERED | _ffi.HVD_OP_HOST_PATH),
])
def test_flags_are_set_bit_by_bit(stream_ordered, host_path, flags):
    args = _ops._op_args(None, stream_ordered=stream_ordered, host_path=host_path)
    assert args.flags == flags


@pytest.mark.parametrize("stream,address", [
    (0x1234, 0x1234), (np.uint64(0x20), 0x20), (TorchLikeStream(), 0x7F00),
    (CupyLikeStream(), 0x7F10),
])
def test_cuda_stream_takes_an_address_or_an_object_carrying_one(stream, address):
    assert _ops._op_args(None, cuda_stream=stream).cuda_stream == address


@pytest.mark.parametrize("stream,error,words", [
    ("0x10", TypeError, "cuda_stream: expected None, an int address"),
    (1.5, TypeError, "got float"),
    (True, TypeError, "got bool"),
    (-1, ValueError, "cuda_stream: address -1 is negative"),
])
def test_bad_cuda_stream_names_the_argument(stream, error, words):
    with pytest.raises(error, match=words):
        _ops._op_args(None, cuda_stream=stream)


def test_device_options_are_keyword_only():
    with pytest.raises(TypeError):
        hvdc.allreduce(np.ones(2, np.float32), None, hvdc.Sum, 1.0, 1.0, None, None, 0)


def test_cpu_tensors_ignore_device_options_on_one_rank():
    data = np.arange(4, dtype=np.float32)
    out = hvdc.allreduce(data, op=hvdc.Sum, cuda_stream=TorchLikeStream(), stream_ordered=True,
                         host_path=True)
    assert out.tolist() == data.tolist()
    assert hvdc.allgather(data, host_path=True).tolist() == data.tolist()
    grouped = hvdc.grouped_allreduce([data, data], op=hvdc.Sum, host_path=True)
    assert [g.tolist() for g in grouped] == [data.tolist()] * 2
