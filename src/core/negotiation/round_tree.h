// The shape of the tree that carries rounds of agreement at scale (tree_rounds.cc): a k-ary
// tree over the ranks rooted at rank 0, in heap order: the children of rank i are k*i+1 ..
// k*i+k (those below the rank count), so the depth is about log_k(n) and every rank computes
// every other rank's place without a message.
#pragma once

#include <cstddef>
#include <vector>

namespace hvdc::core {

class RoundTree {
 public:
  // `fanout` >= 2 children per node; `size` >= 1 ranks; 0 <= rank < size.
  RoundTree(int rank, int size, int fanout);

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_root() const { return rank_ == 0; }
  int parent() const { return parent_of(rank_); }  // -1 at the root
  const std::vector<int>& children() const { return children_; }
  // The ranks of the subtree under `child` (one of children()), ascending.
  const std::vector<int>& subtree_of_child(size_t index) const { return subtrees_[index]; }

  int parent_of(int rank) const { return rank == 0 ? -1 : (rank - 1) / fanout_; }
  std::vector<int> children_of(int rank) const;
  // Every rank under `rank`, itself included, ascending.
  std::vector<int> subtree(int rank) const;
  // Edges from the root to the deepest leaf.
  int depth() const;

 private:
  int rank_;
  int size_;
  int fanout_;
  std::vector<int> children_;
  std::vector<std::vector<int>> subtrees_;  // per child, its subtree
};

}  // namespace hvdc::core
