#include "core/process_set_table.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "common/parse.h"
#include "core/message.h"
#include "hvdc.h"

namespace hvdc::core {

using common::make_error;

std::string describe_process_set(int32_t id, const std::vector<int>& ranks) {
  const std::string list = shape_string(std::vector<int64_t>(ranks.begin(), ranks.end()));
  return common::strfmt("process set %d (ranks %s)", id, list.c_str());
}

Status normalize_process_set_ranks(std::vector<int>* ranks, int world_size, const char* what) {
  if (ranks->empty()) return make_error(HVD_ERR_INVALID_ARGUMENT, "%s: a set needs a rank", what);
  for (size_t i = 0; i < ranks->size(); ++i) {
    const int r = (*ranks)[i];
    if (r < 0 || r >= world_size) {
      return make_error(HVD_ERR_INVALID_ARGUMENT, "%s[%zu] = %d is outside [0, %d)", what, i, r,
                        world_size);
    }
  }
  std::sort(ranks->begin(), ranks->end());
  auto dup = std::adjacent_find(ranks->begin(), ranks->end());
  if (dup != ranks->end()) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "%s: rank %d appears twice", what, *dup);
  }
  return Status::ok();
}

namespace {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == sep) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

Status parse_rank(const std::string& token, const std::string& spec, int* out) {
  const std::string t = trim(token);
  long long v = 0;
  if (!common::parse_decimal(t, 0, 1 << 30, &v)) {
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "HVDC_PROCESS_SETS='%s': '%s' is not a rank (sets are separated by ';', "
                      "ranks by ',', e.g. \"0,2;1,3\")",
                      spec.c_str(), t.c_str());
  }
  *out = static_cast<int>(v);
  return Status::ok();
}

}  // namespace

Status parse_process_sets(const std::string& spec, int world_size,
                          std::vector<std::vector<int>>* out) {
  out->clear();
  if (trim(spec).empty()) return Status::ok();
  for (const std::string& group : split(spec, ';')) {
    std::vector<int> ranks;
    for (const std::string& token : split(group, ',')) {
      int rank = 0;
      HVDC_RETURN_IF_ERROR(parse_rank(token, spec, &rank));
      ranks.push_back(rank);
    }
    const std::string what = common::strfmt("HVDC_PROCESS_SETS set %zu", out->size() + 1);
    HVDC_RETURN_IF_ERROR(normalize_process_set_ranks(&ranks, world_size, what.c_str()));
    out->push_back(std::move(ranks));
  }
  return Status::ok();
}

ProcessSetTable::ProcessSetTable(int world_size, int my_rank) : my_rank_(my_rank) {
  std::vector<int> all(world_size);
  for (int r = 0; r < world_size; ++r) all[r] = r;
  sets_[0] = std::make_shared<const ProcessSetInfo>(make_info(0, all, 0));
  for (uint32_t c = 1; c < kMaxProcessSets; ++c) free_contexts_.insert(c);
}

ProcessSetInfo ProcessSetTable::make_info(int32_t id, const std::vector<int>& ranks,
                                          uint32_t context) const {
  ProcessSetInfo info;
  info.id = id;
  info.ranks = ranks;
  info.context = context;
  auto it = std::lower_bound(ranks.begin(), ranks.end(), my_rank_);
  info.index = it != ranks.end() && *it == my_rank_ ? static_cast<int>(it - ranks.begin()) : -1;
  return info;
}

Status ProcessSetTable::add(const std::vector<int>& ranks, ProcessSetInfo* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [id, info] : sets_) {
    if (info->ranks == ranks) {
      return make_error(HVD_ERR_INVALID_ARGUMENT, "%s already exists",
                        describe_process_set(id, ranks).c_str());
    }
  }
  if (free_contexts_.empty()) {
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "%d process sets exist, the most there can be at once; destroy one first",
                      kMaxProcessSets);
  }
  const uint32_t context = *free_contexts_.begin();
  free_contexts_.erase(free_contexts_.begin());
  const int32_t id = next_id_++;
  auto info = std::make_shared<const ProcessSetInfo>(make_info(id, ranks, context));
  sets_[id] = info;
  *out = *info;
  return Status::ok();
}

Status ProcessSetTable::remove(int32_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (id == 0) {
    return Status(HVD_ERR_INVALID_ARGUMENT, "process set 0 (every rank) cannot be destroyed");
  }
  auto it = sets_.find(id);
  if (it == sets_.end()) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "process set %d does not exist", id);
  }
  free_contexts_.insert(it->second->context);
  sets_.erase(it);
  return Status::ok();
}

Status ProcessSetTable::find(int32_t id, ProcessSetInfo* out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sets_.find(id);
  if (it == sets_.end()) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "process set %d does not exist", id);
  }
  *out = *it->second;
  return Status::ok();
}

std::shared_ptr<const ProcessSetInfo> ProcessSetTable::lookup(int32_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sets_.find(id);
  return it == sets_.end() ? nullptr : it->second;
}

std::vector<int32_t> ProcessSetTable::ids() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int32_t> out;
  for (const auto& [id, info] : sets_) out.push_back(id);
  return out;
}

bool ProcessSetTable::ever_created(int32_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return id < next_id_;
}

}  // namespace hvdc::core
