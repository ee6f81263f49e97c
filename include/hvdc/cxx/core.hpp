// hvdc.hpp's building blocks: hvdc::Error, element types, hvdc::Tensor, process sets, per-op
// Options and the RAII hvdc::Handle. Include <hvdc.hpp>, not this file.
#ifndef HVDC_CXX_CORE_HPP_
#define HVDC_CXX_CORE_HPP_

#include <hvdc.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace hvdc {

// ---- Errors -------------------------------------------------------------------------------

// A failed hvdc call: code() is the hvd_status_t (< 0); what() reads
// "<call>: <status text>: <library detail>".
class Error : public std::runtime_error {
 public:
  Error(hvd_status_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  hvd_status_t code() const noexcept { return code_; }

 private:
  hvd_status_t code_;
};

namespace detail {

inline Error make_error(hvd_status_t status, const char* call, const std::string& detail) {
  std::string what = std::string(call) + ": " + hvd_status_string(status);
  if (!detail.empty()) what += ": " + detail;
  return Error(status, what);
}

// Throws for an error status. The detail message is read at once: the thread's next hvdc call
// replaces it.
inline void check(hvd_status_t status, const char* call) {
  if (status < 0) throw make_error(status, call, hvd_last_error_message());
}

}  // namespace detail

// ---- Element types, reductions, devices ------------------------------------------------------

enum class DType : int32_t {
  UInt8 = HVD_UINT8,
  Int8 = HVD_INT8,
  UInt16 = HVD_UINT16,
  Int16 = HVD_INT16,
  Int32 = HVD_INT32,
  Int64 = HVD_INT64,
  Float16 = HVD_FLOAT16,
  Float32 = HVD_FLOAT32,
  Float64 = HVD_FLOAT64,
  Bool = HVD_BOOL,
  BFloat16 = HVD_BFLOAT16,
};

enum class ReduceOp : int32_t {
  Average = HVD_OP_AVERAGE,
  Sum = HVD_OP_SUM,
  Min = HVD_OP_MIN,
  Max = HVD_OP_MAX,
  Product = HVD_OP_PRODUCT,
};

// Flags for CUDA tensors (Options::flags; combine with |).
enum class OpFlags : uint32_t {
  None = 0,
  StreamOrdered = HVD_OP_STREAM_ORDERED,  // later work on cuda_stream sees the result
  HostPath = HVD_OP_HOST_PATH,            // stage through pinned host memory instead of NCCL
};
inline constexpr OpFlags operator|(OpFlags a, OpFlags b) {
  return static_cast<OpFlags>(static_cast<uint32_t>(a) | static_cast<uint32_t>(b));
}

enum class Feature : int32_t {
  Ucx = HVD_FEATURE_UCX,
  Mpi = HVD_FEATURE_MPI,
  Cuda = HVD_FEATURE_CUDA,
  Nccl = HVD_FEATURE_NCCL,
};

// IEEE half and bfloat16 values as their bit patterns, and a bool that is one byte (0 or 1).
struct Float16 {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};
struct Bool {
  uint8_t value;
};

template <class T>
struct DTypeOf;  // no value: T is not an element type hvdc knows
// clang-format off
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::UInt8; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::Int8; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::UInt16; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::Int16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::Int32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct DTypeOf<Float16> { static constexpr DType value = DType::Float16; };
template <> struct DTypeOf<BFloat16> { static constexpr DType value = DType::BFloat16; };
template <> struct DTypeOf<float> { static constexpr DType value = DType::Float32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::Float64; };
template <> struct DTypeOf<Bool> { static constexpr DType value = DType::Bool; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::Bool; };
// clang-format on
static_assert(sizeof(bool) == 1 && sizeof(Bool) == 1, "HVD_BOOL elements are one byte");
static_assert(sizeof(Float16) == 2 && sizeof(BFloat16) == 2, "16-bit floats are two bytes");

// Bytes per element of a dtype (0 for a value this header does not know).
inline std::size_t element_size(DType dtype) noexcept {
  switch (dtype) {
    case DType::UInt8:
    case DType::Int8:
    case DType::Bool:
      return 1;
    case DType::UInt16:
    case DType::Int16:
    case DType::Float16:
    case DType::BFloat16:
      return 2;
    case DType::Int32:
    case DType::Float32:
      return 4;
    case DType::Int64:
    case DType::Float64:
      return 8;
  }
  return 0;
}

inline hvd_device_t cpu_device() noexcept {
  return hvd_device_t{HVD_DEVICE_CPU, 0};
}
inline hvd_device_t cuda_device(int32_t id) noexcept {
  return hvd_device_t{HVD_DEVICE_CUDA, id};
}

// ---- Tensors ---------------------------------------------------------------------------------

// Describes memory the caller owns (or, from Handle::output, memory the handle owns): data,
// dtype, shape and device. It copies the shape but never the data. The library copies the
// shape when an op is enqueued, so only the data must outlive the op.
class Tensor {
 public:
  Tensor(const void* data, DType dtype, std::vector<int64_t> shape,
         hvd_device_t device = cpu_device())
      : data_(const_cast<void*>(data)), dtype_(dtype), shape_(std::move(shape)), device_(device) {}
  template <class T, class = decltype(DTypeOf<T>::value)>
  Tensor(const T* data, std::vector<int64_t> shape, hvd_device_t device = cpu_device())
      : Tensor(data, DTypeOf<T>::value, std::move(shape), device) {}
  // A one-dimensional tensor of `count` elements.
  template <class T, class = decltype(DTypeOf<T>::value)>
  Tensor(const T* data, std::size_t count)
      : Tensor(data, DTypeOf<T>::value, {static_cast<int64_t>(count)}) {}

