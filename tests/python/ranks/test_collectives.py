"""Every collective with {numpy, buffer protocol} x {sync, async}, values checked on every rank.

Expected values come from plain arithmetic on the per-rank inputs, not from hvdc.
"""
import array

import numpy as np
import pytest

import hvdc

KINDS = ["numpy", "buffer"]
MODES = ["sync", "async"]
SYNC = {"allreduce": hvdc.allreduce, "allreduce_": hvdc.allreduce_,
        "grouped_allreduce": hvdc.grouped_allreduce, "allgather": hvdc.allgather,
        "broadcast": hvdc.broadcast, "broadcast_": hvdc.broadcast_, "alltoall": hvdc.alltoall,
        "reducescatter": hvdc.reducescatter}
ASYNC = {"allreduce": hvdc.allreduce_async, "allreduce_": hvdc.allreduce_async_,
         "grouped_allreduce": hvdc.grouped_allreduce_async, "allgather": hvdc.allgather_async,
         "broadcast": hvdc.broadcast_async, "broadcast_": hvdc.broadcast_async_,
         "alltoall": hvdc.alltoall_async, "reducescatter": hvdc.reducescatter_async}
TYPECODES = {np.float32: "f", np.float64: "d", np.int32: "i", np.int64: "q", np.uint8: "B"}


def run(mode, collective, *args, **kwargs):
    if mode == "sync":
        return SYNC[collective](*args, **kwargs)
    handle = ASYNC[collective](*args, **kwargs)
    return hvdc.synchronize(handle)


def make(kind, values, dtype, rows=None):
    """numpy: an array (2-D with `rows` rows); buffer: a flat array.array of the same values."""
    if kind == "numpy":
        arr = np.array(values, dtype=dtype)
        return arr.reshape(rows, -1) if rows is not None else arr
    return array.array(TYPECODES[dtype], values)


def flat(result):
    return np.asarray(memoryview(result)).ravel().tolist()


def check_kind(kind, result):
    assert isinstance(result, np.ndarray if kind == "numpy" else (array.array, memoryview))




def ranks():
    return hvdc.rank(), hvdc.size()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype,op,expect", [
    (np.float32, hvdc.Sum, lambda i, n: (i + 1) * n * (n + 1) / 2),
    (np.float64, hvdc.Average, lambda i, n: (i + 1) * (n + 1) / 2),
    (np.int32, hvdc.Min, lambda i, n: (i + 1)),
    (np.int64, hvdc.Max, lambda i, n: (i + 1) * n),
    (np.int32, hvdc.Product, lambda i, n: np.prod([(i + 1) * r for r in range(1, n + 1)])),
])
def test_allreduce(kind, mode, dtype, op, expect):
    rank, n = ranks()
    tensor = make(kind, [(i + 1) * (rank + 1) for i in range(5)], dtype)
    out = run(mode, "allreduce", tensor, op=op, name=f"ar.{kind}.{mode}.{dtype.__name__}.{op}")
    check_kind(kind, out)
    assert flat(out) == pytest.approx([expect(i, n) for i in range(5)])
    inplace = run(mode, "allreduce_", tensor, op=op)
    assert inplace is tensor and flat(tensor) == pytest.approx([expect(i, n) for i in range(5)])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", MODES)
def test_scale_factors_and_grouped_allreduce(kind, mode):
    rank, n = ranks()
    out = run(mode, "allreduce", make(kind, [1.0, 2.0], np.float64), op=hvdc.Sum,
              prescale_factor=2.0, postscale_factor=0.5)
    assert flat(out) == [n * 1.0, n * 2.0]
    group = [make(kind, [rank] * 3, np.float32), make(kind, [1, rank], np.int64)]
    outs = run(mode, "grouped_allreduce", group, op=hvdc.Sum, name=f"group.{kind}.{mode}")
    total = n * (n - 1) // 2
    assert [flat(o) for o in outs] == [[total] * 3, [n, total]]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", MODES)
