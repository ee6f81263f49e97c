// The coordinator's side of negotiation (rank 0 of a process set): collects which ranks have
// which named tensors ready, and once every rank has one, checks that their metadata agrees and
// emits a response. Responses come out in the order tensors became ready; every rank executes
// them in that order, which is what lets ranks submit tensors in different orders.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "core/message.h"

namespace hvdc::core {

class Controller {
 public:
  explicit Controller(int size) : size_(size) {}

  // Records that `rank` has `request` ready.
  void add(int rank, Request request);
  // The responses of every tensor that became ready since the last call, in that order.
  std::vector<Response> take_ready();

 private:
  struct Entry {
    std::vector<Request> requests;  // indexed by rank; valid where present[r]
    std::vector<bool> present;
    int count = 0;
  };

  Response construct(const std::string& name, const Entry& entry) const;

  int size_;
  std::unordered_map<std::string, Entry> table_;
  std::vector<std::string> ready_;
};

// The first metadata disagreement among per-rank requests for one tensor, in Horovod's order
// (dtype, op, shape, scale factors, reduce op, allgather dims, root, device); empty if none.
std::string find_mismatch(const std::string& name, const std::vector<Request>& by_rank);

}  // namespace hvdc::core
