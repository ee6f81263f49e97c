// Which rank a stalled collective waits for in the end. A timed-out rank is not always next to
// the stopped one: in a ring, rank 0 may wait for rank 2, which waits for the stopped rank 1,
// and both time out within milliseconds. So each timed-out rank tells every peer whom it waited
// for (a StallReport); a peer that has not timed out yet answers with whom it waits for now.
// Each timed-out rank then follows the reports from its own waits to the ranks that sent none
// (stopped, hung or unreachable) or that wait for nobody (not in the collective at all).
#pragma once

#include <chrono>
#include <map>
#include <vector>

#include "common/status.h"
#include "transport/transport.h"

namespace hvdc::core {

// reports: rank -> the ranks it waits for, this rank's own included. Returns the ranks reached
// from `self` through the reports that sent none or an empty one, ascending; empty when every
// rank reached waits for another (a cycle of waits).
std::vector<int> stall_culprits(int self, const std::map<int, std::vector<int>>& reports);

// This rank's side of the exchange: the peers' reports, and whether it answered one.
class StallAgreement {
 public:
  // timeout_seconds: HVDC_TIMEOUT (it sets the grace period for later reports).
  StallAgreement(transport::Transport* transport, int timeout_seconds)
      : transport_(transport), timeout_seconds_(timeout_seconds) {}

  // Every rank, from its engine loop and from inside its waits: stores the reports that arrived
  // and answers the first with whom this rank waits for now (nobody, outside a collective).
  // True if any arrived.
  bool poll();
  // `timeout`: the transport's error for the collective that stalled here. Returns it with the
  // cause appended, or, when `interrupt` fails meanwhile (a peer's notice, a failed
  // connection), the status it failed with.
  common::Status agree(const common::Status& timeout, const transport::Interrupt& interrupt);

 private:
  std::chrono::steady_clock::duration grace() const;
  void send_report(const std::vector<int>& waiting_for);
  bool collect();
  std::string cause(const std::vector<int>& mine,
                    const std::map<int, std::vector<int>>& reports) const;

  transport::Transport* transport_;
  const int timeout_seconds_;
  std::map<int, std::vector<int>> reports_;
  bool answered_ = false;
};

}  // namespace hvdc::core
