// hvdc.hpp's collectives: each as *_async returning a Handle and as a plain call that waits,
// over an hvdc::Tensor, a pointer and count, or std::vector. Include <hvdc.hpp>, not this file.
#ifndef HVDC_CXX_COLLECTIVES_HPP_
#define HVDC_CXX_COLLECTIVES_HPP_

#include "core.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hvdc {

// ---- Collectives -----------------------------------------------------------------------------
// Each *_async returns the op's Handle; the plain form waits for it. Pointer + count forms
// describe a one-dimensional tensor; out == in is in place.

inline Handle allreduce_async(const Tensor& input, void* output, ReduceOp op = ReduceOp::Average,
                              const Options& opts = {}) {
  const hvd_tensor_t in = input.c();
  const hvd_op_args_t args = detail::op_args(opts);
  hvd_handle_t h = 0;
  detail::check(hvd_allreduce_async(&in, output, static_cast<int32_t>(op),
                                    detail::name_or_null(opts.name), &args, &h),
                "hvd_allreduce_async");
  return Handle(h, opts.process_set);
}
template <class T>
Handle allreduce_async(const T* input, T* output, std::size_t count,
                       ReduceOp op = ReduceOp::Average, const Options& opts = {}) {
  return allreduce_async(Tensor(input, count), output, op, opts);
}
template <class T>
Handle allreduce_async(std::vector<T>& data, ReduceOp op = ReduceOp::Average,
                       const Options& opts = {}) {
  return allreduce_async(data.data(), data.data(), data.size(), op, opts);
}
template <class T>
void allreduce(const T* input, T* output, std::size_t count, ReduceOp op = ReduceOp::Average,
               const Options& opts = {}) {
  allreduce_async(input, output, count, op, opts).wait();
}
// In place.
template <class T>
void allreduce(std::vector<T>& data, ReduceOp op = ReduceOp::Average, const Options& opts = {}) {
  allreduce_async(data, op, opts).wait();
}
// Into output, resized to the input's size.
template <class T>
void allreduce(const std::vector<T>& input, std::vector<T>& output, ReduceOp op = ReduceOp::Average,
               const Options& opts = {}) {
  output.resize(input.size());
  allreduce(input.data(), output.data(), input.size(), op, opts);
}

// Members are named "<opts.name>.<i>" when opts.name is given, else automatically.
inline Handle grouped_allreduce_async(const std::vector<Tensor>& inputs,
                                      const std::vector<void*>& outputs,
                                      ReduceOp op = ReduceOp::Average, const Options& opts = {}) {
  if (inputs.size() != outputs.size()) {
    throw Error(HVD_ERR_INVALID_ARGUMENT,
                "grouped_allreduce_async: " + std::to_string(inputs.size()) + " inputs but " +
                    std::to_string(outputs.size()) + " outputs");
  }
  std::vector<hvd_tensor_t> in;
  std::vector<std::string> names;
  std::vector<const char*> name_ptrs;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    in.push_back(inputs[i].c());
    if (!opts.name.empty()) names.push_back(opts.name + "." + std::to_string(i));
  }
  for (const std::string& n : names) name_ptrs.push_back(n.c_str());
  const hvd_op_args_t args = detail::op_args(opts);
  hvd_handle_t h = 0;
  detail::check(
      hvd_grouped_allreduce_async(in.data(), outputs.data(), in.size(), static_cast<int32_t>(op),
                                  names.empty() ? nullptr : name_ptrs.data(), &args, &h),
      "hvd_grouped_allreduce_async");
  return Handle(h, opts.process_set);
}
// Every vector in place.
template <class T>
Handle grouped_allreduce_async(std::vector<std::vector<T>>& tensors,
                               ReduceOp op = ReduceOp::Average, const Options& opts = {}) {
  std::vector<Tensor> inputs;
  std::vector<void*> outputs;
  for (std::vector<T>& t : tensors) {
    inputs.emplace_back(t.data(), t.size());
    outputs.push_back(t.data());
  }
  return grouped_allreduce_async(inputs, outputs, op, opts);
}
template <class T>
void grouped_allreduce(std::vector<std::vector<T>>& tensors, ReduceOp op = ReduceOp::Average,
                       const Options& opts = {}) {
  grouped_allreduce_async(tensors, op, opts).wait();
}

// The output (every rank's rows in rank order) is read from the finished handle: output() or
// output_vector<T>(), or comes from opts.alloc.
inline Handle allgather_async(const Tensor& input, const Options& opts = {}) {
  const hvd_tensor_t in = input.c();
  const hvd_op_args_t args = detail::op_args(opts);
  hvd_handle_t h = 0;
  detail::check(hvd_allgather_async(&in, detail::name_or_null(opts.name), &args, &h),
                "hvd_allgather_async");
  return Handle(h, opts.process_set);
}
template <class T>
Handle allgather_async(const std::vector<T>& input, const Options& opts = {}) {
  return allgather_async(Tensor(input.data(), input.size()), opts);
}
template <class T>
Handle allgather_async(const std::vector<T>&& input, const Options& opts = {}) = delete;
template <class T>
std::vector<T> allgather(const T* input, std::size_t count, const Options& opts = {}) {
  Handle h = allgather_async(Tensor(input, count), opts);
  h.wait();
  return h.output_vector<T>();
}
template <class T>
std::vector<T> allgather(const std::vector<T>& input, const Options& opts = {}) {
  return allgather(input.data(), input.size(), opts);
}

