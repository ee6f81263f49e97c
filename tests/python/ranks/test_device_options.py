"""host_path and the other device options on CPU tensors across ranks: results unchanged."""
import numpy as np

import hvdc


def test_allreduce_with_host_path_gives_the_sum():
    rank, size = hvdc.rank(), hvdc.size()
    data = np.full(5, rank + 1, dtype=np.float32)
    out = hvdc.allreduce(data, name="device_options.host_path", op=hvdc.Sum, host_path=True)
    assert out.tolist() == [size * (size + 1) / 2] * 5


def test_every_device_option_together_on_async_and_in_place_ops():
    rank, size = hvdc.rank(), hvdc.size()
    data = np.full(3, rank + 1, dtype=np.float64)
    handle = hvdc.allreduce_async_(data, op=hvdc.Average, cuda_stream=0, stream_ordered=True,
                                   host_path=True)
    assert hvdc.synchronize(handle) is data
    assert data.tolist() == [(size + 1) / 2] * 3
    root = hvdc.broadcast(np.full(2, rank, dtype=np.int32), 0, host_path=True)
    assert root.tolist() == [0, 0]
