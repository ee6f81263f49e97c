// The engine's counters (hvd_stats): written by the engine thread and its collaborators.
#pragma once

#include <atomic>
#include <cstdint>

namespace hvdc::core {

// Counters since init; read from any thread.
struct EngineStats {
  std::atomic<uint64_t> coordinator_requests{0};  // request lists this rank sent to rank 0
  std::atomic<uint64_t> rounds{0};                // rounds of agreement completed
  std::atomic<uint64_t> cache_hits{0};            // tensors agreed through the cache
  std::atomic<uint64_t> cache_misses{0};          // tensors sent to the coordinator
  std::atomic<uint64_t> cache_evictions{0};
  std::atomic<uint64_t> collectives{0};        // responses executed (a fused one counts once)
  std::atomic<uint64_t> tensors{0};            // tensors completed by them
  std::atomic<uint64_t> fused_collectives{0};  // collectives over more than one tensor
  std::atomic<uint64_t> fused_tensors{0};
  std::atomic<uint64_t> fused_bytes{0};
  // Collectives whose inputs came with the round (no exchange of their own); not in hvd_stats.
  std::atomic<uint64_t> round_input_collectives{0};
  // Collectives agreed on a set's board instead of in a round (lane/lane.h), and the lane's
  // agreements voided here (their ops went to the negotiation); not in hvd_stats.
  std::atomic<uint64_t> lane_collectives{0};
  std::atomic<uint64_t> lane_voids{0};
};

}  // namespace hvdc::core
