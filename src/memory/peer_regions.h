// Mappings of other local processes' shared regions (shared_regions.h), opened through
// /proc/<pid>/fd/<fd> and kept by (pid, region id), so that a buffer used op after op is mapped
// once. Writable: the in-place allreduce writes each reduced chunk straight into the peers'
// outputs. Used by one thread at a time (the engine's passes).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <utility>

#include "memory/shared_regions.h"

namespace hvdc::memory {

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
  // Unmaps what no op used since the last call, once more than `limit` regions are mapped:
  // regions a peer freed stay mapped until then.
  void trim(size_t limit);
  size_t mapped_count() const { return maps_.size(); }
  // Changes whenever trim() unmaps something: what was mapped before may be gone.
  uint64_t generation() const { return generation_; }

 private:
  struct Mapping {
    char* base;
    size_t bytes;
    bool used;
    bool pinned;
  };
  std::map<std::pair<pid_t, uint64_t>, Mapping> maps_;
  uint64_t generation_ = 0;
};

}  // namespace hvdc::memory
