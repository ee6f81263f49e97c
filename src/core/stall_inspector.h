// StallInspector: the coordinator's (rank 0 of a process set) record of tensors that some ranks
// submitted and others did not. A rank that never submits a tensor its peers wait on is the
// commonest way to hang a job, and without this report the job just stops making progress.
//
// Timing. A tensor is *stalled* once it has waited check_seconds since its first submission, and
// *expired* once it has waited shutdown_seconds. The periodic check does no work until the next
// tensor can have stalled, and logs a warning at most once per check period; so a stalled tensor
// is reported as soon as it passes the check time, unless a warning went out less than one period
// ago (Horovod instead checks on a fixed period, which can delay the first report to twice the
// check time). Expired names are returned from the first check() at or after their deadline, once
// each, together with a warning that lists them whatever the rate limit, because the engine is
// about to fail those ops and the user needs to know which ranks were missing.
//
// A shutdown time not larger than the check time is kept (ops fail at the shutdown time, before a
// periodic warning would have named them) rather than ignored as Horovod does; the first warning
// carries a note about it.
//
// Not thread-safe: the coordinator calls it from its own thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hvdc::core {

class StallInspector {
 public:
  using Clock = std::chrono::steady_clock;

  // Names listed per missing rank in a warning before "...".
  static constexpr size_t kMaxNamesPerRank = 6;

  // size: ranks in the set. check_seconds <= 0 disables everything. shutdown_seconds <= 0 means
  // never fail (only warn).
  StallInspector(int size, double check_seconds, double shutdown_seconds);

  bool enabled() const { return enabled_; }
  // For a process set other than 0: warnings name it (`scope`, e.g. "process set 1 (ranks
  // [0, 2])") and list missing ranks by global rank (ranks[i] for rank i of the set).
  void set_labels(std::string scope, std::vector<int> ranks) {
    scope_ = std::move(scope);
    rank_labels_ = std::move(ranks);
  }

  // `rank` reported `name` ready at `now`; the first report of a name starts its clock. Ranks
  // outside [0, size) are ignored.
  void submitted(const std::string& name, int rank, Clock::time_point now);
  // The name became ready on every rank, or failed: forget it.
  void completed(const std::string& name);
  // Tensors being tracked (submitted and not completed).
  size_t pending() const { return pending_.size(); }

  struct Report {
    // Empty when nothing is stalled or no check was due. Otherwise an explanation, then the line
    // "Missing ranks:", then "<rank>: [name, ...]" per missing rank in ascending order, names in
    // order of first submission, at most kMaxNamesPerRank then "...". An expired name carries a
    // "!" suffix ("1: [x!]").
    std::string warning;
    // Names that passed the shutdown time with ranks still missing, in order of first
    // submission: the engine fails them everywhere with HVD_ERR_TIMEOUT. Each is returned once.
    std::vector<std::string> expired;
  };
  // Cheap when nothing is due: compares `now` with two precomputed deadlines.
  Report check(Clock::time_point now);

  // How long until check() may have something to do, for the engine's sleep; zero when due. At
  // most one hour (also when disabled or idle), so it is safe to add to a time point.
  Clock::duration time_to_next_check(Clock::time_point now) const;

 private:
  struct Pending {
    Clock::time_point first;
    uint64_t order = 0;       // submission order, to list names oldest first
    std::vector<bool> ready;  // by rank
    int missing = 0;          // ranks not yet ready
    bool expired = false;     // already returned in Report::expired
  };
  using Entry = std::pair<const std::string, Pending>;

  // Marks and returns newly expired names, recomputes the deadlines, and returns the entries a
  // warning lists (stalled or expired, ranks still missing), oldest first.
  std::vector<const Entry*> scan(Clock::time_point now, std::vector<std::string>* expired);
  std::string format_warning(const std::vector<const Entry*>& stalled);
  std::string format_missing_ranks(const std::vector<const Entry*>& stalled) const;

  int size_;
  bool enabled_;
  Clock::duration check_;
  Clock::duration shutdown_;  // zero: never
  double check_seconds_;
  // The wait a warning quotes: the check time, or the shutdown time when that is shorter.
  double listed_after_seconds_;
  double shutdown_seconds_;
  bool shutdown_note_pending_;  // the "shutdown <= check" note is still to be said

  std::string scope_;
  std::vector<int> rank_labels_;  // empty: set ranks are global ranks

  std::unordered_map<std::string, Pending> pending_;
  uint64_t next_order_ = 0;
  // Deadlines that make check() cheap: the earliest a tracked tensor can stall or expire, and
  // the earliest the next warning may go out.
  Clock::time_point stall_due_ = Clock::time_point::max();
  Clock::time_point expiry_due_ = Clock::time_point::max();
  Clock::time_point warning_allowed_ = Clock::time_point::min();
};

}  // namespace hvdc::core
