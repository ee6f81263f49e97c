// A local peer's buffer for one op, read and written in place: pieces inside its hvd_mem_alloc
// regions through a mapping (plain loads and stores), the others with cross-memory attach
// (process_vm_readv / process_vm_writev, one kernel copy). One thread at a time.
#pragma once

#include <vector>

#include "memory/peer_regions.h"
#include "ops/cpu/local/buffer_desc.h"
#include "ops/cpu/pieces.h"

namespace hvdc::ops::cpu::local {

// The page size that the kernel's copies align to (size_t: it is only ever a modulus here).
constexpr size_t kPageBytes = 4096;

class PeerView {
 public:
  // Maps the region pieces of `pieces`, those of process pid (global rank `rank`); a failure
  // names the pid and the reason.
  Status open(pid_t pid, int rank, const std::vector<PieceDesc>& pieces,
              memory::PeerRegions& regions);
  // True if some piece is reached through process_vm_readv / process_vm_writev.
  bool needs_cma() const { return needs_cma_; }
  // Reads the first byte of the first such piece through process_vm_readv (and, with `write`,
  // writes it back unchanged through process_vm_writev): whether this process may read (and
  // write) the peer's memory. A process that is gone fails with HVD_ERR_PEER_FAILURE, a refusal
  // with HVD_ERR_SYSTEM. The byte must not change meanwhile: probe only buffers of a pending op.
  Status probe_cma(bool write) const;

  // The peer's bytes [offset, offset + len) when they lie in one mapped piece, else nullptr.
  const char* mapped(size_t offset, size_t len) const;
  // Copies the peer's bytes [offset, offset + len) to dst.
  Status read(size_t offset, size_t len, char* dst) const;
  // Where byte `offset` of the view lies within its page, in the peer's address space: a read
  // into a destination at the same page offset avoids the kernel's slow copy case (where the
  // destination lies 1-63 bytes past the source modulo 4 KiB; common/copy_bytes.h).
  size_t page_offset(size_t offset) const;
  // Copies src to the peer's bytes [offset, offset + len); with `stream`, mapped pieces are
  // written with non-temporal stores (stream_copy.h: stream_fence() before telling the peer).
  Status write(size_t offset, size_t len, const char* src, bool stream) const;

 private:
  struct Part {
    size_t start;  // in the view
    size_t bytes;
    uint64_t addr;  // in the peer's address space
    char* local;    // mapped here, or nullptr
  };
  size_t find(size_t offset) const;
  // read() and write(): the view's bytes [offset, offset + len) from or to `here`, part by part.
  Status move(size_t offset, size_t len, char* here, bool to_peer, bool stream) const;
  // process_vm_readv (to_peer false: peer -> here) or process_vm_writev (here -> peer) of len
  // bytes at part's byte `skip`, repeated until all moved.
  Status move_remote(const Part& part, size_t skip, size_t len, char* here, bool to_peer) const;

  pid_t pid_ = 0;
  int rank_ = -1;
  std::vector<Part> parts_;
  bool needs_cma_ = false;
};

// A peer's input (chunk m of it is read by member m) and output (chunk m written by member m).
struct PeerViews {
  PeerView in, out;
};

}  // namespace hvdc::ops::cpu::local
