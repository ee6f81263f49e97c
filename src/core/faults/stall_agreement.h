// Which rank a stalled collective waits for in the end. A timed-out rank is not always next to
// the stopped one: in a ring, rank 0 may wait for rank 2, which waits for the stopped rank 1,
// and both time out within milliseconds. So each timed-out rank tells every peer whom it waited
// for (a StallReport); a peer that has not timed out yet answers with whom it waits for now.
// Each timed-out rank then follows the reports from its own waits to the ranks that sent none
// (stopped, hung or unreachable) or that wait for nobody (not in the collective at all).
#pragma once

#include <map>
#include <vector>

namespace hvdc::core {

// reports: rank -> the ranks it waits for, this rank's own included. Returns the ranks reached
// from `self` through the reports that sent none or an empty one, ascending; empty when every
// rank reached waits for another (a cycle of waits).
std::vector<int> stall_culprits(int self, const std::map<int, std::vector<int>>& reports);

}  // namespace hvdc::core
