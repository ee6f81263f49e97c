"""torch tensors in, torch tensors out (runs where torch is installed; skipped elsewhere)."""
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed in the test venv")

import hvdc  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def engine():
    hvdc.init(bootstrap="singleton")
    yield
    hvdc.shutdown()


def test_torch_in_torch_out():
    tensor = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    out = hvdc.allreduce(tensor, op=hvdc.Sum)
    assert isinstance(out, torch.Tensor) and torch.equal(out, tensor)
    gathered = hvdc.allgather(torch.ones(2, dtype=torch.bfloat16))
    assert isinstance(gathered, torch.Tensor) and gathered.dtype == torch.bfloat16
    assert hvdc.allreduce_(tensor) is tensor


def test_non_contiguous_torch_tensor_names_the_argument():
    with pytest.raises(ValueError, match="tensor"):
        hvdc.allreduce(torch.ones(4, 4).t())


def test_torch_views_shared_memory_through_dlpack():
    import numpy as np
    arr = hvdc.shared_zeros(6, np.float32)
    tensor = torch.from_dlpack(arr)
    tensor[3] = 6.0
    assert arr[3] == 6.0
    assert hvdc.allreduce_(tensor, op=hvdc.Sum) is tensor and arr[3] == 6.0
