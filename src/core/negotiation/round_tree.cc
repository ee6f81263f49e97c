#include "core/negotiation/round_tree.h"

#include <algorithm>

namespace hvdc::core {

RoundTree::RoundTree(int rank, int size, int fanout)
    : rank_(rank), size_(size), fanout_(std::max(2, fanout)) {
  children_ = children_of(rank_);
  for (int child : children_) subtrees_.push_back(subtree(child));
}

std::vector<int> RoundTree::children_of(int rank) const {
  std::vector<int> out;
  const long long first = static_cast<long long>(rank) * fanout_ + 1;
  for (long long c = first; c < first + fanout_ && c < size_; ++c)
    out.push_back(static_cast<int>(c));
  return out;
}

// In heap order the subtree's ranks at each level form one contiguous range: [lo, hi] below
// [lo, hi] is [lo * k + 1, hi * k + k].
std::vector<int> RoundTree::subtree(int rank) const {
  std::vector<int> out;
  long long lo = rank, hi = rank;
  while (lo < size_) {
    for (long long r = lo; r <= hi && r < size_; ++r) out.push_back(static_cast<int>(r));
    lo = lo * fanout_ + 1;
    hi = hi * fanout_ + fanout_;
  }
  return out;
}

int RoundTree::depth() const {
  int depth = 0;
  for (int r = size_ - 1; r > 0; r = parent_of(r)) ++depth;
  return depth;
}

}  // namespace hvdc::core
