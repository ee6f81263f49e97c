// Kernels of the batched scaled copy. One template walks a launch's pieces (launch_plan.h says
// which block serves which piece); an element functor per dtype does the arithmetic with the
// host path's rounding rules (ops/cpu/reduce/reduce.h, scale()), so both paths give equal bits.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "device/cuda/copy_kernels.h"
#include "device/cuda/launch_plan.h"
#include "hvdc.h"

namespace hvdc::device::cuda {
namespace {

// One launch's pieces, by value in the kernel's parameters.
struct Batch {
  const void* src[kMaxPiecesPerLaunch];
  void* dst[kMaxPiecesPerLaunch];
  uint64_t words[kMaxPiecesPerLaunch];
  uint32_t first_block[kMaxPiecesPerLaunch + 1];
  uint32_t n;
};

template <class Word>
struct Move {
  using In = Word;
  using Out = Word;
  __device__ Word operator()(Word x) const { return x; }
};

// An integer type's range: [lo, top) in double (top is a power of two, so exact) and its ends.
template <class T>
struct Range {
  static constexpr bool kSigned = T(-1) < T(0);
  static constexpr uint64_t kMagnitude = uint64_t{1} << (sizeof(T) * 8 - (kSigned ? 1 : 0));
  static constexpr double top = static_cast<double>(kMagnitude);
  static constexpr double lo = kSigned ? -top : 0.0;
  static constexpr T max = static_cast<T>(kMagnitude - 1);
  static constexpr T min =
      kSigned ? static_cast<T>(-static_cast<int64_t>(kMagnitude - 1) - 1) : T(0);
};

// Integers: multiply in double, round to nearest even (rint), saturate; NaN gives 0.
template <class T>
struct ScaleInt {
  using In = T;
  using Out = T;
  double factor;
  __device__ T operator()(T x) const {
    const double v = rint(static_cast<double>(x) * factor);
    if (v != v) return 0;
    if (v <= Range<T>::lo) return Range<T>::min;
    if (v >= Range<T>::top) return Range<T>::max;
    return static_cast<T>(v);
  }
};

struct ScaleHalf {
  using In = __half;
  using Out = __half;
  float factor;
  __device__ __half operator()(__half x) const { return __float2half_rn(__half2float(x) * factor); }
};

struct ScaleBf16 {
  using In = __nv_bfloat16;
  using Out = __nv_bfloat16;
  float factor;
  __device__ __nv_bfloat16 operator()(__nv_bfloat16 x) const {
    return __float2bfloat16_rn(__bfloat162float(x) * factor);
  }
};

struct ScaleF32 {
  using In = float;
  using Out = float;
  double factor;
  __device__ float operator()(float x) const { return static_cast<float>(x * factor); }
};

struct ScaleF64 {
  using In = double;
  using Out = double;
  double factor;
  __device__ double operator()(double x) const { return x * factor; }
};

struct ScaleBool {
  using In = uint8_t;
  using Out = uint8_t;
  bool keep;
  __device__ uint8_t operator()(uint8_t x) const { return keep && x != 0; }
};

template <class Op>
__global__ void __launch_bounds__(kBlockThreads) batched_kernel(Batch batch, Op op) {
  const uint32_t p = piece_of_block(batch.first_block, batch.n, blockIdx.x);
  const auto* src = static_cast<const typename Op::In*>(batch.src[p]);
  auto* dst = static_cast<typename Op::Out*>(batch.dst[p]);
  const uint64_t words = batch.words[p];
  const uint64_t blocks = batch.first_block[p + 1] - batch.first_block[p];
  const uint64_t stride = blocks * kWordsPerChunk;
  for (uint64_t chunk = (blockIdx.x - batch.first_block[p]) * kWordsPerChunk; chunk < words;
       chunk += stride) {
    const uint64_t end = chunk + kWordsPerChunk < words ? chunk + kWordsPerChunk : words;
    for (uint64_t i = chunk + threadIdx.x; i < end; i += kBlockThreads) dst[i] = op(src[i]);
  }
}

// Launches `op` over pieces[0, n) (at most kMaxPiecesPerLaunch) whose word counts are words[].
template <class Op>
cudaError_t launch(const CopyPiece* pieces, const uint64_t* words, size_t n, Op op,
                   cudaStream_t stream) {
  Batch batch;
  const GridPlan plan = plan_grid(words, n);
  if (plan.blocks == 0) return cudaSuccess;
  for (size_t i = 0; i < n; ++i) {
    batch.src[i] = pieces[i].src;
    batch.dst[i] = pieces[i].dst;
    batch.words[i] = words[i];
    batch.first_block[i] = plan.first_block[i];
  }
  batch.first_block[n] = plan.blocks;
  batch.n = static_cast<uint32_t>(n);
  batched_kernel<<<plan.blocks, kBlockThreads, 0, stream>>>(batch, op);
  return cudaGetLastError();
}

// A plain copy, in the widest word that every piece's addresses and size allow. In-place pieces
// are left out (their words count 0).
cudaError_t launch_move(const CopyPiece* pieces, size_t n, size_t element_size,
                        cudaStream_t stream) {
  uintptr_t addresses[2 * kMaxPiecesPerLaunch] = {};
  uint64_t bytes[kMaxPiecesPerLaunch] = {};
  for (size_t i = 0; i < n; ++i) {
    addresses[2 * i] = reinterpret_cast<uintptr_t>(pieces[i].src);
    addresses[2 * i + 1] = reinterpret_cast<uintptr_t>(pieces[i].dst);
    bytes[i] = pieces[i].src == pieces[i].dst ? 0 : pieces[i].count * element_size;
  }
  const uint32_t word = copy_word_bytes(addresses, 2 * n, bytes, n);
  for (size_t i = 0; i < n; ++i) bytes[i] /= word;  // now words
  switch (word) {
    case 16:
      return launch(pieces, bytes, n, Move<uint4>{}, stream);
    case 8:
      return launch(pieces, bytes, n, Move<uint64_t>{}, stream);
    case 4:
      return launch(pieces, bytes, n, Move<uint32_t>{}, stream);
    case 2:
      return launch(pieces, bytes, n, Move<uint16_t>{}, stream);
    default:
      return launch(pieces, bytes, n, Move<uint8_t>{}, stream);
  }
}

cudaError_t launch_scale(const CopyPiece* pieces, size_t n, int32_t dtype, double scale,
                         cudaStream_t stream) {
  uint64_t counts[kMaxPiecesPerLaunch] = {};
  for (size_t i = 0; i < n; ++i) counts[i] = pieces[i].count;
  switch (dtype) {
    case HVD_UINT8:
      return launch(pieces, counts, n, ScaleInt<uint8_t>{scale}, stream);
    case HVD_INT8:
      return launch(pieces, counts, n, ScaleInt<int8_t>{scale}, stream);
    case HVD_UINT16:
      return launch(pieces, counts, n, ScaleInt<uint16_t>{scale}, stream);
    case HVD_INT16:
      return launch(pieces, counts, n, ScaleInt<int16_t>{scale}, stream);
    case HVD_INT32:
      return launch(pieces, counts, n, ScaleInt<int32_t>{scale}, stream);
    case HVD_INT64:
      return launch(pieces, counts, n, ScaleInt<int64_t>{scale}, stream);
    case HVD_FLOAT16:
      return launch(pieces, counts, n, ScaleHalf{static_cast<float>(scale)}, stream);
    case HVD_BFLOAT16:
      return launch(pieces, counts, n, ScaleBf16{static_cast<float>(scale)}, stream);
    case HVD_FLOAT32:
      return launch(pieces, counts, n, ScaleF32{scale}, stream);
    case HVD_FLOAT64:
      return launch(pieces, counts, n, ScaleF64{scale}, stream);
    case HVD_BOOL:
      return launch(pieces, counts, n, ScaleBool{scale != 0.0}, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t launch_batched_copy(const CopyPiece* pieces, size_t n, int32_t dtype,
                                size_t element_size, double scale, cudaStream_t stream) {
  for (const LaunchGroup& g : launch_groups(n)) {
    const CopyPiece* group = pieces + g.first;
    const cudaError_t err = scale == 1.0 ? launch_move(group, g.count, element_size, stream)
                                         : launch_scale(group, g.count, dtype, scale, stream);
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

}  // namespace hvdc::device::cuda
