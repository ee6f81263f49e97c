// hvd_grouped_allreduce_async: a list of allreduces enqueued at once (all or none) behind one
// handle that completes when the last of them does, with the first failure in list order.
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "api/api_state.h"
#include "api/validate.h"

using hvdc::api::current_engine;
using hvdc::api::guarded;
using hvdc::common::make_error;
using hvdc::common::Status;
using hvdc::core::OpState;
using hvdc::core::Request;

namespace {

// Shared by the members' completion hooks; the last member to complete completes the group.
struct Group {
  std::shared_ptr<OpState> parent;
  std::atomic<size_t> remaining{0};
  std::mutex mutex;
  std::vector<Status> results;  // by member
};

void complete_member(const std::shared_ptr<Group>& group, size_t index, const Status& status) {
  {
    std::lock_guard<std::mutex> lock(group->mutex);
    group->results[index] = status;
  }
  if (group->remaining.fetch_sub(1) != 1) return;
  Status first;
  for (size_t i = 0; i < group->results.size() && first.is_ok(); ++i) {
    if (!group->results[i].is_ok()) {
      first = group->results[i].with_context(hvdc::common::strfmt("grouped tensor %zu", i));
    }
  }
  group->parent->complete(first);
}

Status check_member(const hvd_tensor_t* inputs, void* const* outputs, const char* const* names,
                    size_t i, Request* r) {
  const std::string arg = hvdc::common::strfmt("inputs[%zu]", i);
  HVDC_RETURN_IF_ERROR(hvdc::api::check_tensor(&inputs[i], arg.c_str(), r));
  if (outputs[i] == nullptr && hvdc::core::element_count(r->shape) > 0) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "outputs[%zu] is NULL", i);
  }
  if (inputs[i].device.type != inputs[0].device.type) {
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "inputs[%zu] is on device type %d but inputs[0] on %d: a group shares one "
                      "device type",
                      i, inputs[i].device.type, inputs[0].device.type);
  }
  if (names == nullptr) return Status::ok();
  if (names[i] == nullptr) {
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "names[%zu] is NULL (pass names = NULL for automatic names)", i);
  }
  HVDC_RETURN_IF_ERROR(
      hvdc::api::check_name(names[i]).with_context(hvdc::common::strfmt("names[%zu]", i)));
  r->name = names[i];
  return Status::ok();
}

Status grouped_allreduce(const hvd_tensor_t* inputs, void* const* outputs, size_t count,
                         int32_t reduce_op, const char* const* names, const hvd_op_args_t* args,
                         hvd_handle_t* handle) {
  if (handle == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "handle is NULL");
  if (inputs == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "inputs is NULL");
  if (outputs == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "outputs is NULL");
  if (count == 0) return Status(HVD_ERR_INVALID_ARGUMENT, "count is 0");
  // No array of that many descriptors fits in memory; reject before sizing anything by count.
  if (count > SIZE_MAX / sizeof(hvd_tensor_t)) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "count %zu overflows the size of inputs", count);
  }
  hvdc::core::Engine* engine = nullptr;
  HVDC_RETURN_IF_ERROR(current_engine(&engine));
  hvd_op_args_t op_args;
  HVDC_RETURN_IF_ERROR(hvdc::api::read_op_args(args, &op_args));
  std::shared_ptr<const hvdc::core::ProcessSetInfo> set;
  HVDC_RETURN_IF_ERROR(hvdc::api::member_process_set(engine->process_sets(), op_args.process_set,
                                                     engine->topology().rank, &set));
  auto group = std::make_shared<Group>();
  group->parent = std::make_shared<OpState>(op_args.on_done, op_args.on_done_user_data);
  group->remaining = count;
  group->results.resize(count);
  std::vector<hvdc::core::TensorEntry> entries(count);
  for (size_t i = 0; i < count; ++i) {
    Request& r = entries[i].request;
    HVDC_RETURN_IF_ERROR(check_member(inputs, outputs, names, i, &r));
    HVDC_RETURN_IF_ERROR(hvdc::api::check_reduce_op(reduce_op, r.dtype));
    r.op_type = hvdc::core::OpType::kAllreduce;
    r.process_set = op_args.process_set;
    r.reduce_op = reduce_op;
    r.prescale = op_args.prescale_factor;
    r.postscale = op_args.postscale_factor;
    entries[i].input = inputs[i].data;
    entries[i].output = outputs[i];
    HVDC_RETURN_IF_ERROR(hvdc::api::apply_device_args(op_args, &r, &entries[i]));
    entries[i].state = std::make_shared<OpState>(nullptr, nullptr);
    entries[i].state->set_completion_hook(
        [group, i](const Status& st) { complete_member(group, i, st); });
  }
  // Automatic names only once every member passed its checks: a rejected group must not use up
  // names on this rank alone, or its later unnamed ops would pair with others' different ones.
  for (size_t i = 0; names == nullptr && i < count; ++i) {
    entries[i].request.name =
        engine->auto_name(hvdc::core::OpType::kAllreduce, op_args.process_set);
  }
  const hvd_handle_t h = hvdc::api::state().handles.insert(group->parent);
  group->parent->set_handle(h);
  Status st = engine->enqueue_group(std::move(entries));
  if (!st.is_ok()) {
    hvdc::api::state().handles.erase(h);
    return st;
  }
  *handle = h;
  return Status::ok();
}

}  // namespace

extern "C" {

hvd_status_t hvd_grouped_allreduce_async(const hvd_tensor_t* inputs, void* const* outputs,
                                         size_t count, int32_t reduce_op, const char* const* names,
                                         const hvd_op_args_t* args, hvd_handle_t* handle) {
  return guarded(
      [&] { return grouped_allreduce(inputs, outputs, count, reduce_op, names, args, handle); });
}

}  // extern "C"
