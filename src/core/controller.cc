#include "core/controller.h"

#include <functional>
#include <map>

#include "common/dtype.h"
#include "common/log.h"
#include "common/status.h"
#include "core/process_set_table.h"
#include "core/topology.h"
#include "hvdc.h"

namespace hvdc::core {

using common::strfmt;

namespace {

// "rank 0: float32; ranks 1, 2: int32" — ranks grouped by the value they submitted.
std::string describe(const std::vector<Request>& by_rank,
                     const std::function<std::string(const Request&)>& value,
                     const std::vector<int>& labels) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (size_t r = 0; r < by_rank.size(); ++r) {
    std::string v = value(by_rank[r]);
    auto it = groups.begin();
    while (it != groups.end() && it->first != v) ++it;
    if (it == groups.end()) {
      groups.push_back({v, {}});
      it = groups.end() - 1;
    }
    it->second.push_back(labels.empty() ? static_cast<int>(r) : labels[r]);
  }
  std::string out;
  for (const auto& [v, ranks] : groups) {
    if (!out.empty()) out += "; ";
    out += ranks_text(ranks) + ": " + v;
  }
  return out;
}

struct Check {
  const char* property;
  bool (*applies)(OpType);
  std::function<std::string(const Request&)> value;
};

bool always(OpType) {
  return true;
}
bool reduces(OpType t) {
  return t == OpType::kAllreduce || t == OpType::kReducescatter;
}
bool full_shape(OpType t) {
  return t == OpType::kAllreduce || t == OpType::kBroadcast || t == OpType::kReducescatter;
}
bool trailing_shape(OpType t) {
  return t == OpType::kAllgather || t == OpType::kAlltoall;
}
bool is_broadcast(OpType t) {
  return t == OpType::kBroadcast;
}
bool creates_set(OpType t) {
  return t == OpType::kProcessSetCreate;
}
bool destroys_set(OpType t) {
  return t == OpType::kProcessSetDestroy;
}

std::string trailing_dims(const Request& r) {
  std::vector<int64_t> tail(r.shape.begin() + (r.shape.empty() ? 0 : 1), r.shape.end());
  return strfmt("%zu dims, trailing %s", r.shape.size(), shape_string(tail).c_str());
}

const std::vector<Check>& checks() {
  static const std::vector<Check> kChecks = {
      {"data type", always, [](const Request& r) { return common::dtype_name(r.dtype); }},
      {"operation", always, [](const Request& r) { return op_type_name(r.op_type); }},
      {"shape", full_shape, [](const Request& r) { return shape_string(r.shape); }},
      {"prescale/postscale factors", reduces,
       [](const Request& r) { return strfmt("%.17g/%.17g", r.prescale, r.postscale); }},
      {"reduction operation", reduces,
       [](const Request& r) { return common::reduce_op_name(r.reduce_op); }},
      {"shape", trailing_shape, trailing_dims},
      {"root rank", is_broadcast, [](const Request& r) { return std::to_string(r.root); }},
      {"ranks", creates_set, [](const Request& r) { return shape_string(r.shape); }},
      {"process set", destroys_set, [](const Request& r) { return std::to_string(r.root); }},
      {"CPU/GPU device selection", always,
       [](const Request& r) { return r.device_type == HVD_DEVICE_CPU ? "CPU" : "GPU"; }},
      {"device data path (HVD_OP_HOST_PATH)", always,
       [](const Request& r) { return (r.flags & HVD_OP_HOST_PATH) ? "host" : "device"; }},
  };
  return kChecks;
}

}  // namespace

std::string find_mismatch(const std::string& name, const std::vector<Request>& by_rank,
                          const std::vector<int>& labels) {
  for (const Check& check : checks()) {
    if (!check.applies(by_rank[0].op_type)) continue;
    const std::string first = check.value(by_rank[0]);
    for (size_t r = 1; r < by_rank.size(); ++r) {
      if (check.value(by_rank[r]) == first) continue;
      return strfmt("Mismatched %s %s for tensor '%s': %s", op_type_name(by_rank[0].op_type),
                    check.property, name.c_str(), describe(by_rank, check.value, labels).c_str());
    }
  }
  return std::string();
}

void Controller::set_process_set(int32_t id, std::vector<int> ranks) {
  process_set_ = id;
  ranks_ = std::move(ranks);
  stalls_.set_labels(describe_process_set(id, ranks_), ranks_);
}

bool Controller::complete(const Entry& entry) const {
  for (int r = 0; r < size_; ++r) {
    if (!entry.present[r] && !joined_[r]) return false;
  }
  return true;
}

// A joined rank contributes nothing; every tensor the others have is now complete without it.
void Controller::add_join(int rank) {
  if (joined_[rank]) return;
  joined_[rank] = true;
  ++joined_count_;
  last_joined_ = rank;
  for (auto& [name, entry] : table_) {
    if (!entry.queued && complete(entry)) {
      entry.queued = true;
      ready_.push_back(name);
    }
  }
}

void Controller::add(int rank, Request request) {
  if (request.op_type == OpType::kJoin) {
    add_join(rank);
    return;
  }
  Entry& entry = table_[request.name];
  if (entry.present.empty()) {
    entry.requests.resize(size_);
    entry.present.assign(size_, false);
  }
  if (entry.present[rank]) return;  // a rank reports each in-flight name once
  std::string name = request.name;
  if (timeline_ != nullptr && timeline_->active()) {
    if (entry.count == 0) timeline_->negotiate_start(name, op_type_name(request.op_type));
    timeline_->negotiate_rank_ready(name, rank);
  }
  entry.requests[rank] = std::move(request);
  entry.present[rank] = true;
  ++entry.count;
  if (stalls_.enabled()) stalls_.submitted(name, rank, StallInspector::Clock::now());
  if (!entry.queued && complete(entry)) {
    entry.queued = true;
    ready_.push_back(std::move(name));
  }
}

