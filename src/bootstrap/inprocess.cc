#include "bootstrap/inprocess.h"

#include <cstring>

namespace hvdc::bootstrap {
namespace {

class InProcessBootstrap final : public Bootstrap {
 public:
  InProcessBootstrap(std::shared_ptr<InProcessGroup> group, int rank)
      : group_(std::move(group)), rank_(rank) {}
  const char* name() const override { return "in-process"; }
  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  Status allgather(const void* in, size_t bytes, void* out) override {
    return group_->exchange(rank_, in, bytes, out, -1);
  }
  Status broadcast(void* buf, size_t bytes, int root) override {
    return group_->exchange(rank_, buf, bytes, buf, root);
  }
  Status barrier() override { return group_->exchange(rank_, nullptr, 0, nullptr, -1); }

 private:
  std::shared_ptr<InProcessGroup> group_;
  int rank_;
};

}  // namespace

std::shared_ptr<InProcessGroup> InProcessGroup::create(int size) {
  return std::shared_ptr<InProcessGroup>(new InProcessGroup(size));
}

std::unique_ptr<Bootstrap> InProcessGroup::member(int rank) {
  return std::make_unique<InProcessBootstrap>(shared_from_this(), rank);
}

// One round: everyone deposits, the last to arrive opens the round, everyone copies out, the last
// to leave closes it. root < 0 is an allgather into out; root >= 0 copies the root's bytes.
Status InProcessGroup::exchange(int rank, const void* in, size_t bytes, void* out, int root) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return departed_ == 0 || departed_ == size_; });
  if (departed_ == size_) departed_ = 0;
  const uint64_t my_round = round_;
  slots_[rank].assign(static_cast<const char*>(in), static_cast<const char*>(in) + bytes);
  if (++arrived_ == size_) {
    ++round_;
    cv_.notify_all();
  }
  cv_.wait(lock, [&] { return round_ != my_round; });
  if (root >= 0) {
    if (rank != root && bytes > 0) std::memcpy(out, slots_[root].data(), bytes);
  } else if (bytes > 0) {
    for (int r = 0; r < size_; ++r)
      std::memcpy(static_cast<char*>(out) + r * bytes, slots_[r].data(), bytes);
  }
  if (++departed_ == size_) {
    arrived_ = 0;
    cv_.notify_all();
  }
  return Status::ok();
}

}  // namespace hvdc::bootstrap
