// The registry of process sets: which sets exist, their members, and the transport context each
// one's data messages use. The engine thread adds and removes sets (in the same order on every
// rank, so ids and contexts agree without being sent); API threads look them up.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"

namespace hvdc::core {

using common::Status;

// At most this many sets exist at once: a data tag carries the set's context in 8 bits.
constexpr int kMaxProcessSets = 256;

struct ProcessSetInfo {
  int32_t id = 0;
  std::vector<int> ranks;  // ascending global ranks
  uint32_t context = 0;    // distinguishes the set's data tags; the lowest free one on creation
  int index = -1;          // this rank's position in ranks, -1 if not a member
};

// "process set 1 (ranks [0, 2])": how messages name a set.
std::string describe_process_set(int32_t id, const std::vector<int>& ranks);

// Sorts and checks a member list for a job of `world_size` ranks: not empty, each in
// [0, world_size), no duplicates. `what` names the argument in the error.
Status normalize_process_set_ranks(std::vector<int>* ranks, int world_size, const char* what);

// Parses HVDC_PROCESS_SETS: sets separated by ';', ranks by ',' ("0,2;1,3"); empty: none.
Status parse_process_sets(const std::string& spec, int world_size,
                          std::vector<std::vector<int>>* out);

class ProcessSetTable {
 public:
  // Starts with set 0 holding every rank.
  ProcessSetTable(int world_size, int my_rank);

  // Registers a set with the next id (ranks already normalized). Fails if a set of the same
  // ranks exists or kMaxProcessSets sets exist.
  Status add(const std::vector<int>& ranks, ProcessSetInfo* out);
  // Unregisters a set other than 0.
  Status remove(int32_t id);
  // Copies the set's description; HVD_ERR_INVALID_ARGUMENT naming the id if there is none.
  Status find(int32_t id, ProcessSetInfo* out) const;
  // The set's description without copying it (every collective call looks one up); null if
  // there is none.
  std::shared_ptr<const ProcessSetInfo> lookup(int32_t id) const;
  std::vector<int32_t> ids() const;
  // Whether a set with this id was created, destroyed since or not (ids are never reused).
  bool ever_created(int32_t id) const;

 private:
  ProcessSetInfo make_info(int32_t id, const std::vector<int>& ranks, uint32_t context) const;

  const int my_rank_;
  mutable std::mutex mutex_;
  std::map<int32_t, std::shared_ptr<const ProcessSetInfo>> sets_;
  std::set<uint32_t> free_contexts_;
  int32_t next_id_ = 1;
};

}  // namespace hvdc::core