  // A view of a DLPack tensor (compact row-major only), through hvd_tensor_from_dlpack.
  static Tensor from_dlpack(const hvd_dl_tensor_t& dl) {
    hvd_tensor_t t;
    detail::check(hvd_tensor_from_dlpack(&dl, &t), "hvd_tensor_from_dlpack");
    return from_c(t);
  }
  static Tensor from_c(const hvd_tensor_t& t) {
    return Tensor(t.data, static_cast<DType>(t.dtype),
                  std::vector<int64_t>(t.shape, t.shape + t.ndim), t.device);
  }

  void* data() const noexcept { return data_; }
  DType dtype() const noexcept { return dtype_; }
  const std::vector<int64_t>& shape() const noexcept { return shape_; }
  hvd_device_t device() const noexcept { return device_; }
  int64_t elements() const noexcept {
    int64_t n = 1;
    for (int64_t d : shape_) n *= d;
    return n;
  }
  std::size_t bytes() const noexcept {
    return static_cast<std::size_t>(elements()) * element_size(dtype_);
  }
  // The C descriptor; its shape pointer borrows this object's shape.
  hvd_tensor_t c() const noexcept {
    return hvd_tensor_t{data_, static_cast<int32_t>(dtype_), static_cast<int32_t>(shape_.size()),
                        shape_.data(), device_};
  }

 private:
  void* data_;
  DType dtype_;
  std::vector<int64_t> shape_;
  hvd_device_t device_;
};

// ---- Process sets ----------------------------------------------------------------------------

// A process set by id; the default is set 0, every rank. Queries throw for an unknown id.
class ProcessSet {
 public:
  constexpr ProcessSet() noexcept = default;
  constexpr explicit ProcessSet(int32_t id) noexcept : id_(id) {}
  constexpr int32_t id() const noexcept { return id_; }

  // This rank's rank in the set, or -1 if it is not a member.
  int32_t rank() const { return query(hvd_process_set_rank, "hvd_process_set_rank"); }
  int32_t size() const { return query(hvd_process_set_size, "hvd_process_set_size"); }
  bool included() const { return query(hvd_process_set_included, "hvd_process_set_included") != 0; }
  // The members, ascending.
  std::vector<int32_t> ranks() const {
    std::vector<int32_t> out(static_cast<std::size_t>(size()));
    int32_t count = 0;
    detail::check(hvd_process_set_ranks(id_, out.data(), static_cast<int32_t>(out.size()), &count),
                  "hvd_process_set_ranks");
    out.resize(static_cast<std::size_t>(count));
    return out;
  }
  friend bool operator==(ProcessSet a, ProcessSet b) noexcept { return a.id_ == b.id_; }
  friend bool operator!=(ProcessSet a, ProcessSet b) noexcept { return a.id_ != b.id_; }

