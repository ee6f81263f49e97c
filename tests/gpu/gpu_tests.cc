// The gpu suite (needs a CUDA device; exits 77 with the reason without one, or 1 when
// HVDC_REQUIRE_GPU=1, as scripts/gpu_check.sh sets). Runs at np 1 (NCCL) and at np 2 on one
// GPU, where hvdc must choose host staging by itself. Covers allreduce with every op and scale
// factors over NCCL's dtypes (float16 and bfloat16 included), the other collectives, stream
// ordering (HVD_OP_STREAM_ORDERED, no host wait), device fusion of many small tensors, and the
// explicit host path (HVD_OP_HOST_PATH).
#include <cmath>
#include <cstdlib>

#include "gpu_support.h"

using namespace gpu_test;

namespace {

int g_device = 0;

hvd_status_t wait_free(hvd_handle_t h) {
  const hvd_status_t st = hvd_wait(h);
  hvd_handle_free(h);
  return st;
}

hvd_op_args_t args_with(uint32_t flags, void* stream = nullptr) {
  hvd_op_args_t a;
  hvd_op_args_init(&a, sizeof(a));
  a.flags = flags;
  a.cuda_stream = stream;
  return a;
}

// One allreduce of `count` elements, checked against the reference.
void check_allreduce(const hvdc_test::Case& c, size_t count, uint32_t flags, const char* label) {
  const size_t bytes = count * hvdc_test::dtype_bytes(c.dtype);
  DeviceBuffer in(bytes), out(bytes);
  upload_input(c, hvd_rank(), count, in.ptr);
  const int64_t shape[1] = {static_cast<int64_t>(count)};
  const hvd_tensor_t t = device_tensor(in.ptr, c.dtype, shape, 1, g_device);
  hvd_op_args_t a = args_with(flags);
  a.prescale_factor = c.prescale;
  a.postscale_factor = c.postscale;
  hvd_handle_t h = 0;
  const std::string name = std::string("gpu.") + label;
  HVD_CHECK(hvd_allreduce_async(&t, out.ptr, c.op, name.c_str(), &a, &h));
  HVD_CHECK(wait_free(h));
  std::string detail;
  GPU_CHECK(check_device_allreduce(out.ptr, count, c, hvd_size(), &detail), "%s: %s", label,
            detail.c_str());
}

void test_allreduce_ops_and_dtypes(uint32_t flags) {
  const int32_t dtypes[] = {HVD_FLOAT32, HVD_FLOAT16, HVD_BFLOAT16, HVD_FLOAT64,
                            HVD_INT32,   HVD_INT64,   HVD_UINT8};
  const int32_t ops[] = {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT};
  const size_t counts[] = {0, 1, 1000, (1u << 20) + 3};
  char label[96];
  for (int32_t dtype : dtypes) {
    for (int32_t op : ops) {
      for (size_t count : counts) {
        std::snprintf(label, sizeof(label), "allreduce.%u.%s.%s.%zu", flags,
                      hvdc_test::dtype_label(dtype), hvdc_test::op_label(op), count);
        check_allreduce({dtype, op}, count, flags, label);
      }
    }
  }
  // Scale factors, fused into the device copies.
  for (int32_t dtype : {HVD_FLOAT32, HVD_FLOAT16, HVD_BFLOAT16, HVD_INT32}) {
    std::snprintf(label, sizeof(label), "allreduce.scaled.%u.%s", flags,
                  hvdc_test::dtype_label(dtype));
    check_allreduce({dtype, HVD_OP_SUM, 0.5, 3.0}, 4099, flags, label);
  }
}

// The op reads its input only after work queued before it on the caller's stream, and later
// work on that stream sees the result without any host wait.
void test_stream_ordering() {
  const int size = hvd_size(), rank = hvd_rank();
  const size_t count = 1 << 20, bytes = count * sizeof(float), big = size_t{256} << 20;
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  DeviceBuffer in(bytes), out(bytes), scratch_a(big), scratch_b(big);
  float* host = nullptr;
  CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&host), bytes));
  for (size_t i = 0; i < count; ++i) host[i] = input_value(rank, i);
  CUDA_CHECK(cudaMemsetAsync(in.ptr, 0, bytes, stream));
  // A long copy first, so the input is written well after hvdc got the op.
  CUDA_CHECK(cudaMemcpyAsync(scratch_b.ptr, scratch_a.ptr, big, cudaMemcpyDefault, stream));
  CUDA_CHECK(cudaMemcpyAsync(in.ptr, host, bytes, cudaMemcpyDefault, stream));
  const int64_t shape[1] = {static_cast<int64_t>(count)};
  const hvd_tensor_t t = device_tensor(in.ptr, HVD_FLOAT32, shape, 1, g_device);
  hvd_op_args_t a = args_with(HVD_OP_STREAM_ORDERED, stream);
  hvd_handle_t h = 0;
  HVD_CHECK(hvd_allreduce_async(&t, out.ptr, HVD_OP_SUM, "gpu.stream_ordered", &a, &h));
  std::vector<float> result(count, -1.0f);
  CUDA_CHECK(cudaMemcpyAsync(result.data(), out.ptr, bytes, cudaMemcpyDefault, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));  // no hvd_wait before reading
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    if (result[i] != input_value(0, i) * size * (size + 1) / 2) ++wrong;
  }
  GPU_CHECK(wrong == 0, "stream ordering: %zu of %zu elements wrong", wrong, count);
  HVD_CHECK(wait_free(h));  // the host wait still works afterwards
  cudaFreeHost(host);
  cudaStreamDestroy(stream);
}

