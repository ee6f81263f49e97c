#include "core/stall_inspector.h"

#include <algorithm>

#include "common/status.h"

namespace hvdc::core {

namespace {

using Clock = StallInspector::Clock;

// Seconds as a clock duration. Clamped so that absurd settings cannot overflow the time points
// they are added to; ~30 years is "never" for a training job.
Clock::duration to_duration(double seconds) {
  const double clamped = std::min(std::max(seconds, 0.0), 1e9);
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(clamped));
}

}  // namespace

StallInspector::StallInspector(int size, double check_seconds, double shutdown_seconds)
    : size_(std::max(size, 0)),
      enabled_(size > 0 && check_seconds > 0),
      check_(to_duration(check_seconds)),
      shutdown_(shutdown_seconds > 0 ? to_duration(shutdown_seconds) : Clock::duration::zero()),
      check_seconds_(check_seconds),
      listed_after_seconds_(shutdown_seconds > 0 ? std::min(check_seconds, shutdown_seconds)
                                                 : check_seconds),
      shutdown_seconds_(shutdown_seconds),
      shutdown_note_pending_(shutdown_seconds > 0 && shutdown_seconds <= check_seconds) {}

void StallInspector::submitted(const std::string& name, int rank, Clock::time_point now) {
  if (!enabled_ || rank < 0 || rank >= size_) return;
  auto [it, inserted] = pending_.try_emplace(name);
  Pending& entry = it->second;
  if (inserted) {
    entry.first = now;
    entry.order = next_order_++;
    entry.ready.assign(size_, false);
    entry.missing = size_;
    // Only ever moves the deadlines earlier, so check() stays a comparison until they pass.
    stall_due_ = std::min(stall_due_, now + check_);
    if (shutdown_ > Clock::duration::zero()) expiry_due_ = std::min(expiry_due_, now + shutdown_);
  }
  if (!entry.ready[rank]) {
    entry.ready[rank] = true;
    --entry.missing;
  }
}

// The deadlines may now be early; the next scan recomputes them.
void StallInspector::completed(const std::string& name) {
  pending_.erase(name);
}

StallInspector::Report StallInspector::check(Clock::time_point now) {
  Report report;
  if (!enabled_) return report;
  const bool warning_due = now >= stall_due_ && now >= warning_allowed_;
  if (!warning_due && now < expiry_due_) return report;
  const std::vector<const Entry*> stalled = scan(now, &report.expired);
  // Expiring ops always get a warning: the engine is about to fail them, and the missing ranks
  // are what the user needs to see.
  if (!stalled.empty() && (warning_due || !report.expired.empty())) {
    report.warning = format_warning(stalled);
    warning_allowed_ = now + check_;
  }
  return report;
}

std::vector<const StallInspector::Entry*> StallInspector::scan(Clock::time_point now,
                                                               std::vector<std::string>* expired) {
  const bool can_expire = shutdown_ > Clock::duration::zero();
  std::vector<const Entry*> stalled;
  std::vector<const Entry*> newly_expired;
  stall_due_ = Clock::time_point::max();
  expiry_due_ = Clock::time_point::max();
  for (Entry& item : pending_) {
    Pending& entry = item.second;
    if (entry.missing == 0) continue;  // ready everywhere; completed() is on its way
    if (can_expire && !entry.expired) {
      if (now - entry.first >= shutdown_) {
        entry.expired = true;
        newly_expired.push_back(&item);
      } else {
        expiry_due_ = std::min(expiry_due_, entry.first + shutdown_);
      }
    }
    stall_due_ = std::min(stall_due_, entry.first + check_);
    if (now - entry.first >= check_ || entry.expired) stalled.push_back(&item);
  }
  const auto oldest_first = [](const Entry* a, const Entry* b) {
    return a->second.order < b->second.order;
  };
  std::sort(stalled.begin(), stalled.end(), oldest_first);
  std::sort(newly_expired.begin(), newly_expired.end(), oldest_first);
  for (const Entry* item : newly_expired) expired->push_back(item->first);
  return stalled;
}

std::string StallInspector::format_warning(const std::vector<const Entry*>& stalled) {
  std::string text = common::strfmt(
      "Stalled tensors%s%s: some tensors were submitted by only a subset of the ranks and have "
      "waited more than %g seconds for the others. This usually means that the ranks submitted "
      "different tensors (other names, or ops issued only on some ranks) or that some ranks "
      "stopped submitting (hung, crashed, or left the training loop early).",
      scope_.empty() ? "" : " in ", scope_.c_str(), listed_after_seconds_);
  if (shutdown_seconds_ > 0) {
    text += common::strfmt(
        " After %g seconds of waiting these ops fail on every rank with HVD_ERR_TIMEOUT; names "
        "marked ! have reached that limit.",
        shutdown_seconds_);
  } else {
    text +=
        " No stall shutdown time is set, so they wait indefinitely; set one to make them fail "
        "with HVD_ERR_TIMEOUT instead.";
  }
  if (shutdown_note_pending_) {
    shutdown_note_pending_ = false;
    text += common::strfmt(
        " Note: the stall shutdown time (%g s) is not larger than the check time (%g s), so "
        "ops may fail before a periodic warning has named them.",
        shutdown_seconds_, check_seconds_);
  }
  return text + "\nMissing ranks:\n" + format_missing_ranks(stalled);
}

std::string StallInspector::format_missing_ranks(const std::vector<const Entry*>& stalled) const {
  std::vector<std::string> lines(size_);
  std::vector<size_t> counts(size_, 0);
  for (const Entry* item : stalled) {
    const Pending& entry = item->second;
    for (int rank = 0; rank < size_; ++rank) {
      if (entry.ready[rank]) continue;
      const size_t n = counts[rank]++;
      if (n > kMaxNamesPerRank) continue;
      if (n > 0) lines[rank] += ", ";
      lines[rank] += n == kMaxNamesPerRank ? "..." : item->first + (entry.expired ? "!" : "");
    }
  }
  std::string text;
  for (int rank = 0; rank < size_; ++rank) {
    if (counts[rank] == 0) continue;
    if (!text.empty()) text += '\n';
    const int label = rank_labels_.empty() ? rank : rank_labels_[rank];
    text += std::to_string(label) + ": [" + lines[rank] + "]";
  }
  return text;
}

Clock::duration StallInspector::time_to_next_check(Clock::time_point now) const {
  const Clock::duration longest = std::chrono::hours(1);
  if (!enabled_) return longest;
  const Clock::time_point due = std::min(std::max(stall_due_, warning_allowed_), expiry_due_);
  if (due <= now) return Clock::duration::zero();
  // Compared this way round because `due` may be time_point::max().
  if (due - longest > now) return longest;
  return due - now;
}

}  // namespace hvdc::core
