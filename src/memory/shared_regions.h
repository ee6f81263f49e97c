// Buffers of hvd_mem_alloc: host memory in a memfd that the other ranks on this host map
// (through /proc/<pid>/fd/<fd>), so that a collective reads their data in place. Process-wide,
// independent of any engine: a buffer outlives hvd_shutdown until it is freed.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace hvdc::memory {

using common::Status;

// Where a byte range lies in one of this process's shared regions: what a peer needs to map it.
struct RegionRef {
  uint64_t id = 0;  // unique in this process, never reused (0: not in a region)
  int32_t fd = -1;  // the memfd, open for the region's whole life
  uint64_t offset = 0;
  uint64_t mapped_bytes = 0;  // the whole mapping (a multiple of the page size)
};

// Maps `bytes` (> 0) of zeroed shared memory, page-aligned.
Status allocate_region(size_t bytes, void** out);
// Unmaps the region starting at `base`; an address that starts no region is an error.
Status free_region(void* base);
// The region holding ptr: its start and the size asked for. False if ptr is in none.
bool region_of(const void* ptr, void** base, size_t* bytes);
// Fills *ref when [addr, addr + bytes) lies inside one region; false otherwise.
bool locate_in_region(const void* addr, size_t bytes, RegionRef* ref);
// Changes whenever a region is allocated or freed: a buffer located before may have moved into
// or out of a region since.
uint64_t regions_generation();

}  // namespace hvdc::memory