std::vector<Response> Controller::check_stalls(StallInspector::Clock::time_point now) {
  std::vector<Response> failed;
  if (!stalls_.enabled()) return failed;
  StallInspector::Report report = stalls_.check(now);
  if (!report.warning.empty()) {
    if (report.expired.empty()) {
      HVDC_LOG_WARNING("%s", report.warning.c_str());
    } else {
      HVDC_LOG_ERROR("%s", report.warning.c_str());
    }
  }
  for (const std::string& name : report.expired) {
    auto it = table_.find(name);
    if (it == table_.end()) continue;
    Response response;
    response.kind = ResponseKind::kError;
    response.process_set = process_set_;
    response.op_type = it->second.requests[first_present(it->second)].op_type;
    response.names.push_back(name);
    response.error_code = HVD_ERR_TIMEOUT;
    response.error_message = strfmt(
        "tensor '%s' was submitted by only %d of %d ranks and waited past the stall shutdown "
        "time (HVDC_STALL_SHUTDOWN_TIME); missing: rank(s) %s",
        name.c_str(), it->second.count, size_, missing_ranks(it->second).c_str());
    table_.erase(it);
    stalls_.completed(name);
    if (timeline_ != nullptr && timeline_->active()) timeline_->negotiate_end(name);
    failed.push_back(std::move(response));
  }
  return failed;
}

std::string Controller::describe_waiting() const {
  std::string out;
  for (const auto& [name, entry] : table_) {
    if (entry.queued) continue;
    const Request& first = entry.requests[first_present(entry)];
    out += strfmt("  '%s' (%s): waiting for ranks %s (%d of %d submitted)\n", name.c_str(),
                  op_type_name(first.op_type), missing_ranks(entry).c_str(), entry.count, size_);
  }
  return out;
}

// "1, 3": the global ranks that have neither submitted the entry nor joined.
std::string Controller::missing_ranks(const Entry& entry) const {
  std::string missing;
  for (int r = 0; r < size_; ++r) {
    if (entry.present[r] || joined_[r]) continue;
    missing += (missing.empty() ? "" : ", ") + std::to_string(ranks_.empty() ? r : ranks_[r]);
  }
  return missing;
}

int Controller::first_present(const Entry& entry) {
  for (size_t r = 0; r < entry.present.size(); ++r) {
    if (entry.present[r]) return static_cast<int>(r);
  }
  return 0;
}

Response Controller::construct(const std::string& name, const Entry& entry) const {
  Response response;
  const Request& first = entry.requests[first_present(entry)];
  response.process_set = process_set_;
  response.op_type = first.op_type;
  response.names.push_back(name);
  std::string mismatch;
  if (joined_count_ == 0) {
    mismatch = find_mismatch(name, entry.requests, ranks_);
  } else {
    // Joined ranks submitted nothing: they stand in with the first request, agreeing with it.
    std::vector<Request> by_rank = entry.requests;
    for (int r = 0; r < size_; ++r) {
      if (!entry.present[r]) by_rank[r] = first;
    }
    mismatch = find_mismatch(name, by_rank, ranks_);
  }
  if (mismatch.empty() && joined_count_ > 0 && first.op_type != OpType::kAllreduce &&
      first.op_type != OpType::kBarrier) {
    response.kind = ResponseKind::kError;
    response.error_code = HVD_ERR_INVALID_USAGE;
    response.error_message = strfmt(
        "%s of tensor '%s' is not supported while a rank has joined (rank %d called hvd_join); "
        "only allreduce and barrier run with joined ranks",
        op_type_name(first.op_type), name.c_str(), last_joined_);
    return response;
  }
  if (!mismatch.empty()) {
    response.kind = ResponseKind::kError;
    response.error_code = HVD_ERR_MISMATCH;
    response.error_message = mismatch;
    return response;
  }
  response.params() = first.params();
  if (response.op_type == OpType::kAllgather) {
    for (const Request& r : entry.requests) response.sizes.push_back(r.shape[0]);
  } else if (response.op_type == OpType::kProcessSetCreate) {
    response.sizes = first.shape;
  } else {
    response.counts.push_back(static_cast<int64_t>(element_count(first.shape)));
  }
  return response;
}

std::vector<Response> Controller::take_ready() {
  std::vector<Response> out;
  if (ready_.empty() && joined_count_ != size_) return out;  // every pass: allocate nothing
  out.reserve(ready_.size() + 1);
  for (const std::string& name : ready_) {
    auto it = table_.find(name);
    out.push_back(construct(name, it->second));
    table_.erase(it);
    if (stalls_.enabled()) stalls_.completed(name);
    if (timeline_ != nullptr && timeline_->active()) timeline_->negotiate_end(name);
  }
  ready_.clear();
  if (joined_count_ == size_) {
    // Every rank joined: the join completes everywhere with the last rank to join.
    Response join;
    join.op_type = OpType::kJoin;
    join.names.push_back(kJoinName);
    join.root = last_joined_;
    out.push_back(std::move(join));
    joined_.assign(size_, false);
    joined_count_ = 0;
    last_joined_ = -1;
  }
  return out;
}

}  // namespace hvdc::core
