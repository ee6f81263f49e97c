// The coordinator's side of negotiation (rank 0 of a process set): collects which ranks have
// which named tensors ready, and once every rank has one, checks that their metadata agrees and
// emits a response. Responses come out in the order tensors became ready; every rank executes
// them in that order, which is what lets ranks submit tensors in different orders.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "core/message.h"
#include "core/stall_inspector.h"
#include "core/timeline.h"

namespace hvdc::core {

class Controller {
 public:
  // Stall times in seconds: see StallInspector (check 0 disables the inspector).
  explicit Controller(int size, double stall_check_seconds = 0, double stall_shutdown_seconds = 0)
      : size_(size),
        joined_(size, false),
        stalls_(size, stall_check_seconds, stall_shutdown_seconds) {}

  // Records negotiation spans there while it is active (rank 0 only; may be null).
  void set_timeline(Timeline* timeline) { timeline_ = timeline; }
  // For a process set other than 0: responses carry its id, and messages name it and its
  // members by global rank (ranks[i] is rank i of the set).
  void set_process_set(int32_t id, std::vector<int> ranks);
  // Records that `rank` has `request` ready.
  void add(int rank, Request request);
  // The responses of every tensor that became ready since the last call, in that order.
  std::vector<Response> take_ready();
  // Logs tensors that some ranks submitted and others did not for longer than the check time;
  // returns HVD_ERR_TIMEOUT responses for those past the shutdown time (no longer tracked).
  std::vector<Response> check_stalls(StallInspector::Clock::time_point now);
  // One line per tensor some ranks submitted and others not yet: its name, op and the missing
  // ranks (global ranks); empty if none waits.
  std::string describe_waiting() const;

 private:
  struct Entry {
    std::vector<Request> requests;  // indexed by rank; valid where present[r]
    std::vector<bool> present;
    int count = 0;
    bool queued = false;  // in ready_
  };

  // Whether every rank has the entry or has joined.
  bool complete(const Entry& entry) const;
  void add_join(int rank);

  Response construct(const std::string& name, const Entry& entry) const;
  static int first_present(const Entry& entry);
  std::string missing_ranks(const Entry& entry) const;

  int size_;
  int32_t process_set_ = 0;
  std::vector<int> ranks_;  // global rank of each set rank; empty for set 0
  std::unordered_map<std::string, Entry> table_;
  std::vector<std::string> ready_;
  std::vector<bool> joined_;  // ranks that called hvd_join since the last JOIN completed
  int joined_count_ = 0;
  int last_joined_ = -1;
  StallInspector stalls_;
  Timeline* timeline_ = nullptr;
};

// The first metadata disagreement among per-rank requests for one tensor, in Horovod's order
// (dtype, op, shape, scale factors, reduce op, allgather dims, root, device); empty if none.
// Ranks are named by labels[i] when given (a process set's global ranks), else by index.
std::string find_mismatch(const std::string& name, const std::vector<Request>& by_rank,
                          const std::vector<int>& labels = {});

}  // namespace hvdc::core
