// Process sets: creation and removal (ops on set 0 that every rank submits and waits for) and
// the queries, which read the engine's registry.
#include <vector>

#include "api/api_state.h"
#include "core/process_set_table.h"

using hvdc::api::current_engine;
using hvdc::api::guarded;
using hvdc::common::make_error;
using hvdc::common::Status;
using hvdc::core::Engine;
using hvdc::core::OpType;
using hvdc::core::ProcessSetInfo;
using hvdc::core::Request;

namespace {

Status find_set(int32_t id, ProcessSetInfo* out, Engine** engine_out = nullptr) {
  Engine* engine = nullptr;
  HVDC_RETURN_IF_ERROR(current_engine(&engine));
  if (engine_out != nullptr) *engine_out = engine;
  return engine->process_sets().find(id, out).with_context("id");
}

// Copies `values` into a caller's array of `capacity` entries (NULL with capacity 0 asks only
// for the count).
Status copy_out(const std::vector<int32_t>& values, int32_t* out, int32_t capacity, int32_t* count,
                const char* what) {
  if (count == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "count is NULL");
  if (capacity < 0)
    return make_error(HVD_ERR_INVALID_ARGUMENT, "capacity is negative (%d)", capacity);
  if (out == nullptr && capacity > 0) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "%s is NULL with capacity %d", what, capacity);
  }
  const auto n = static_cast<int32_t>(values.size());
  if (out != nullptr && capacity < n) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "capacity %d is smaller than the %d entries",
                      capacity, n);
  }
  for (int32_t i = 0; out != nullptr && i < n; ++i) out[i] = values[i];
  *count = n;
  return Status::ok();
}

Status create_set(const int32_t* ranks, int32_t count, int32_t* id) {
  if (ranks == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "ranks is NULL");
  if (id == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "id is NULL");
  if (count <= 0)
    return make_error(HVD_ERR_INVALID_ARGUMENT, "count is %d; a set needs a rank", count);
  Engine* engine = nullptr;
  HVDC_RETURN_IF_ERROR(current_engine(&engine));
  // Distinct ranks never outnumber the ranks; checked before count entries are read.
  if (count > engine->topology().size) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "count %d exceeds the number of ranks (%d)", count,
                      engine->topology().size);
  }
  std::vector<int> members(ranks, ranks + count);
  HVDC_RETURN_IF_ERROR(
      hvdc::core::normalize_process_set_ranks(&members, engine->topology().size, "ranks"));
  Request request;
  request.op_type = OpType::kProcessSetCreate;
  request.name = engine->auto_name(OpType::kProcessSetCreate);
  request.dtype = HVD_UINT8;
  request.shape.assign(members.begin(), members.end());
  return hvdc::api::run_blocking(engine, std::move(request), id);
}

Status destroy_set(int32_t id) {
  if (id == 0) return Status(HVD_ERR_INVALID_ARGUMENT, "id 0 (every rank) cannot be destroyed");
  Engine* engine = nullptr;
  ProcessSetInfo info;
  HVDC_RETURN_IF_ERROR(find_set(id, &info, &engine));
  Request request;
  request.op_type = OpType::kProcessSetDestroy;
  request.name = engine->auto_name(OpType::kProcessSetDestroy);
  request.dtype = HVD_UINT8;
  request.root = id;
  return hvdc::api::run_blocking(engine, std::move(request), nullptr);
}

// Runs a query that writes one int32 through `out`.
template <typename Query>
hvd_status_t query(int32_t id, int32_t* out, const char* arg, Query q) {
  return guarded([&] {
    if (out == nullptr) return make_error(HVD_ERR_INVALID_ARGUMENT, "%s is NULL", arg);
    ProcessSetInfo info;
    HVDC_RETURN_IF_ERROR(find_set(id, &info));
    *out = q(info);
    return Status::ok();
  });
}

}  // namespace

extern "C" {

hvd_status_t hvd_process_set_create(const int32_t* ranks, int32_t count, int32_t* id) {
  return guarded([&] { return create_set(ranks, count, id); });
}

hvd_status_t hvd_process_set_destroy(int32_t id) {
  return guarded([&] { return destroy_set(id); });
}

hvd_status_t hvd_process_set_rank(int32_t id, int32_t* rank) {
  return query(id, rank, "rank", [](const ProcessSetInfo& s) { return s.index; });
}

hvd_status_t hvd_process_set_size(int32_t id, int32_t* size) {
  return query(id, size, "size",
               [](const ProcessSetInfo& s) { return static_cast<int32_t>(s.ranks.size()); });
}

hvd_status_t hvd_process_set_included(int32_t id, int32_t* included) {
  return query(id, included, "included",
               [](const ProcessSetInfo& s) { return s.index >= 0 ? 1 : 0; });
}

hvd_status_t hvd_process_set_ranks(int32_t id, int32_t* ranks, int32_t capacity, int32_t* count) {
  return guarded([&] {
    ProcessSetInfo info;
    HVDC_RETURN_IF_ERROR(find_set(id, &info));
    return copy_out(std::vector<int32_t>(info.ranks.begin(), info.ranks.end()), ranks, capacity,
                    count, "ranks");
  });
}

hvd_status_t hvd_process_set_ids(int32_t* ids, int32_t capacity, int32_t* count) {
  return guarded([&] {
    Engine* engine = nullptr;
    HVDC_RETURN_IF_ERROR(current_engine(&engine));
    return copy_out(engine->process_sets().ids(), ids, capacity, count, "ids");
  });
}

}  // extern "C"
