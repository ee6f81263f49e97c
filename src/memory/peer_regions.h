// Mappings of other local processes' shared regions (shared_regions.h), opened through
// /proc/<pid>/fd/<fd> and kept by (pid, region id), so that a buffer used op after op is mapped
// once. Writable: the in-place allreduce writes each reduced chunk straight into the peers'
// outputs. Used by one thread at a time (the engine's passes).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>

#include "memory/shared_regions.h"

namespace hvdc::memory {

// The machine's physical memory in bytes (0 where the system does not say).
size_t physical_bytes();

class PeerRegions {
 public:
  PeerRegions() = default;
  PeerRegions(const PeerRegions&) = delete;
  PeerRegions& operator=(const PeerRegions&) = delete;
  ~PeerRegions();

  // *base = where process pid's region `ref` is mapped here (ref.offset not added). A failure
  // (the process is gone, /proc access refused) names the pid, the fd and the system's text.
  // With `pinned`, the mapping stays until this object goes (trim() leaves it).
  Status map(pid_t pid, const RegionRef& ref, char** base, bool pinned = false);
  // Called before each op that maps: unmaps what the last op did not use, once more than
  // `max_count` regions or more than `max_bytes` bytes are mapped (pinned ones not counted).
  // Regions a peer freed stay mapped until then: nothing here tells them from live ones.
  void trim(size_t max_count, size_t max_bytes = SIZE_MAX);
  size_t mapped_count() const { return maps_.size(); }
  size_t unpinned_bytes() const { return unpinned_bytes_; }
  // Changes whenever trim() unmaps something: what was mapped before may be gone.
  uint64_t generation() const { return generation_; }

 private:
  struct Mapping {
    char* base;
    size_t bytes;
    uint64_t used_in;  // the last op (ops_ then) that mapped it
    bool pinned;
  };
  void count(const Mapping& m, bool add);  // to the unpinned totals, or from them

  std::map<std::pair<pid_t, uint64_t>, Mapping> maps_;
  uint64_t generation_ = 0;
  // An op's number, not a flag on every mapping, so that an op's trim does not touch thousands
  // of them to start the next.
  uint64_t ops_ = 1;
  size_t unpinned_count_ = 0;
  size_t unpinned_bytes_ = 0;
};

}  // namespace hvdc::memory