// Many small tensors in flight at once: fused into one collective on the device.
void test_device_fusion() {
  const int size = hvd_size(), rank = hvd_rank();
  constexpr int kTensors = 64;
  const size_t count = 1000;
  hvd_stats_t before{}, after{};
  before.struct_size = after.struct_size = sizeof(hvd_stats_t);
  HVD_CHECK(hvd_stats_get(&before));
  std::vector<DeviceBuffer*> bufs;
  std::vector<hvd_handle_t> handles(kTensors);
  const int64_t shape[1] = {static_cast<int64_t>(count)};
  auto case_of = [](int k) {
    return hvdc_test::Case{k % 2 ? HVD_FLOAT16 : HVD_BFLOAT16, HVD_OP_SUM, 1.0, 0.5};
  };
  for (int k = 0; k < kTensors; ++k) {
    const hvdc_test::Case c = case_of(k);
    bufs.push_back(new DeviceBuffer(count * 2));
    upload_input(c, rank, count, bufs.back()->ptr);
    const hvd_tensor_t t = device_tensor(bufs.back()->ptr, c.dtype, shape, 1, g_device);
    const std::string name = "gpu.fusion." + std::to_string(k);
    hvd_op_args_t a = args_with(0);
    a.postscale_factor = c.postscale;
    HVD_CHECK(hvd_allreduce_async(&t, t.data, HVD_OP_SUM, name.c_str(), &a, &handles[k]));
  }
  HVD_CHECK(hvd_wait_all(handles.data(), handles.size()));
  for (hvd_handle_t h : handles) hvd_handle_free(h);
  HVD_CHECK(hvd_stats_get(&after));
  GPU_CHECK(after.fused_tensors > before.fused_tensors, "no tensor was fused (%llu before)",
            static_cast<unsigned long long>(before.fused_tensors));
  for (int k = 0; k < kTensors; ++k) {
    std::string detail;
    GPU_CHECK(check_device_allreduce(bufs[k]->ptr, count, case_of(k), size, &detail),
              "fused tensor %d: %s", k, detail.c_str());
    delete bufs[k];
  }
}

