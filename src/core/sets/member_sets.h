// The process sets this rank belongs to, each with its negotiation state (SetState), over the
// table of every set in the job (ProcessSetTable, which API threads read). Static sets come
// from HVDC_PROCESS_SETS at init; creation and removal at run time are ops on set 0 that run
// at the same point of every rank's execution order. Engine thread, but for table().
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "core/message.h"
#include "core/process_set_table.h"
#include "core/set_state.h"
#include "core/tensor_queue.h"

namespace hvdc::core {

struct MemberSetsConfig {
  size_t cache_capacity = 1024;  // HVDC_CACHE_CAPACITY, per set
  int stall_check_seconds = 60;  // the coordinators' stall inspectors
  int stall_shutdown_seconds = 300;
};

class MemberSets {
 public:
  // Starts with the global set (id 0), of which every rank is a member.
  MemberSets(int size, int rank, const MemberSetsConfig& config);

  // Every set of the job; any thread.
  const ProcessSetTable& table() const { return table_; }
  // This rank's sets by id; set 0 is always there.
  std::map<int32_t, std::unique_ptr<SetState>>& members() { return members_; }
  SetState* member(int32_t id);
  // Adds the sets of HVDC_PROCESS_SETS (`spec`); every rank must give the same. Collective over
  // the bootstrap.
  Status add_static(const std::string& spec, bootstrap::Bootstrap& bootstrap);
  // Runs an agreed creation; each entry's result is the new set's id.
  Status create(const Response& response, std::vector<TensorEntry>& entries);
  // Runs an agreed removal; the set's ops still pending in `queue` fail.
  Status destroy(const Response& response, TensorQueue& queue);

 private:
  void add(const ProcessSetInfo& info);

  const MemberSetsConfig config_;
  const int rank_;
  ProcessSetTable table_;
  std::map<int32_t, std::unique_ptr<SetState>> members_;
};

}  // namespace hvdc::core
