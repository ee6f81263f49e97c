#include "memory/shared_regions.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>

namespace hvdc::memory {
namespace {

using common::make_error;

struct Region {
  uint64_t id;
  int fd;
  size_t asked;   // the size hvd_mem_alloc was given
  size_t mapped;  // rounded up to pages
};

// Keyed by start address. Lookups come from the engine thread once per op piece; allocation is
// rare, so one mutex is enough.
struct Registry {
  std::mutex mutex;
  std::map<uintptr_t, Region> regions;
  uint64_t next_id = 1;
  std::atomic<uint64_t> generation{0};  // read without the mutex
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: buffers may be freed at exit
  return *r;
}

// The region whose mapping holds addr, or end(). Caller holds the mutex.
std::map<uintptr_t, Region>::iterator find_holder(Registry& r, uintptr_t addr) {
  auto it = r.regions.upper_bound(addr);
  if (it == r.regions.begin()) return r.regions.end();
  --it;
  return addr < it->first + it->second.mapped ? it : r.regions.end();
}

Status map_memfd(size_t mapped, int* fd, void** base) {
  *fd = memfd_create("hvdc-mem", MFD_CLOEXEC);
  if (*fd < 0) return make_error(HVD_ERR_SYSTEM, "memfd_create failed: %s", strerror(errno));
  if (ftruncate(*fd, static_cast<off_t>(mapped)) != 0) {
    const int err = errno;
    close(*fd);
    return make_error(
        err == ENOMEM || err == EFBIG || err == ENOSPC ? HVD_ERR_OUT_OF_MEMORY : HVD_ERR_SYSTEM,
        "sizing shared memory to %zu bytes failed: %s", mapped, strerror(err));
  }
  *base = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
  if (*base == MAP_FAILED) {
    const int err = errno;
    close(*fd);
    return make_error(err == ENOMEM ? HVD_ERR_OUT_OF_MEMORY : HVD_ERR_SYSTEM,
                      "mapping %zu bytes of shared memory failed: %s", mapped, strerror(err));
  }
  return Status::ok();
}

}  // namespace

Status allocate_region(size_t bytes, void** out) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (bytes > SIZE_MAX - page) {
    return make_error(HVD_ERR_OUT_OF_MEMORY, "bytes is %zu: too large to map", bytes);
  }
  const size_t mapped = (bytes + page - 1) / page * page;
  int fd = -1;
  void* base = nullptr;
  HVDC_RETURN_IF_ERROR(map_memfd(mapped, &fd, &base));
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.regions[reinterpret_cast<uintptr_t>(base)] = Region{r.next_id++, fd, bytes, mapped};
  r.generation.fetch_add(1);
  *out = base;
  return Status::ok();
}

Status free_region(void* base) {
  Registry& r = registry();
  Region region;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.regions.find(reinterpret_cast<uintptr_t>(base));
    if (it == r.regions.end()) {
      return make_error(HVD_ERR_INVALID_ARGUMENT,
                        "ptr is %p, which is not the start of a buffer of hvd_mem_alloc", base);
    }
    region = it->second;
    r.regions.erase(it);
    r.generation.fetch_add(1);
  }
  munmap(base, region.mapped);
  close(region.fd);
  return Status::ok();
}

bool region_of(const void* ptr, void** base, size_t* bytes) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = find_holder(r, reinterpret_cast<uintptr_t>(ptr));
  if (it == r.regions.end() || reinterpret_cast<uintptr_t>(ptr) >= it->first + it->second.asked) {
    return false;
  }
  *base = reinterpret_cast<void*>(it->first);
  *bytes = it->second.asked;
  return true;
}

bool locate_in_region(const void* addr, size_t bytes, RegionRef* ref) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.regions.empty()) return false;
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  auto it = find_holder(r, a);
  if (it == r.regions.end() || bytes > it->first + it->second.mapped - a) return false;
  ref->id = it->second.id;
  ref->fd = it->second.fd;
  ref->offset = a - it->first;
  ref->mapped_bytes = it->second.mapped;
  return true;
}

uint64_t regions_generation() {
  return registry().generation.load();
}

}  // namespace hvdc::memory
