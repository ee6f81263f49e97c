// hvdc.hpp's shared host memory: mem_alloc, mem_free and mem_region over hvd_mem_alloc and its
// friends, and hvdc::SharedBuffer<T>, the RAII owner of one such buffer. Include <hvdc.hpp>,
// not this file.
#ifndef HVDC_CXX_MEMORY_HPP_
#define HVDC_CXX_MEMORY_HPP_

#include "collectives.hpp"
#include "core.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

namespace hvdc {

// `bytes` of zeroed, page-aligned host memory that the local ranks can map: collectives on it
// read and reduce the peers' data in place. Needs no engine; valid until mem_free, across
// shutdown. Throws Error (HVD_ERR_INVALID_ARGUMENT for 0 bytes).
inline void* mem_alloc(std::size_t bytes) {
  void* ptr = nullptr;
  detail::check(hvd_mem_alloc(bytes, &ptr), "hvd_mem_alloc");
  return ptr;
}
// Frees a buffer of mem_alloc by its start address; nullptr does nothing. Any other pointer
// throws Error (HVD_ERR_INVALID_ARGUMENT).
inline void mem_free(void* ptr) {
  detail::check(hvd_mem_free(ptr), "hvd_mem_free");
}

// Where a buffer of mem_alloc lies: its start and the size it was asked with.
struct MemRegion {
  void* base;
  std::size_t bytes;
};
// The buffer that holds ptr (any address inside it); throws Error if no buffer does.
inline MemRegion mem_region(const void* ptr) {
  MemRegion region{nullptr, 0};
  detail::check(hvd_mem_size(ptr, &region.base, &region.bytes), "hvd_mem_size");
  return region;
}

// Owns `size()` elements of T in one mem_alloc buffer, zeroed (move-only, span-like). The
// destructor frees it; buffers given to an *_async op must outlive the op, as any buffer must.
// T is a trivial type: its elements are bytes shared with other processes.
template <class T>
class SharedBuffer {
  static_assert(std::is_trivial<T>::value, "SharedBuffer holds trivial element types only");

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  SharedBuffer() noexcept = default;  // empty: no buffer
  // count == 0 throws Error (HVD_ERR_INVALID_ARGUMENT), as hvd_mem_alloc does for 0 bytes.
  explicit SharedBuffer(std::size_t count)
      : data_(static_cast<T*>(mem_alloc(bytes_for(count)))), size_(count) {}
  SharedBuffer(SharedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  SharedBuffer& operator=(SharedBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  SharedBuffer(const SharedBuffer&) = delete;
  SharedBuffer& operator=(const SharedBuffer&) = delete;
  ~SharedBuffer() { reset(); }

  // A new buffer holding a copy of count elements from values.
  static SharedBuffer copy_of(const T* values, std::size_t count) {
    SharedBuffer buffer(count);
    for (std::size_t i = 0; i < count; ++i) buffer.data_[i] = values[i];
    return buffer;
  }

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t bytes() const noexcept { return size_ * sizeof(T); }
  bool empty() const noexcept { return size_ == 0; }
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  iterator begin() noexcept { return data_; }
  iterator end() noexcept { return data_ + size_; }
  const_iterator begin() const noexcept { return data_; }
  const_iterator end() const noexcept { return data_ + size_; }

  // The elements as a one-dimensional Tensor (for element types of DTypeOf).
  template <class U = T, class = decltype(DTypeOf<U>::value)>
  Tensor tensor() const {
    return Tensor(data_, size_);
  }

  // Frees now and reports a failure to free (the destructor drops it); leaves this empty.
  void free() {
    size_ = 0;
    mem_free(std::exchange(data_, nullptr));
  }
  // Gives up ownership: the caller must mem_free the pointer.
  T* release() noexcept {
    size_ = 0;
    return std::exchange(data_, nullptr);
  }

 private:
  static std::size_t bytes_for(std::size_t count) {
    if (count > std::numeric_limits<std::size_t>::max() / sizeof(T)) {
      throw Error(HVD_ERR_INVALID_ARGUMENT, "SharedBuffer: count is " + std::to_string(count) +
                                                ", more bytes than size_t holds");
    }
    return count * sizeof(T);
  }
  void reset() noexcept {
    if (data_ != nullptr) hvd_mem_free(std::exchange(data_, nullptr));
    size_ = 0;
  }

  T* data_ = nullptr;
  std::size_t size_ = 0;
};

// In place over a whole SharedBuffer, as the std::vector forms of collectives.hpp.
template <class T>
void allreduce(SharedBuffer<T>& data, ReduceOp op = ReduceOp::Average, const Options& opts = {}) {
  allreduce(data.data(), data.data(), data.size(), op, opts);
}
template <class T>
void broadcast(SharedBuffer<T>& data, int32_t root_rank, const Options& opts = {}) {
  broadcast(data.data(), data.data(), data.size(), root_rank, opts);
}

}  // namespace hvdc

#endif  // HVDC_CXX_MEMORY_HPP_