// Broadcast, allgather, alltoall and reducescatter of device tensors.
void test_other_collectives() {
  const int size = hvd_size(), rank = hvd_rank();
  const size_t rows = 6 * static_cast<size_t>(size), cols = 5, count = rows * cols;
  const int64_t shape[2] = {static_cast<int64_t>(rows), static_cast<int64_t>(cols)};
  DeviceBuffer in(count * 4), out(count * 4);
  upload_floats(rank, count, in.ptr);
  const hvd_tensor_t t = device_tensor(in.ptr, HVD_FLOAT32, shape, 2, g_device);
  hvd_handle_t h = 0;
  HVD_CHECK(hvd_broadcast_async(&t, out.ptr, 0, "gpu.broadcast", nullptr, &h));
  HVD_CHECK(wait_free(h));
  std::vector<float> got = download_floats(count, out.ptr);
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) wrong += got[i] != input_value(0, i);
  GPU_CHECK(wrong == 0, "broadcast: %zu wrong", wrong);

  HVD_CHECK(hvd_reducescatter_async(&t, out.ptr, HVD_OP_SUM, "gpu.reducescatter", nullptr, &h));
  HVD_CHECK(wait_free(h));
  const size_t mine = count / size;
  got = download_floats(mine, out.ptr);
  wrong = 0;
  for (size_t i = 0; i < mine; ++i) {
    wrong += got[i] != input_value(0, rank * mine + i) * size * (size + 1) / 2;
  }
  GPU_CHECK(wrong == 0, "reducescatter: %zu wrong", wrong);

  HVD_CHECK(hvd_allgather_async(&t, "gpu.allgather", nullptr, &h));
  GPU_CHECK(hvd_wait(h) == HVD_SUCCESS, "allgather: %s", hvd_last_error_message());
  hvd_tensor_t gathered;
  HVD_CHECK(hvd_handle_output(h, &gathered));
  GPU_CHECK(gathered.device.type == HVD_DEVICE_CUDA && gathered.ndim == 2 &&
                gathered.shape[0] == static_cast<int64_t>(rows) * size,
            "allgather output: device %d, first dim %lld", gathered.device.type,
            static_cast<long long>(gathered.ndim > 0 ? gathered.shape[0] : -1));
  got = download_floats(count * size, gathered.data);
  wrong = 0;
  for (size_t i = 0; i < count * size; ++i) wrong += got[i] != input_value(i / count, i % count);
  GPU_CHECK(wrong == 0, "allgather: %zu wrong", wrong);
  hvd_handle_free(h);

  HVD_CHECK(hvd_alltoall_async(&t, nullptr, "gpu.alltoall", nullptr, &h));
  GPU_CHECK(hvd_wait(h) == HVD_SUCCESS, "alltoall: %s", hvd_last_error_message());
  hvd_tensor_t exchanged;
  HVD_CHECK(hvd_handle_output(h, &exchanged));
  got = download_floats(count, exchanged.data);
  wrong = 0;
  for (size_t i = 0; i < count; ++i) {  // block s comes from rank s: its block `rank`
    const size_t s = i / mine, j = rank * mine + i % mine;
    wrong += got[i] != input_value(static_cast<int>(s), j);
  }
  GPU_CHECK(wrong == 0, "alltoall: %zu wrong", wrong);
  hvd_handle_free(h);
}

}  // namespace

int main() {
  int32_t devices = 0;
  if (hvd_device_count(&devices) != HVD_SUCCESS) {
    const bool required = std::getenv("HVDC_REQUIRE_GPU") != nullptr;
    std::printf("%s: no usable GPU: %s\n", required ? "FAIL" : "SKIP", hvd_last_error_message());
    return required ? 1 : 77;
  }
  if (hvd_init() != HVD_SUCCESS) {
    std::printf("FAIL: hvd_init: %s\n", hvd_last_error_message());
    return 1;
  }
  g_device = hvd_local_rank() % devices;  // np 2 on one GPU: both ranks share device 0
  CUDA_CHECK(cudaSetDevice(g_device));
  std::printf("rank %d of %d on GPU %d of %d\n", hvd_rank(), hvd_size(), g_device, devices);
  test_allreduce_ops_and_dtypes(0);
  test_allreduce_ops_and_dtypes(HVD_OP_HOST_PATH);
  test_stream_ordering();
  test_device_fusion();
  test_other_collectives();
  HVD_CHECK(hvd_shutdown());
  std::printf("rank %d: gpu suite %s (%d failures)\n", hvd_rank(), g_failures ? "FAILED" : "ok",
              g_failures);
  return g_failures == 0 ? 0 : 1;
}
