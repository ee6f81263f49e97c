// Stall agreement: after a collective timed out here, the stalled ranks exchange whom they waited
// for during a short grace period, so that every survivor names the rank that actually stopped
// rather than a live neighbour that was waiting for it too (see stall_agreement.h).
#include "core/faults/stall_agreement.h"

#include <algorithm>
#include <set>

#include "common/log.h"
#include "core/message.h"
#include "core/topology.h"

namespace hvdc::core {

using common::Status;
using transport::make_tag;
using transport::TagKind;

std::vector<int> stall_culprits(int self, const std::map<int, std::vector<int>>& reports) {
  std::set<int> culprits;
  std::set<int> seen{self};
  auto own = reports.find(self);
  std::vector<int> frontier = own == reports.end() ? std::vector<int>{} : own->second;
  while (!frontier.empty()) {
    const int rank = frontier.back();
    frontier.pop_back();
    if (!seen.insert(rank).second) continue;
    auto it = reports.find(rank);
    if (it == reports.end() || it->second.empty()) {
      culprits.insert(rank);
    } else {
      frontier.insert(frontier.end(), it->second.begin(), it->second.end());
    }
  }
  return {culprits.begin(), culprits.end()};
}

namespace {

const char* stopped_text(const std::vector<int>& ranks) {
  return ranks.size() == 1 ? "stopped, hangs or is unreachable"
                           : "stopped, hang or are unreachable";
}

}  // namespace

// Long enough for the reports of ranks that stalled a little later; short beside the timeout.
std::chrono::steady_clock::duration StallAgreement::grace() const {
  const double seconds = std::clamp(timeout_seconds_ * 0.25, 0.25, 2.0);
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(seconds));
}

void StallAgreement::send_report(const std::vector<int>& waiting_for) {
  StallReport report;
  report.waiting_for.assign(waiting_for.begin(), waiting_for.end());
  const std::string encoded = encode(report);
  const int self = transport_->rank();
  for (int p = 0; p < transport_->size(); ++p) {
    if (p == self) continue;
    // Best effort: the stopped peer may never take it.
    (void)transport_->send_message(p, make_tag(TagKind::kStall, self, 0), encoded);
  }
}

// Stores the reports that arrived; true if any did.
bool StallAgreement::collect() {
  transport::Tag tag;
  std::string bytes;
  bool got = false;
  while (transport_->poll_message(make_tag(TagKind::kStall, 0, 0), transport::kTagKindMask, &tag,
                                  &bytes)) {
    got = true;
    const int from = transport::tag_source(tag);
    StallReport report;
    Status st = decode(bytes, &report);
    for (int64_t r : report.waiting_for) {
      if (st.is_ok() && (r < 0 || r >= transport_->size())) {
        st = common::make_error(HVD_ERR_INTERNAL, "rank %lld out of range",
                                static_cast<long long>(r));
      }
    }
    if (!st.is_ok()) {
      HVDC_LOG_WARNING("ignoring a stall report from rank %d: %s", from, st.message().c_str());
      continue;
    }
    reports_[from].assign(report.waiting_for.begin(), report.waiting_for.end());
  }
  return got;
}

// Every rank, from its engine loop and from inside its waits: the first report is answered with
// whom this rank waits for now (nobody, outside a collective). A rank that stalled a little later
// than the reporter has not timed out yet; its answer lets the reporter follow the waits on.
bool StallAgreement::poll() {
  if (!collect()) return false;
  if (!answered_) {
    answered_ = true;
    send_report(transport_->waited_peers());
  }
  return true;
}

Status StallAgreement::agree(const Status& timeout, const transport::Interrupt& interrupt) {
  const std::vector<int> mine = transport_->waited_peers();
  if (mine.empty()) return timeout;
  answered_ = true;  // this report answers any that come later
  send_report(mine);
  const auto until = std::chrono::steady_clock::now() + grace();
  while (std::chrono::steady_clock::now() < until) {
    transport_->progress();
    // A peer that concluded first, or a connection that failed meanwhile, settles it.
    Status ended = interrupt();
    if (!ended.is_ok()) return ended;
    transport_->sleep(-1, 1);
  }
  poll();
  std::map<int, std::vector<int>> reports = reports_;
  reports[transport_->rank()] = mine;
  return Status(timeout.code(), timeout.message() + "; " + cause(mine, reports));
}

std::string StallAgreement::cause(const std::vector<int>& mine,
                                  const std::map<int, std::vector<int>>& reports) const {
  const std::vector<int> culprits = stall_culprits(transport_->rank(), reports);
  std::vector<int> waiting;  // the other ranks that reported a stall
  for (const auto& [rank, ignored] : reports) {
    if (rank != transport_->rank()) waiting.push_back(rank);
  }
  if (culprits.empty()) {
    return common::strfmt(
        "%s reported waiting too, in a cycle: no rank stopped; the network "
        "between them may be failing",
        ranks_text(waiting).c_str());
  }
  if (culprits == mine) return ranks_text(mine) + " " + stopped_text(mine);
  return common::strfmt("%s reported waiting too; the waits lead to %s, which %s",
                        ranks_text(waiting).c_str(), ranks_text(culprits).c_str(),
                        stopped_text(culprits));
}

}  // namespace hvdc::core
