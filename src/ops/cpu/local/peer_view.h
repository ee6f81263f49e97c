// A local peer's buffer for one op, read in place: pieces inside its hvd_mem_alloc regions
// through a mapping (plain loads), the others with cross-memory attach (process_vm_readv, one
// kernel copy). Engine thread only.
#pragma once

#include <vector>

#include "memory/peer_regions.h"
#include "ops/cpu/local/buffer_desc.h"
#include "ops/cpu/pieces.h"

namespace hvdc::ops::cpu::local {

class PeerView {
 public:
  // Maps the region pieces of `pieces`, those of process pid (global rank `rank`); a failure
  // names the pid and the reason.
  Status open(pid_t pid, int rank, const std::vector<PieceDesc>& pieces,
              memory::PeerRegions& regions);
  // True if some piece is read through process_vm_readv.
  bool needs_cma() const { return needs_cma_; }
  // Reads one byte through process_vm_readv: whether this process may read the peer's memory.
  // Reads of a process that is gone fail with HVD_ERR_PEER_FAILURE, others HVD_ERR_SYSTEM.
  Status probe_cma() const;

  // The peer's bytes [offset, offset + len) when they lie in one mapped piece, else nullptr.
  const char* mapped(size_t offset, size_t len) const;
  // Copies the peer's bytes [offset, offset + len) to dst.
  Status read(size_t offset, size_t len, char* dst) const;
  // Copies the peer's bytes [offset, offset + len) into the same bytes of `mine`.
  Status read_into(const Pieces& mine, size_t offset, size_t len) const;

 private:
  struct Part {
    size_t start;  // in the view
    size_t bytes;
    uint64_t addr;      // in the peer's address space
    const char* local;  // mapped here, or nullptr
  };
  size_t find(size_t offset) const;
  Status read_remote(const Part& part, size_t skip, size_t len, char* dst) const;

  pid_t pid_ = 0;
  int rank_ = -1;
  std::vector<Part> parts_;
  bool needs_cma_ = false;
};

}  // namespace hvdc::ops::cpu::local
