// What the unit tests of the in-place allreduce among ranks of one host share: an
// hvd_mem_alloc region freed with the test, and a comm set to read in place from any size.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>

#include "memory/shared_regions.h"
#include "ops/cpu/allreduce/allreduce.h"
#include "ops/cpu/local/local_access.h"

namespace in_place_fixture {

using hvdc::common::Status;

// An hvd_mem_alloc region of this process, freed with the object.
struct Region {
  char* base = nullptr;
  explicit Region(size_t bytes) {
    void* p = nullptr;
    Status st = hvdc::memory::allocate_region(bytes, &p);
    EXPECT_TRUE(st.is_ok()) << st.message();
    base = static_cast<char*>(p);
  }
  ~Region() {
    if (base != nullptr) {
      EXPECT_TRUE(hvdc::memory::free_region(base).is_ok());
    }
  }
};

// Every rank's comm reads in place from the first byte on, with small segments so that 4099
// elements span several, and heap buffers read through the kernel (never staged).
inline void enable_local(hvdc::ops::cpu::Comm& comm, hvdc::ops::cpu::local::LocalAccess& access) {
  access.min_bytes = 0;
  access.stage_max_bytes = 0;
  comm.local = &access;
  comm.segment_bytes = 4096;
}

}  // namespace in_place_fixture
