#include "bootstrap/tcp/store_table.h"

#include <algorithm>

namespace hvdc::bootstrap {

void StoreTable::set(const std::string& key, std::string value, uint32_t reads,
                     std::vector<WaiterId>* ready) {
  entries_[key] = Entry{std::move(value), reads};
  auto it = waiting_on_.find(key);
  if (it == waiting_on_.end()) return;
  std::vector<WaiterId> ids = std::move(it->second);
  waiting_on_.erase(it);
  for (WaiterId id : ids) {
    auto waiter = waiters_.find(id);
    if (waiter == waiters_.end() || waiter->second.missing == 0) continue;
    if (--waiter->second.missing == 0) ready->push_back(id);
  }
}

bool StoreTable::all_present(const std::vector<std::string>& keys) const {
  for (const std::string& key : keys) {
    if (entries_.count(key) == 0) return false;
  }
  return true;
}

// Only called when all_present(keys); a key asked twice is delivered (and spent) twice, and one
// whose budget runs out mid-request is still delivered to every position that asked for it.
void StoreTable::deliver(const std::vector<std::string>& keys, std::vector<std::string>* values) {
  values->clear();
  values->reserve(keys.size());
  for (const std::string& key : keys) values->push_back(entries_.at(key).value);
  for (const std::string& key : keys) {
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.reads_left == 0) continue;
    if (--it->second.reads_left == 0) entries_.erase(it);
  }
}

void StoreTable::register_missing(WaiterId id, Waiter* waiter) {
  waiter->missing = 0;
  for (const std::string& key : waiter->keys) {
    if (entries_.count(key) != 0) continue;
    waiting_on_[key].push_back(id);
    ++waiter->missing;
  }
}

void StoreTable::unregister(WaiterId id, const Waiter& waiter) {
  for (const std::string& key : waiter.keys) {
    auto it = waiting_on_.find(key);
    if (it == waiting_on_.end()) continue;
    std::vector<WaiterId>& ids = it->second;
    ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
    if (ids.empty()) waiting_on_.erase(it);
  }
}

bool StoreTable::get(WaiterId id, std::vector<std::string> keys, std::vector<std::string>* values) {
  if (all_present(keys)) {
    deliver(keys, values);
    return true;
  }
  Waiter& waiter = waiters_[id];
  waiter.keys = std::move(keys);
  register_missing(id, &waiter);
  return false;
}

bool StoreTable::complete(WaiterId id, std::vector<std::string>* values) {
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return false;
  if (!all_present(it->second.keys)) {
    unregister(id, it->second);
    register_missing(id, &it->second);
    return false;
  }
  deliver(it->second.keys, values);
  unregister(id, it->second);
  waiters_.erase(it);
  return true;
}

void StoreTable::cancel(WaiterId id, std::vector<uint32_t>* missing) {
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return;
  const std::vector<std::string>& keys = it->second.keys;
  for (size_t i = 0; missing != nullptr && i < keys.size(); ++i) {
    if (entries_.count(keys[i]) == 0) missing->push_back(static_cast<uint32_t>(i));
  }
  unregister(id, it->second);
  waiters_.erase(it);
}

}  // namespace hvdc::bootstrap
