#include "memory/peer_regions.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace hvdc::memory {

using common::make_error;

size_t physical_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
}

PeerRegions::~PeerRegions() {
  for (auto& [key, m] : maps_) munmap(m.base, m.bytes);
}

Status PeerRegions::map(pid_t pid, const RegionRef& ref, char** base, bool pinned) {
  auto it = maps_.find({pid, ref.id});
  if (it != maps_.end()) {
    it->second.used_in = ops_;
    if (pinned && !it->second.pinned) {
      count(it->second, false);
      it->second.pinned = true;
    }
    *base = it->second.base;
    return Status::ok();
  }
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/fd/%d", static_cast<int>(pid), ref.fd);
  const int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return make_error(HVD_ERR_SYSTEM, "opening %s (a local peer's shared buffer) failed: %s", path,
                      strerror(errno));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < ref.mapped_bytes) {
    close(fd);
    return make_error(HVD_ERR_SYSTEM, "%s holds %lld bytes, not the %llu of the peer's buffer",
                      path, static_cast<long long>(st.st_size),
                      static_cast<unsigned long long>(ref.mapped_bytes));
  }
  void* p = mmap(nullptr, ref.mapped_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  close(fd);  // the mapping keeps the memory
  if (p == MAP_FAILED) {
    return make_error(HVD_ERR_SYSTEM, "mapping %s (%llu bytes) failed: %s", path,
                      static_cast<unsigned long long>(ref.mapped_bytes), strerror(err));
  }
  const Mapping& m = maps_[{pid, ref.id}] =
      Mapping{static_cast<char*>(p), ref.mapped_bytes, ops_, pinned};
  count(m, true);
  *base = static_cast<char*>(p);
  return Status::ok();
}

void PeerRegions::count(const Mapping& m, bool add) {
  if (m.pinned) return;
  if (add) {
    ++unpinned_count_;
    unpinned_bytes_ += m.bytes;
  } else {
    --unpinned_count_;
    unpinned_bytes_ -= m.bytes;
  }
}

void PeerRegions::trim(size_t max_count, size_t max_bytes) {
  const uint64_t last_op = ops_++;
  if (unpinned_count_ <= max_count && unpinned_bytes_ <= max_bytes) return;
  for (auto it = maps_.begin(); it != maps_.end();) {
    if (it->second.used_in != last_op && !it->second.pinned) {
      count(it->second, false);
      munmap(it->second.base, it->second.bytes);
      it = maps_.erase(it);
      ++generation_;
    } else {
      ++it;
    }
  }
}

}  // namespace hvdc::memory