 private:
  int32_t query(hvd_status_t (*fn)(int32_t, int32_t*), const char* call) const {
    int32_t value = 0;
    detail::check(fn(id_, &value), call);
    return value;
  }
  int32_t id_ = 0;
};

// Creates a set of the given ranks. Collective over every rank, members or not, with the same
// ranks, in the same order relative to other creates and removes.
inline ProcessSet add_process_set(const std::vector<int32_t>& ranks) {
  int32_t id = 0;
  detail::check(hvd_process_set_create(ranks.data(), static_cast<int32_t>(ranks.size()), &id),
                "hvd_process_set_create");
  return ProcessSet(id);
}
// Removes a set (collective like add_process_set). Not RAII: a collective call must not run
// from a destructor during unwinding on some ranks only.
inline void remove_process_set(ProcessSet set) {
  detail::check(hvd_process_set_destroy(set.id()), "hvd_process_set_destroy");
}
// Every set, ascending by id (set 0 first).
inline std::vector<ProcessSet> process_sets() {
  int32_t count = 0;
  detail::check(hvd_process_set_ids(nullptr, 0, &count), "hvd_process_set_ids");
  std::vector<int32_t> ids(static_cast<std::size_t>(count));
  detail::check(hvd_process_set_ids(ids.data(), count, &count), "hvd_process_set_ids");
  return std::vector<ProcessSet>(ids.begin(), ids.begin() + count);
}

// ---- Per-op options --------------------------------------------------------------------------

struct Options {
  std::string name;               // empty: an automatic name (ranks must call in one order)
  ProcessSet process_set{};       // the ranks taking part; set 0 by default
  double prescale_factor = 1.0;   // allreduce, reducescatter: inputs are multiplied first
  double postscale_factor = 1.0;  // allreduce, reducescatter: the result is multiplied
  hvd_done_fn on_done = nullptr;  // runs on the engine thread; must not block on hvdc
  void* on_done_user_data = nullptr;
  hvd_alloc_fn alloc = nullptr;  // allgather/alltoall output; nullptr: the handle owns it
  void* alloc_user_data = nullptr;
  void* cuda_stream = nullptr;  // CUDA tensors: the cudaStream_t the op is ordered after
  OpFlags flags = OpFlags::None;
};

namespace detail {

inline hvd_op_args_t op_args(const Options& o) {
  hvd_op_args_t args;
  check(hvd_op_args_init(&args, sizeof args), "hvd_op_args_init");
  args.process_set = o.process_set.id();
  args.prescale_factor = o.prescale_factor;
  args.postscale_factor = o.postscale_factor;
  args.on_done = o.on_done;
  args.on_done_user_data = o.on_done_user_data;
  args.alloc = o.alloc;
  args.alloc_user_data = o.alloc_user_data;
  args.cuda_stream = o.cuda_stream;
  args.flags = static_cast<uint32_t>(o.flags);
  return args;
}
inline const char* name_or_null(const std::string& name) {
  return name.empty() ? nullptr : name.c_str();
}

}  // namespace detail

// ---- Handles ---------------------------------------------------------------------------------

// Owns one hvd_handle_t (move-only). Destruction frees it, waiting for a running op; status
// errors there are dropped (use free() to see them).
class Handle {
 public:
  Handle() noexcept = default;
  explicit Handle(hvd_handle_t id, ProcessSet set = ProcessSet()) noexcept : id_(id), set_(set) {}
  Handle(Handle&& other) noexcept
      : id_(std::exchange(other.id_, hvd_handle_t{0})), set_(other.set_) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, hvd_handle_t{0});
      set_ = other.set_;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  hvd_handle_t get() const noexcept { return id_; }
  explicit operator bool() const noexcept { return id_ != 0; }
  // Gives up ownership: the caller must hvd_handle_free the id.
  hvd_handle_t release() noexcept { return std::exchange(id_, hvd_handle_t{0}); }

  // True once the op has ended (never blocks); throws the op's error if it failed.
  bool test() const {
    int32_t done = 0;
    detail::check(hvd_test(id_, &done), "hvd_test");
    return done != 0;
  }
  // Blocks until the op ends; throws its error if it failed.
  void wait() const { detail::check(hvd_wait(id_), "hvd_wait"); }
  // Frees now (waiting for a running op) and reports a failure to free.
  void free() { detail::check(hvd_handle_free(release()), "hvd_handle_free"); }

  // The output of a finished allgather or alltoall. Library-owned data stays valid until this
  // handle is freed.
  Tensor output() const {
    hvd_tensor_t t;
    detail::check(hvd_handle_output(id_, &t), "hvd_handle_output");
    return Tensor::from_c(t);
  }
  // A copy of the output of a finished allgather or alltoall of host T elements.
  template <class T>
  std::vector<T> output_vector() const {
    const Tensor out = output();
    if (out.dtype() != DTypeOf<T>::value || out.device().type != HVD_DEVICE_CPU) {
      throw Error(HVD_ERR_INVALID_ARGUMENT,
                  "Handle::output_vector: the output has dtype " +
                      std::to_string(static_cast<int32_t>(out.dtype())) + " on device type " +
                      std::to_string(out.device().type) + ", not host elements of dtype " +
                      std::to_string(static_cast<int32_t>(DTypeOf<T>::value)));
    }
    std::vector<T> values(static_cast<std::size_t>(out.elements()));
    if (!values.empty()) std::memcpy(values.data(), out.data(), out.bytes());
    return values;
  }
  // After a successful alltoall: rows received from each rank of its process set.
  std::vector<int32_t> received_splits() const {
    std::vector<int32_t> splits(static_cast<std::size_t>(set_.size()));
    detail::check(
        hvd_handle_received_splits(id_, splits.data(), static_cast<int32_t>(splits.size())),
        "hvd_handle_received_splits");
    return splits;
  }

 private:
  void reset() noexcept {
    if (id_ != 0) hvd_handle_free(std::exchange(id_, hvd_handle_t{0}));
  }
  hvd_handle_t id_ = 0;
  ProcessSet set_;
};

// Waits for every handle; throws the first failure in vector order (the handles stay owned).
inline void wait_all(const std::vector<Handle>& handles) {
  std::vector<hvd_handle_t> ids;
  ids.reserve(handles.size());
  for (const Handle& h : handles) ids.push_back(h.get());
  detail::check(hvd_wait_all(ids.data(), ids.size()), "hvd_wait_all");
}

}  // namespace hvdc

#endif  // HVDC_CXX_CORE_HPP_
