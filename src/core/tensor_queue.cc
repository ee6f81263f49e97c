#include "core/tensor_queue.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

namespace hvdc::core {

common::Status op_failure(const TensorEntry& entry, const common::Status& status) {
  const double age =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - entry.submitted).count();
  return status.with_context(common::strfmt(
      "%s '%s' (process set %d) failed after %.2f s", op_label(entry.request.op_type).c_str(),
      entry.request.name.c_str(), entry.request.process_set, age));
}

TensorQueue::TensorQueue() {
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

TensorQueue::~TensorQueue() {
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

Status TensorQueue::push(TensorEntry&& entry, std::chrono::steady_clock::time_point submitted) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const Key& key = key_for_push_locked(entry.request);
    HVDC_RETURN_IF_ERROR(check_push_locked(key));
    insert_locked(key, std::move(entry), submitted);
  }
  wake_if_sleeping();
  return Status::ok();
}

Status TensorQueue::push_group(std::vector<TensorEntry> entries,
                               std::chrono::steady_clock::time_point submitted) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < entries.size(); ++i) {
      const Request& request = entries[i].request;
      HVDC_RETURN_IF_ERROR(check_push_locked(probe_locked(request.process_set, request.name)));
      for (size_t j = 0; j < i; ++j) {
        const Request& earlier = entries[j].request;
        if (earlier.process_set == request.process_set && earlier.name == request.name) {
          return duplicate(probe_locked(request.process_set, request.name));
        }
      }
    }
    for (TensorEntry& entry : entries) {
      insert_locked(key_for_push_locked(entry.request), std::move(entry), submitted);
    }
  }
  wake_if_sleeping();
  return Status::ok();
}

Status TensorQueue::duplicate(const Key& key) {
  const std::string where =
      key.first == 0 ? std::string() : common::strfmt(" in process set %d", key.first);
  return common::make_error(HVD_ERR_DUPLICATE_NAME,
                            "a tensor named '%s' is already in flight%s; wait for it or use "
                            "another name",
                            key.second.c_str(), where.c_str());
}

const TensorQueue::Key& TensorQueue::probe_locked(int32_t process_set,
                                                  const std::string& name) const {
  probe_.first = process_set;
  probe_.second.assign(name);
  return probe_;
}

const TensorQueue::Key& TensorQueue::key_for_push_locked(const Request& request) {
  Key& key = spare_node_.empty() ? probe_ : spare_node_.key();
  key.first = request.process_set;
  key.second.assign(request.name);
  return key;
}

Status TensorQueue::check_push_locked(const Key& key) const {
  if (closed_) return close_status_;
  return entries_.count(key) != 0 ? duplicate(key) : Status::ok();
}

// The key goes into storage kept from earlier pushes too (fresh_'s elements), so that a loop of
// ops copies its names without allocating.
void TensorQueue::insert_locked(const Key& key, TensorEntry&& entry,
                                std::chrono::steady_clock::time_point submitted) {
  entry.submitted = submitted;
  if (fresh_count_ == fresh_.size()) fresh_.emplace_back();
  Key& fresh = fresh_[fresh_count_++];
  fresh.first = key.first;
  fresh.second.assign(key.second);
  fresh_waiting_.store(true);
  if (spare_node_.empty()) {
    entries_.emplace(key, std::move(entry));
  } else {
    spare_node_.mapped() = std::move(entry);  // its key is already `key`
    entries_.insert(std::move(spare_node_));  // absent (check_push_locked): the node goes in
  }
  in_flight_.store(entries_.size(), std::memory_order_relaxed);
}

