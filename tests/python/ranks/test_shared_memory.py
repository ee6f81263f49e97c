"""Collectives whose buffers are shared host memory (hvdc.shared_zeros / shared_array), values
checked on every rank against plain arithmetic on the per-rank inputs."""
import numpy as np

import hvdc


def ranks():
    return hvdc.rank(), hvdc.size()


def test_allreduce_sum_in_place_and_async():
    r, n = ranks()
    grad = hvdc.shared_zeros((64, 64), np.float32)
    grad[:] = r + 1
    assert hvdc.allreduce_(grad, op=hvdc.Sum, name="shm.sum") is grad
    assert (grad == n * (n + 1) / 2).all()
    ints = hvdc.shared_array(np.arange(1000) * (r + 1), dtype=np.int64)
    hvdc.synchronize(hvdc.allreduce_async_(ints, op=hvdc.Sum, name="shm.sum.async"))
    assert ints.tolist() == (np.arange(1000) * (n * (n + 1) // 2)).tolist()


def test_allreduce_average_into_a_shared_output():
    r, n = ranks()
    source = hvdc.shared_array(np.full(3000, float(r)), dtype=np.float64)
    out = hvdc.shared_zeros(3000, np.float64)
    assert hvdc.allreduce(source, op=hvdc.Average, name="shm.avg", output=out) is out
    assert (out == (n - 1) / 2).all()
    assert (source == r).all()  # out of place leaves the input alone


def test_broadcast_and_allgather_from_shared_arrays():
    r, n = ranks()
    values = hvdc.shared_array(np.arange(5) + 10 * r, dtype=np.int32)
    hvdc.broadcast_(values, root_rank=1, name="shm.bcast")
    assert values.tolist() == [10, 11, 12, 13, 14]
    rows = hvdc.shared_array([[r, r]] * (r + 1), dtype=np.float32)
    gathered = hvdc.allgather(rows, name="shm.gather")
    assert gathered.tolist() == [[i, i] for i in range(n) for _ in range(i + 1)]


def test_a_buffer_made_before_init_takes_part(survivor):
    r, n = ranks()
    arr = survivor["array"]
    arr[:] = np.arange(16) + r
    hvdc.allreduce_(arr, op=hvdc.Sum, name="shm.survivor")
    survivor["expected"] = (np.arange(16) * n + n * (n - 1) // 2).tolist()
    assert arr.tolist() == survivor["expected"]
