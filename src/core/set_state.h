// What the engine thread keeps for each process set this rank belongs to: the set's response
// cache and the tensors waiting on it, what it has to announce in the next round, its
// coordinator (on the set's first member), and its count of executed collectives (which numbers
// its data tags).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/controller.h"
#include "core/process_set_table.h"
#include "core/response_cache.h"

namespace hvdc::core {

struct PendingHit {
  uint32_t slot;
  std::chrono::steady_clock::time_point since;
  // A host allreduce small enough to send its input with the round: the caller's buffer.
  const void* input = nullptr;
  uint32_t input_bytes = 0;
};

struct SetState {
  SetState(ProcessSetInfo set_info, size_t cache_capacity)
      : info(std::move(set_info)), cache(cache_capacity), invalid_bits(cache.words(), 0) {}

  int size() const { return static_cast<int>(info.ranks.size()); }
  bool coordinator() const { return info.index == 0; }

  // pending_hits[name] = hit, in the node the last dropped hit left (a warm step's op allocates
  // no node, and a name no longer than the last one no string).
  void add_pending_hit(const std::string& name, const PendingHit& hit) {
    if (spare_hit_node.empty()) {
      pending_hits[name] = hit;
      return;
    }
    spare_hit_node.key() = name;
    spare_hit_node.mapped() = hit;
    auto placed = pending_hits.insert(std::move(spare_hit_node));
    if (!placed.inserted) {
      placed.position->second = hit;
      spare_hit_node = std::move(placed.node);
    }
  }
  // Erases pending_hits[name], keeping its node for the next add_pending_hit().
  void drop_pending_hit(const std::string& name) {
    auto node = pending_hits.extract(name);
    if (!node.empty()) spare_hit_node = std::move(node);
  }

  ProcessSetInfo info;
  ResponseCache cache;
  std::map<std::string, PendingHit> pending_hits;  // ready here, cached
  std::vector<uint64_t> invalid_bits;              // stale slots not yet announced
  std::vector<Response> coordinator_out;           // negotiated, not yet announced
  std::unique_ptr<Controller> controller;          // on the coordinator only
  uint64_t op_seq = 0;                             // responses executed
  uint64_t revalidated_generation = 0;  // cache generation pending hits were checked against
  std::map<std::string, PendingHit>::node_type spare_hit_node;  // see add_pending_hit()
};

}  // namespace hvdc::core