size_t TensorQueue::pop_new(std::vector<Request>* out, std::vector<OpBuffers>* buffers) {
  // Every pass of the engine asks; most find nothing, and need not take the callers' mutex for
  // that. A push in progress (the flag not stored yet) is taken by the next pass.
  if (!fresh_waiting_.load()) return 0;
  std::lock_guard<std::mutex> lock(mutex_);
  if (out->size() < fresh_count_) out->resize(fresh_count_);
  if (buffers != nullptr && buffers->size() < fresh_count_) buffers->resize(fresh_count_);
  size_t n = 0;
  for (size_t i = 0; i < fresh_count_; ++i) {
    auto it = entries_.find(fresh_[i]);
    if (it == entries_.end()) continue;
    const TensorEntry& entry = it->second;
    if (buffers != nullptr) (*buffers)[n] = {entry.input, entry.output};
    (*out)[n++] = entry.request;  // assigned into kept storage
  }
  fresh_count_ = 0;
  fresh_waiting_.store(false);
  return n;
}

bool TensorQueue::request_of(int32_t process_set, const std::string& name, Request* out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(probe_locked(process_set, name));
  if (it == entries_.end()) return false;
  *out = it->second.request;
  return true;
}

const void* TensorQueue::input_of(int32_t process_set, const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(probe_locked(process_set, name));
  return it == entries_.end() ? nullptr : it->second.input;
}

bool TensorQueue::take(int32_t process_set, const std::string& name, TensorEntry* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(probe_locked(process_set, name));
  if (it == entries_.end()) return false;
  spare_node_ = entries_.extract(it);
  *out = std::move(spare_node_.mapped());
  in_flight_.store(entries_.size(), std::memory_order_relaxed);
  return true;
}

std::vector<TensorEntry> TensorQueue::take_set(int32_t process_set) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<TensorEntry> out;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->first.first != process_set) {
      ++it;
      continue;
    }
    out.push_back(std::move(it->second));
    it = entries_.erase(it);
  }
  in_flight_.store(entries_.size(), std::memory_order_relaxed);
  return out;
}

std::vector<TensorEntry> TensorQueue::close(const common::Status& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!closed_) {
    closed_ = true;
    close_status_ = status;
  }
  std::vector<TensorEntry> out;
  for (auto& [key, entry] : entries_) out.push_back(std::move(entry));
  entries_.clear();
  in_flight_.store(0, std::memory_order_relaxed);
  fresh_count_ = 0;
  fresh_waiting_.store(false);
  return out;
}

void TensorQueue::wake() {
  uint64_t one = 1;
  ssize_t rc = ::write(wake_fd_, &one, sizeof(one));
  (void)rc;  // a full counter still wakes the reader
}

void TensorQueue::wake_if_sleeping() {
  if (sleeping_.load()) wake();
}

bool TensorQueue::begin_sleep() {
  sleeping_.store(true);
  if (!fresh_waiting_.load()) return true;
  sleeping_.store(false);
  return false;
}

void TensorQueue::end_sleep() {
  sleeping_.store(false);
  uint64_t value;
  ssize_t rc = ::read(wake_fd_, &value, sizeof(value));
  (void)rc;  // nothing to read: the sleep ended for another reason
}

std::vector<PendingOp> TensorQueue::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<PendingOp> out;
  for (const auto& [key, entry] : entries_) {
    PendingOp op;
    op.request = entry.request;
    op.submitted = entry.submitted;
    const auto fresh_end = fresh_.begin() + static_cast<ptrdiff_t>(fresh_count_);
    op.reported = std::find(fresh_.begin(), fresh_end, key) == fresh_end;
    out.push_back(std::move(op));
  }
  std::sort(out.begin(), out.end(),
            [](const PendingOp& a, const PendingOp& b) { return a.submitted < b.submitted; });
  return out;
}

bool TensorQueue::oldest_submitted(std::chrono::steady_clock::time_point* out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (entries_.empty()) return false;
  *out = std::chrono::steady_clock::time_point::max();
  for (const auto& [key, entry] : entries_) *out = std::min(*out, entry.submitted);
  return true;
}

size_t TensorQueue::in_flight() const {
  return in_flight_.load(std::memory_order_relaxed);
}

}  // namespace hvdc::core
