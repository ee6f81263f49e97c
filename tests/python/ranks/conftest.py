"""Every rank runs the same tests in the same order, on one engine for the whole session."""
import gc

import numpy as np
import pytest

import hvdc

STATIC_SET = hvdc.ProcessSet([0])  # a set must differ from every other, the world too


@pytest.fixture(scope="session")
def survivor():
    """A shared array made before init (the engine fixture needs it, so it is set up first and
    torn down last). Tests store in "expected" what it must hold after shutdown; it must then
    still be readable and writable, and go with its last view."""
    state = {"array": hvdc.shared_zeros(16, np.int32), "expected": [0] * 16}
    yield state
    assert not hvdc.is_initialized()
    arr = state.pop("array")
    assert arr.tolist() == state["expected"]
    arr[:] = -5
    assert arr.tolist() == [-5] * 16
    start, nbytes = hvdc.mem_size(arr[3:])
    assert nbytes == 64
    del arr
    gc.collect()
    with pytest.raises(hvdc.HvdcInvalidArgumentError, match="in no buffer"):
        hvdc.mem_size(start)


@pytest.fixture(scope="session", autouse=True)
def engine(survivor):
    hvdc.init(process_sets=[STATIC_SET])
    assert hvdc.size() >= 2, "run these tests with 2 or more ranks"
    yield
    hvdc.shutdown()
