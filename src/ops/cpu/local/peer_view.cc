#include "ops/cpu/local/peer_view.h"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/copy_bytes.h"
#include "ops/cpu/local/stream_copy.h"

namespace hvdc::ops::cpu::local {

using common::make_error;

Status PeerView::open(pid_t pid, int rank, const std::vector<PieceDesc>& pieces,
                      memory::PeerRegions& regions) {
  pid_ = pid;
  rank_ = rank;
  parts_.clear();
  needs_cma_ = false;
  size_t start = 0;
  for (const PieceDesc& p : pieces) {
    Part part{start, p.bytes, p.addr, nullptr};
    if (p.region.id != 0) {
      char* base = nullptr;
      HVDC_RETURN_IF_ERROR(regions.map(pid_, p.region, &base));
      part.local = base + p.region.offset;
    } else {
      needs_cma_ = true;
    }
    parts_.push_back(part);
    start += p.bytes;
  }
  return Status::ok();
}

Status PeerView::probe_cma(bool write) const {
  for (const Part& part : parts_) {
    if (part.local != nullptr || part.bytes == 0) continue;
    char byte = 0;
    HVDC_RETURN_IF_ERROR(move_remote(part, 0, 1, &byte, false));
    return write ? move_remote(part, 0, 1, &byte, true) : Status::ok();
  }
  return Status::ok();
}

size_t PeerView::find(size_t offset) const {
  auto it = std::upper_bound(parts_.begin(), parts_.end(), offset,
                             [](size_t off, const Part& p) { return off < p.start; });
  return static_cast<size_t>(it - parts_.begin()) - 1;
}

size_t PeerView::page_offset(size_t offset) const {
  if (parts_.empty()) return 0;
  const Part& part = parts_[find(offset)];
  return (part.addr + (offset - part.start)) % kPageBytes;
}

const char* PeerView::mapped(size_t offset, size_t len) const {
  if (parts_.empty()) return nullptr;
  const Part& part = parts_[find(offset)];
  if (part.local == nullptr || offset + len > part.start + part.bytes) return nullptr;
  return part.local + (offset - part.start);
}

Status PeerView::move_remote(const Part& part, size_t skip, size_t len, char* here,
                             bool to_peer) const {
  while (len > 0) {
    iovec local{here, len};
    iovec remote{reinterpret_cast<void*>(part.addr + skip), len};
    const ssize_t moved = to_peer ? process_vm_writev(pid_, &local, 1, &remote, 1, 0)
                                  : process_vm_readv(pid_, &local, 1, &remote, 1, 0);
    if (moved < 0 && errno == ESRCH) {
      // The peer died: as fatal as a lost connection, so that every rank's work ends.
      return make_error(HVD_ERR_PEER_FAILURE,
                        "rank %d (process %d on this host) exited while its buffer was being %s",
                        rank_, static_cast<int>(pid_), to_peer ? "written" : "read");
    }
    if (moved <= 0) {
      return make_error(HVD_ERR_SYSTEM,
                        "%s %zu bytes of process %d (a rank on this host) with %s failed: %s",
                        to_peer ? "writing" : "reading", len, static_cast<int>(pid_),
                        to_peer ? "process_vm_writev" : "process_vm_readv",
                        moved < 0 ? strerror(errno) : "no progress");
    }
    here += moved;
    skip += static_cast<size_t>(moved);
    len -= static_cast<size_t>(moved);
  }
  return Status::ok();
}

Status PeerView::move(size_t offset, size_t len, char* here, bool to_peer, bool stream) const {
  for (size_t i = find(offset); len > 0 && i < parts_.size(); ++i) {
    const Part& part = parts_[i];
    const size_t skip = offset - part.start;
    const size_t n = std::min(len, part.bytes - skip);
    if (part.local == nullptr) {
      HVDC_RETURN_IF_ERROR(move_remote(part, skip, n, here, to_peer));
    } else if (!to_peer) {
      common::copy_bytes(here, part.local + skip, n);
    } else if (stream) {
      stream_copy(part.local + skip, here, n);
    } else {
      common::copy_bytes(part.local + skip, here, n);
    }
    here += n;
    offset += n;
    len -= n;
  }
  return Status::ok();
}

Status PeerView::read(size_t offset, size_t len, char* dst) const {
  return move(offset, len, dst, false, false);
}

Status PeerView::write(size_t offset, size_t len, const char* src, bool stream) const {
  // Only read from: the kernel's iovec and the shared walk just take a non-const pointer.
  return move(offset, len, const_cast<char*>(src), true, stream);
}

}  // namespace hvdc::ops::cpu::local
