#include "model_step_limit.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace hvdc_model_step {

namespace {

constexpr size_t kPage = 4096;
// Sums go through a block this size, half a first-level data cache, as hvdc's do
// (LocalAccess::block_bytes), so copying a block to the peer's stage reads it from that cache.
constexpr size_t kBlockFloats = (16 << 10) / sizeof(float);
// A group larger than this is staged this much at a time, so that the copies and the reduction
// of a window stay in the cache: 1 MiB beat 2, 4 and 16 MiB for both models (docs/performance.md).
constexpr size_t kWindowBytes = size_t{1} << 20;

__attribute__((target_clones("avx2", "default"))) void add_floats(float* __restrict sum,
                                                                  const float* __restrict a,
                                                                  const float* __restrict b,
                                                                  size_t n) {
  for (size_t i = 0; i < n; ++i) sum[i] = a[i] + b[i];
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) void stream_avx2(float* dst, const float* src, size_t n) {
  size_t i = 0;
  for (; i < n && reinterpret_cast<uintptr_t>(dst + i) % 32 != 0; ++i) dst[i] = src[i];
  for (; i + 8 <= n; i += 8) _mm256_stream_ps(dst + i, _mm256_loadu_ps(src + i));
  for (; i < n; ++i) dst[i] = src[i];
}
#endif

// Writes past the cache where the CPU can (x86 with AVX2), as hvdc does for cold outputs.
void stream_floats(float* dst, const float* src, size_t n) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) return stream_avx2(dst, src, n);
#endif
  std::memcpy(dst, src, n * sizeof(float));
}

void fence_streams() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

// Calls fn(tensor, offset in the tensor, offset in the group, count) for each tensor's share of
// the group's elements [lo, hi).
template <typename Fn>
void for_range(const std::vector<size_t>& tensors, const std::vector<size_t>& elements, size_t lo,
               size_t hi, Fn fn) {
  size_t at = 0;
  for (size_t t : tensors) {
    const size_t begin = std::max(lo, at), end = std::min(hi, at + elements[t]);
    if (begin < end) fn(t, begin - at, begin, end - begin);
    at += elements[t];
    if (at >= hi) return;
  }
}

}  // namespace

StagedLimit::~StagedLimit() {
  if (window_ != MPI_WIN_NULL) MPI_Win_free(&window_);
}

bool StagedLimit::open(const Model& m, size_t fusion_bytes, std::string* error) {
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm host;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
  int on_host = 0;
  MPI_Comm_size(host, &on_host);
  if (world != 2 || on_host != 2) {
    MPI_Comm_free(&host);
    *error = "limit-staged needs exactly 2 ranks on one host (" + std::to_string(world) +
             " ranks, " + std::to_string(on_host) + " on this host)";
    return false;
  }
  size_t largest = 0;
  for (size_t k = 0; k < m.tensors.size(); ++k) {
    const size_t i = m.tensors.size() - 1 - k;
    const size_t e = m.tensors[i].elements;
    if (groups_.empty() || (groups_.back().elements + e) * sizeof(float) > fusion_bytes) {
      groups_.emplace_back();
    }
    groups_.back().tensors.push_back(i);
    groups_.back().elements += e;
    largest = std::max(largest, groups_.back().elements);
  }
  for (const TensorSpec& t : m.tensors) elements_.push_back(t.elements);
  window_elements_ = std::min(largest, kWindowBytes / sizeof(float));
  const size_t stage_bytes = (window_elements_ * sizeof(float) + kPage - 1) / kPage * kPage;
  const MPI_Aint mine = rank_ == 0 ? static_cast<MPI_Aint>(kPage + 2 * stage_bytes) : 0;
  char* base = nullptr;
  int rc = MPI_Win_allocate_shared(mine, 1, MPI_INFO_NULL, host, &base, &window_);
  MPI_Comm_free(&host);
  if (rc != MPI_SUCCESS) {
    *error =
        "MPI_Win_allocate_shared of " + std::to_string(kPage + 2 * stage_bytes) + " bytes failed";
    return false;
  }
  MPI_Aint size = 0;
  int unit = 0;
  MPI_Win_shared_query(window_, 0, &size, &unit, &base);
  meet_ = reinterpret_cast<hvdc_bench::SpinBarrier*>(base);
  if (rank_ == 0) new (meet_) hvdc_bench::SpinBarrier();  // in rank 0's part of the window
  stage_[0] = reinterpret_cast<float*>(base + kPage);
  stage_[1] = reinterpret_cast<float*>(base + kPage + stage_bytes);
  block_.resize(kBlockFloats);
  MPI_Barrier(MPI_COMM_WORLD);
  return true;
}

void StagedLimit::step_window(const Group& g, size_t begin, size_t end,
                              const std::vector<float*>& in, const std::vector<float*>& out) {
  const size_t half = begin + (end - begin) / 2 / 16 * 16;  // rank 0's part ends on a cache line
  const size_t lo = rank_ == 0 ? begin : half, hi = rank_ == 0 ? half : end;
  const size_t peer_lo = rank_ == 0 ? half : begin, peer_hi = rank_ == 0 ? end : half;
  // Stage offsets are the window's.
  float* mine = stage_[rank_] - begin;
  float* theirs = stage_[1 - rank_] - begin;
  for_range(g.tensors, elements_, peer_lo, peer_hi, [&](size_t t, size_t at, size_t off, size_t n) {
    std::memcpy(mine + off, in[t] + at, n * sizeof(float));
  });
  meet_->wait(&sense_);  // each stage holds the half its owner's peer reduces
  for_range(g.tensors, elements_, lo, hi, [&](size_t t, size_t at, size_t off, size_t n) {
    for (size_t b = 0; b < n; b += kBlockFloats) {
      const size_t len = std::min(kBlockFloats, n - b);
      add_floats(block_.data(), in[t] + at + b, theirs + off + b, len);
      std::memcpy(theirs + off + b, block_.data(), len * sizeof(float));
      stream_floats(out[t] + at + b, block_.data(), len);
    }
  });
  meet_->wait(&sense_);  // each stage holds its owner's result of the half its peer reduced
  for_range(g.tensors, elements_, peer_lo, peer_hi, [&](size_t t, size_t at, size_t off, size_t n) {
    stream_floats(out[t] + at, mine + off, n);
  });
  fence_streams();
}

void StagedLimit::step(const std::vector<float*>& in, const std::vector<float*>& out) {
  // A group's first copy may follow the peer's last read of this rank's stage without a
  // barrier of its own: the peer reads it only between the previous group's two barriers.
  for (const Group& g : groups_) {
    for (size_t w = 0; w < g.elements; w += window_elements_) {
      step_window(g, w, std::min(g.elements, w + window_elements_), in, out);
    }
  }
}

}  // namespace hvdc_model_step
