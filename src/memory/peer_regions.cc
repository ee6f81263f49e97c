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

PeerRegions::~PeerRegions() {
  for (auto& [key, m] : maps_) munmap(m.base, m.bytes);
}

Status PeerRegions::map(pid_t pid, const RegionRef& ref, char** base, bool pinned) {
  auto it = maps_.find({pid, ref.id});
  if (it != maps_.end()) {
    it->second.used = true;
    it->second.pinned |= pinned;
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
  maps_[{pid, ref.id}] = Mapping{static_cast<char*>(p), ref.mapped_bytes, true, pinned};
  *base = static_cast<char*>(p);
  return Status::ok();
}

void PeerRegions::trim(size_t limit) {
  if (maps_.size() <= limit) {
    for (auto& [key, m] : maps_) m.used = false;
    return;
  }
  for (auto it = maps_.begin(); it != maps_.end();) {
    if (!it->second.used && !it->second.pinned) {
      munmap(it->second.base, it->second.bytes);
      it = maps_.erase(it);
      ++generation_;
    } else {
      it->second.used = false;
      ++it;
    }
  }
}

}  // namespace hvdc::memory
