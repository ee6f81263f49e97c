// Device benchmarks on one GPU (built with CUDA; exits 77 without a usable GPU):
//   hvdc_device_bench [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP]
//     hvdc's device allreduce (hvd_allreduce_async + hvd_wait, float32 sum) against raw
//     ncclAllReduce on the same buffers in the same run, per size: mean time of each, the
//     ratio, whether hvdc is within the target (5% + 10 us of NCCL), and #wrong.
//   hvdc_device_bench --copy [...]
//     The fusion copy kernel (Runtime::batched_copy of 64 pieces, scale 1) against one
//     cudaMemcpyAsync of the same bytes: GB/s of each and the ratio (target >= 0.70).
// One process, one rank: bus bandwidth needs two or more GPUs.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "device/runtime.h"
#include "hvdc.h"

namespace {

struct Options {
  size_t min_bytes = 1024, max_bytes = size_t{256} << 20, factor = 4;
  int iters = 20, warmup = 5;
  bool copy = false;
};

size_t parse_size(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (*end == 'K') v *= 1024;
  if (*end == 'M') v *= 1024 * 1024;
  if (*end == 'G') v *= 1024.0 * 1024 * 1024;
  return static_cast<size_t>(v);
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--copy") {
      o->copy = true;
    } else if (a == "-b" && has_value) {
      o->min_bytes = parse_size(argv[++i]);
    } else if (a == "-e" && has_value) {
      o->max_bytes = parse_size(argv[++i]);
    } else if (a == "-f" && has_value) {
      o->factor = parse_size(argv[++i]);
    } else if (a == "-n" && has_value) {
      o->iters = std::atoi(argv[++i]);
    } else if (a == "-w" && has_value) {
      o->warmup = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--copy] [-b MIN] [-e MAX] [-f FACTOR] [-n N] [-w W]\n",
                   argv[0]);
      return false;
    }
  }
  return o->factor >= 2 && o->iters > 0 && o->min_bytes >= 4 && o->min_bytes <= o->max_bytes;
}

#define CUDA_OR_DIE(call)                                              \
  do {                                                                 \
    const cudaError_t e_ = (call);                                     \
    if (e_ != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                    \
    }                                                                  \
  } while (0)

template <class F>
double mean_us(int warmup, int iters, F run) {
  for (int i = 0; i < warmup; ++i) run();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) run();
  const std::chrono::duration<double, std::micro> d = std::chrono::steady_clock::now() - t0;
  return d.count() / iters;
}

int allreduce_sweep(const Options& o) {
  if (hvd_init() != HVD_SUCCESS) {
    std::fprintf(stderr, "hvd_init: %s\n", hvd_last_error_message());
    return 1;
  }
  ncclComm_t comm = nullptr;
  int device = 0;
  if (ncclCommInitAll(&comm, 1, &device) != ncclSuccess) return 1;
  cudaStream_t stream = nullptr;
  CUDA_OR_DIE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::printf("%12s %12s %12s %8s %8s %8s\n", "bytes", "hvdc_us", "nccl_us", "ratio", "target",
              "#wrong");
  int misses = 0;
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
    const size_t count = bytes / sizeof(float);
    void* buf = nullptr;
    CUDA_OR_DIE(cudaMalloc(&buf, bytes));
    std::vector<float> ones(count, 1.0f);
    CUDA_OR_DIE(cudaMemcpy(buf, ones.data(), bytes, cudaMemcpyDefault));
    const int64_t shape[1] = {static_cast<int64_t>(count)};
    const hvd_tensor_t t{buf, HVD_FLOAT32, 1, shape, {HVD_DEVICE_CUDA, device}};
    const double hvdc_us = mean_us(o.warmup, o.iters, [&] {
      hvd_handle_t h = 0;
      if (hvd_allreduce_async(&t, buf, HVD_OP_SUM, "bench.device", nullptr, &h) != HVD_SUCCESS ||
          hvd_wait(h) != HVD_SUCCESS) {
        std::fprintf(stderr, "hvdc allreduce: %s\n", hvd_last_error_message());
        std::exit(1);
      }
      hvd_handle_free(h);
    });
    const double nccl_us = mean_us(o.warmup, o.iters, [&] {
      ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, comm, stream);
      cudaStreamSynchronize(stream);
    });
    CUDA_OR_DIE(cudaMemcpy(ones.data(), buf, bytes, cudaMemcpyDefault));
    long wrong = 0;
    for (float v : ones) wrong += v != 1.0f;  // one rank: a sum is the input
    const bool within = hvdc_us <= nccl_us * 1.05 + 10.0;
    if (bytes >= (1u << 20) && !within) ++misses;
    std::printf("%12zu %12.1f %12.1f %8.3f %8s %8ld\n", bytes, hvdc_us, nccl_us, hvdc_us / nccl_us,
                within ? "met" : "MISSED", wrong);
    cudaFree(buf);
  }
  ncclCommDestroy(comm);
  cudaStreamDestroy(stream);
  hvd_shutdown();
  std::printf("allreduce >= 1 MiB: %s\n", misses == 0 ? "within 5%% + 10 us of NCCL" : "MISSED");
  return 0;
}

