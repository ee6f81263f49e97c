#include "ops/cpu/local/peer_view.h"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

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
      const char* base = nullptr;
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

Status PeerView::probe_cma() const {
  for (const Part& part : parts_) {
    if (part.local != nullptr || part.bytes == 0) continue;
    char byte = 0;
    return read_remote(part, 0, 1, &byte);
  }
  return Status::ok();
}

size_t PeerView::find(size_t offset) const {
  auto it = std::upper_bound(parts_.begin(), parts_.end(), offset,
                             [](size_t off, const Part& p) { return off < p.start; });
  return static_cast<size_t>(it - parts_.begin()) - 1;
}

const char* PeerView::mapped(size_t offset, size_t len) const {
  if (parts_.empty()) return nullptr;
  const Part& part = parts_[find(offset)];
  if (part.local == nullptr || offset + len > part.start + part.bytes) return nullptr;
  return part.local + (offset - part.start);
}

Status PeerView::read_remote(const Part& part, size_t skip, size_t len, char* dst) const {
  while (len > 0) {
    iovec local{dst, len};
    iovec remote{reinterpret_cast<void*>(part.addr + skip), len};
    const ssize_t got = process_vm_readv(pid_, &local, 1, &remote, 1, 0);
    if (got < 0 && errno == ESRCH) {
      // The peer died: as fatal as a lost connection, so that every rank's work ends.
      return make_error(HVD_ERR_PEER_FAILURE,
                        "rank %d (process %d on this host) exited while its buffer was being read",
                        rank_, static_cast<int>(pid_));
    }
    if (got <= 0) {
      return make_error(HVD_ERR_SYSTEM,
                        "reading %zu bytes of process %d (a rank on this host) with "
                        "process_vm_readv failed: %s",
                        len, static_cast<int>(pid_), got < 0 ? strerror(errno) : "no progress");
    }
    dst += got;
    skip += static_cast<size_t>(got);
    len -= static_cast<size_t>(got);
  }
  return Status::ok();
}

Status PeerView::read(size_t offset, size_t len, char* dst) const {
  for (size_t i = find(offset); len > 0 && i < parts_.size(); ++i) {
    const Part& part = parts_[i];
    const size_t skip = offset - part.start;
    const size_t n = std::min(len, part.bytes - skip);
    if (part.local != nullptr) {
      std::memcpy(dst, part.local + skip, n);
    } else {
      HVDC_RETURN_IF_ERROR(read_remote(part, skip, n, dst));
    }
    dst += n;
    offset += n;
    len -= n;
  }
  return Status::ok();
}

Status PeerView::read_into(const Pieces& mine, size_t offset, size_t len) const {
  Status st = Status::ok();
  mine.for_each(offset, len, [&](char* dst, size_t n) {
    if (st.is_ok()) st = read(offset, n, dst);
    offset += n;
  });
  return st;
}

}  // namespace hvdc::ops::cpu::local