// root_rank is a rank of opts.process_set.
inline Handle broadcast_async(const Tensor& input, void* output, int32_t root_rank,
                              const Options& opts = {}) {
  const hvd_tensor_t in = input.c();
  const hvd_op_args_t args = detail::op_args(opts);
  hvd_handle_t h = 0;
  detail::check(
      hvd_broadcast_async(&in, output, root_rank, detail::name_or_null(opts.name), &args, &h),
      "hvd_broadcast_async");
  return Handle(h, opts.process_set);
}
template <class T>
Handle broadcast_async(const T* input, T* output, std::size_t count, int32_t root_rank,
                       const Options& opts = {}) {
  return broadcast_async(Tensor(input, count), output, root_rank, opts);
}
template <class T>
Handle broadcast_async(std::vector<T>& data, int32_t root_rank, const Options& opts = {}) {
  return broadcast_async(data.data(), data.data(), data.size(), root_rank, opts);
}
template <class T>
void broadcast(const T* input, T* output, std::size_t count, int32_t root_rank,
               const Options& opts = {}) {
  broadcast_async(input, output, count, root_rank, opts).wait();
}
// In place: every rank gets root_rank's values (same size everywhere).
template <class T>
void broadcast(std::vector<T>& data, int32_t root_rank, const Options& opts = {}) {
  broadcast_async(data, root_rank, opts).wait();
}

namespace detail {
inline const int32_t* splits_or_null(const std::vector<int32_t>& splits, ProcessSet set) {
  if (splits.empty()) return nullptr;
  const int32_t ranks = set.size();
  if (splits.size() != static_cast<std::size_t>(ranks)) {
    throw Error(HVD_ERR_INVALID_ARGUMENT, "alltoall: splits has " + std::to_string(splits.size()) +
                                              " entries but process set " +
                                              std::to_string(set.id()) + " has " +
                                              std::to_string(ranks) + " ranks");
  }
  return splits.data();
}
}  // namespace detail

// splits[i] rows go to rank i of the set (empty: an even split); the output and the rows
// received from each rank are read from the finished handle.
inline Handle alltoall_async(const Tensor& input, const std::vector<int32_t>& splits = {},
                             const Options& opts = {}) {
  const hvd_tensor_t in = input.c();
  const int32_t* split_ptr = detail::splits_or_null(splits, opts.process_set);
  const hvd_op_args_t args = detail::op_args(opts);
  hvd_handle_t h = 0;
  detail::check(hvd_alltoall_async(&in, split_ptr, detail::name_or_null(opts.name), &args, &h),
                "hvd_alltoall_async");
  return Handle(h, opts.process_set);
}
template <class T>
Handle alltoall_async(const std::vector<T>& input, const std::vector<int32_t>& splits = {},
                      const Options& opts = {}) {
  return alltoall_async(Tensor(input.data(), input.size()), splits, opts);
}
template <class T>
Handle alltoall_async(const std::vector<T>&& input, const std::vector<int32_t>& splits = {},
                      const Options& opts = {}) = delete;

template <class T>
struct AlltoallResult {
  std::vector<T> data;                   // received rows, in source-rank order
  std::vector<int32_t> received_splits;  // rows received from each rank
};
template <class T>
AlltoallResult<T> alltoall(const std::vector<T>& input, const std::vector<int32_t>& splits = {},
                           const Options& opts = {}) {
  Handle h = alltoall_async(input, splits, opts);
  h.wait();
  return AlltoallResult<T>{h.output_vector<T>(), h.received_splits()};
}

// The rows of a reducescatter result on this rank for an input of `rows` first-dimension rows:
// the first rows % size ranks of the set get one more.
inline int64_t reducescatter_rows(int64_t rows, ProcessSet set = ProcessSet()) {
  const int64_t ranks = set.size(), me = set.rank();
  return rows / ranks + (me < rows % ranks ? 1 : 0);
}
// output holds reducescatter_rows(input.shape()[0]) rows.
inline Handle reducescatter_async(const Tensor& input, void* output,
                                  ReduceOp op = ReduceOp::Average, const Options& opts = {}) {
  const hvd_tensor_t in = input.c();
  const hvd_op_args_t args = detail::op_args(opts);
  hvd_handle_t h = 0;
  detail::check(hvd_reducescatter_async(&in, output, static_cast<int32_t>(op),
                                        detail::name_or_null(opts.name), &args, &h),
                "hvd_reducescatter_async");
  return Handle(h, opts.process_set);
}
// output is resized to this rank's share.
template <class T>
Handle reducescatter_async(const std::vector<T>& input, std::vector<T>& output,
                           ReduceOp op = ReduceOp::Average, const Options& opts = {}) {
  output.resize(static_cast<std::size_t>(
      reducescatter_rows(static_cast<int64_t>(input.size()), opts.process_set)));
  return reducescatter_async(Tensor(input.data(), input.size()), output.data(), op, opts);
}
template <class T>
Handle reducescatter_async(const std::vector<T>&& input, std::vector<T>& output,
                           ReduceOp op = ReduceOp::Average, const Options& opts = {}) = delete;
template <class T>
std::vector<T> reducescatter(const std::vector<T>& input, ReduceOp op = ReduceOp::Average,
                             const Options& opts = {}) {
  std::vector<T> output;
  reducescatter_async(input, output, op, opts).wait();
  return output;
}

inline Handle barrier_async(const Options& opts = {}) {
  const hvd_op_args_t args = detail::op_args(opts);
  hvd_handle_t h = 0;
  detail::check(hvd_barrier_async(detail::name_or_null(opts.name), &args, &h), "hvd_barrier_async");
  return Handle(h, opts.process_set);
}
inline void barrier(const Options& opts = {}) {
  barrier_async(opts).wait();
}

// Blocks until every rank has joined (meanwhile this rank adds zeros to the others'
// allreduces); returns the last rank to join.
inline int32_t join() {
  int32_t last = -1;
  detail::check(hvd_join(&last), "hvd_join");
  return last;
}

}  // namespace hvdc

#endif  // HVDC_CXX_COLLECTIVES_HPP_