// The plugin's Runtime, for its copy kernel.
hvdc::device::Runtime* load_runtime() {
  const char* env = std::getenv("HVDC_CUDA_PLUGIN");
  void* plugin = dlopen(env != nullptr ? env : "libhvdc_cuda.so", RTLD_NOW | RTLD_LOCAL);
  if (plugin == nullptr) {
    std::fprintf(stderr, "cannot load libhvdc_cuda.so: %s\n", dlerror());
    return nullptr;
  }
  auto create = reinterpret_cast<hvdc::device::RuntimeCreateFn>(
      dlsym(plugin, hvdc::device::kRuntimeCreateSymbol));
  char err[512] = {0};
  hvdc::device::Runtime* rt = create != nullptr ? create(err, sizeof(err)) : nullptr;
  if (rt == nullptr) std::fprintf(stderr, "the CUDA plugin: %s\n", err);
  return rt;
}

int copy_sweep(const Options& o) {
  hvdc::device::Runtime* rt = load_runtime();
  if (rt == nullptr) return 1;
  cudaStream_t stream = nullptr;
  CUDA_OR_DIE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const hvdc::device::Stream s{stream};
  std::printf("%12s %12s %12s %8s\n", "bytes", "kernel_GBs", "memcpy_GBs", "ratio");
  constexpr size_t kPieces = 64;  // a fusion buffer of 64 tensors
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
    void *src = nullptr, *dst = nullptr;
    CUDA_OR_DIE(cudaMalloc(&src, bytes));
    CUDA_OR_DIE(cudaMalloc(&dst, bytes));
    const size_t count = bytes / sizeof(float), per = count / kPieces;
    std::vector<hvdc::device::CopyPiece> pieces;
    for (size_t i = 0; i < kPieces; ++i) {
      const size_t n = i + 1 < kPieces ? per : count - per * (kPieces - 1);
      pieces.push_back({static_cast<float*>(src) + i * per, static_cast<float*>(dst) + i * per, n});
    }
    const double kernel_us = mean_us(o.warmup, o.iters, [&] {
      if (!rt->batched_copy(pieces.data(), pieces.size(), HVD_FLOAT32, 1.0, s).is_ok()) {
        std::fprintf(stderr, "batched_copy: %s\n", rt->last_error_text());
        std::exit(1);
      }
      cudaStreamSynchronize(stream);
    });
    const double memcpy_us = mean_us(o.warmup, o.iters, [&] {
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
      cudaStreamSynchronize(stream);
    });
    std::printf("%12zu %12.1f %12.1f %8.3f\n", bytes, bytes / kernel_us / 1e3,
                bytes / memcpy_us / 1e3, memcpy_us / kernel_us);
    cudaFree(src);
    cudaFree(dst);
  }
  cudaStreamDestroy(stream);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) return 2;
  int32_t devices = 0;
  if (hvd_device_count(&devices) != HVD_SUCCESS) {
    std::printf("SKIP: no usable GPU: %s\n", hvd_last_error_message());
    return 77;
  }
  return o.copy ? copy_sweep(o) : allreduce_sweep(o);
}