def test_allgather_with_uneven_first_dimension(kind, mode):
    rank, n = ranks()
    tensor = make(kind, [rank * 10 + c for _ in range(rank + 1) for c in range(2)], np.float32,
                  rows=rank + 1)
    out = run(mode, "allgather", tensor, name=f"ag.{kind}.{mode}")
    check_kind(kind, out)
    expected = [r * 10 + c for r in range(n) for _ in range(r + 1) for c in range(2)]
    assert flat(out) == expected
    if kind == "numpy":
        assert out.shape == (n * (n + 1) // 2, 2)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", MODES)
def test_broadcast(kind, mode):
    rank, n = ranks()
    root = n - 1
    tensor = make(kind, [rank, rank + 100, 7], np.int32)
    out = run(mode, "broadcast", tensor, root, name=f"bc.{kind}.{mode}")
    check_kind(kind, out)
    assert flat(out) == [root, root + 100, 7]
    assert flat(tensor) == [rank, rank + 100, 7]  # out of place leaves the input alone
    assert run(mode, "broadcast_", tensor, 0) is tensor and flat(tensor) == [0, 100, 7]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", MODES)
def test_alltoall_with_splits_and_evenly(kind, mode):
    rank, n = ranks()
    splits = [dest + 1 for dest in range(n)]
    values = [rank * 10 + dest for dest in range(n) for _ in range(dest + 1)]
    out, received = run(mode, "alltoall", make(kind, values, np.int64), splits=splits,
                        name=f"a2a.{kind}.{mode}")
    check_kind(kind, out)
    assert received == [rank + 1] * n
    assert flat(out) == [src * 10 + rank for src in range(n) for _ in range(rank + 1)]
    even, received = run(mode, "alltoall", make(kind, [rank] * n, np.float64))
    assert flat(even) == list(range(n)) and received == [1] * n


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", MODES)
def test_reducescatter_uneven_rows(kind, mode):
    rank, n = ranks()
    rows = 2 * n + 1
    tensor = make(kind, [(rank + 1) * (row + 1) for row in range(rows)], np.float32)
    out = run(mode, "reducescatter", tensor, op=hvdc.Sum, name=f"rs.{kind}.{mode}")
    check_kind(kind, out)
    mine = 3 if rank == 0 else 2  # 2n+1 rows: rank 0 gets the one extra
    first = sum(3 if r == 0 else 2 for r in range(rank))
    total = n * (n + 1) / 2
    assert flat(out) == [total * (row + 1) for row in range(first, first + mine)]


def test_mismatch_fails_on_every_rank_and_the_job_goes_on():
    rank, n = ranks()
    with pytest.raises(hvdc.HvdcMismatchError, match="mismatch.shape"):
        hvdc.allreduce(np.ones(rank + 1, np.float32), name="mismatch.shape")
    with pytest.raises(hvdc.HvdcMismatchError):
        handle = hvdc.allreduce_async(array.array("f" if rank == 0 else "d", [1.0]),
                                      name="mismatch.dtype")
        hvdc.synchronize(handle)
    assert hvdc.allreduce(np.ones(2), op=hvdc.Sum).tolist() == [n, n]


def test_process_sets():
    rank, n = ranks()
    from conftest import STATIC_SET
    assert STATIC_SET.included() == (rank == 0)
    assert STATIC_SET.size() == 1 and STATIC_SET.rank() == (0 if rank == 0 else -1)
    if STATIC_SET.included():
        out = hvdc.allreduce(np.full(2, 5.0), op=hvdc.Sum, process_set=STATIC_SET)
        assert out.tolist() == [5.0, 5.0]
    assert hvdc.global_process_set.ranks == list(range(n))
    members = [n - 1, 0] if n > 2 else [1]
    dynamic = hvdc.add_process_set(members)
    assert dynamic.process_set_id >= 2 and dynamic.ranks == sorted(members)
    if dynamic.included():
        got = hvdc.allgather(array.array("i", [rank]), process_set=dynamic)
        assert got.tolist() == sorted(members)
        hvdc.barrier(process_set=dynamic)
        summed = hvdc.allreduce(np.ones(1), op=hvdc.Sum, process_set=dynamic.process_set_id)
        assert summed.tolist() == [len(members)]
    hvdc.remove_process_set(dynamic)
    assert dynamic.process_set_id is None


def test_broadcast_helpers_barrier_and_join():
    rank, n = ranks()
    params = {"w": np.full(3, float(rank)), "b": array.array("i", [rank])}
    hvdc.broadcast_parameters(params, root_rank=1)
    assert params["w"].tolist() == [1.0] * 3 and params["b"].tolist() == [1]
    obj = hvdc.broadcast_object({"rank": rank, "text": "é" * rank}, root_rank=n - 1)
    assert obj == {"rank": n - 1, "text": "é" * (n - 1)}
    hvdc.barrier()
    assert hvdc.join() in range(n)


def test_duplicate_name_in_flight_is_refused_locally():
    rank, n = ranks()
    if rank == 0:  # the other ranks submit "dup" only after the barrier: it stays in flight
        first = hvdc.allreduce_async(np.ones(2), name="dup", op=hvdc.Sum)
        with pytest.raises(hvdc.HvdcDuplicateNameError, match="dup"):
            hvdc.allreduce_async(np.ones(2), name="dup")
        hvdc.barrier()
    else:
        hvdc.barrier()
        first = hvdc.allreduce_async(np.ones(2), name="dup", op=hvdc.Sum)
    assert hvdc.synchronize(first).tolist() == [n, n]


def test_submission_from_several_threads():
    import threading
    rank, n = ranks()
    results, errors = {}, []

    def worker(tid):
        try:
            handles = [hvdc.allreduce_async(np.full(3, float(tid + i)), name=f"thread.{tid}.{i}",
                                            op=hvdc.Sum) for i in range(10)]
            results[tid] = [hvdc.synchronize(h).tolist() for h in handles]
        except Exception as exc:  # reported below, on the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert results == {t: [[n * float(t + i)] * 3 for i in range(10)] for t in range(4)}
