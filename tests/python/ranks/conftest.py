"""Every rank runs the same tests in the same order, on one engine for the whole session."""
import pytest

import hvdc

STATIC_SET = hvdc.ProcessSet([0])  # a set must differ from every other, the world too


@pytest.fixture(scope="session", autouse=True)
def engine():
    hvdc.init(process_sets=[STATIC_SET])
    assert hvdc.size() >= 2, "run these tests with 2 or more ranks"
    yield
    hvdc.shutdown()
