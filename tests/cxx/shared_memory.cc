// hvdc::SharedBuffer and mem_alloc / mem_free / mem_region: zeroed buffers of the asked size,
// lookups from interior pointers, clear errors, collectives whose buffers are shared memory, and
// a buffer made before init that stays usable after shutdown until it is freed.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "cases.h"
#include "check.h"

namespace cxx_test {

namespace {

void check_allocation_and_lookup() {
  hvdc::SharedBuffer<float> buffer(1000);
  EXPECT_EQ(buffer.size(), 1000u);
  EXPECT_EQ(buffer.bytes(), 4000u);
  EXPECT(std::all_of(buffer.begin(), buffer.end(), [](float v) { return v == 0.0f; }));
  const hvdc::MemRegion region = hvdc::mem_region(&buffer[500]);
  EXPECT(region.base == buffer.data());
  EXPECT_EQ(region.bytes, 4000u);

  hvdc::SharedBuffer<float> moved = std::move(buffer);
  EXPECT(buffer.empty() && buffer.data() == nullptr);
  EXPECT(moved.data() == region.base);
  moved[999] = 7.0f;
  const hvdc::SharedBuffer<int64_t> copy =
      hvdc::SharedBuffer<int64_t>::copy_of(std::vector<int64_t>{4, 5, 6}.data(), 3);
  EXPECT(copy[0] == 4 && copy[2] == 6);

  void* raw = hvdc::mem_alloc(10);
  EXPECT_EQ(hvdc::mem_region(static_cast<char*>(raw) + 9).bytes, 10u);
  hvdc::mem_free(raw);
  hvdc::mem_free(nullptr);  // does nothing
}

void check_errors() {
  EXPECT_ERROR(HVD_ERR_INVALID_ARGUMENT, "bytes is 0", hvdc::SharedBuffer<double>(0));
  EXPECT_ERROR(HVD_ERR_INVALID_ARGUMENT, "bytes is 0", hvdc::mem_alloc(0));
  EXPECT_ERROR(HVD_ERR_INVALID_ARGUMENT, "more bytes than size_t",
               hvdc::SharedBuffer<double>(SIZE_MAX / 4));
  // More than any address space holds: the system refuses it.
  EXPECT_ERROR(HVD_ERR_OUT_OF_MEMORY, "bytes", hvdc::mem_alloc(std::size_t{1} << 60));
  int on_stack = 0;
  EXPECT_ERROR(HVD_ERR_INVALID_ARGUMENT, "not the start of a buffer", hvdc::mem_free(&on_stack));
  EXPECT_ERROR(HVD_ERR_INVALID_ARGUMENT, "in no buffer of hvd_mem_alloc",
               hvdc::mem_region(&on_stack));
  hvdc::SharedBuffer<int32_t> buffer(4);
  EXPECT_ERROR(HVD_ERR_INVALID_ARGUMENT, "not the start of a buffer", hvdc::mem_free(&buffer[1]));
  int32_t* start = buffer.data();
  buffer.free();
  EXPECT(buffer.empty());
  EXPECT_ERROR(HVD_ERR_INVALID_ARGUMENT, "in no buffer of hvd_mem_alloc", hvdc::mem_region(start));
}

void check_collectives(hvdc::SharedBuffer<int32_t>& survivor) {
  const int n = hvdc::size(), r = hvdc::rank();
  hvdc::SharedBuffer<float> sum(4096);
  std::fill(sum.begin(), sum.end(), static_cast<float>(r + 1));
  hvdc::allreduce(sum, hvdc::ReduceOp::Sum, {"cxx.shm.sum"});
  EXPECT_EQ(sum[4095], static_cast<float>(n * (n + 1) / 2));

  hvdc::SharedBuffer<double> in(300), out(300);
  std::fill(in.begin(), in.end(), static_cast<double>(r));
  hvdc::allreduce(in.data(), out.data(), in.size(), hvdc::ReduceOp::Average, {"cxx.shm.avg"});
  EXPECT_EQ(out[299], (n - 1) / 2.0);
  EXPECT_EQ(in[0], static_cast<double>(r));  // out of place leaves the input alone

  hvdc::SharedBuffer<int64_t> root_values(5);
  std::iota(root_values.begin(), root_values.end(), int64_t{10} * (r + 1));
  hvdc::broadcast(root_values, 1, {"cxx.shm.bcast"});
  EXPECT_EQ(root_values[4], int64_t{24});

  hvdc::SharedBuffer<int32_t> mine = hvdc::SharedBuffer<int32_t>::copy_of(&r, 1);
  hvdc::Handle gathered = hvdc::allgather_async(mine.tensor(), {"cxx.shm.gather"});
  gathered.wait();
  std::vector<int32_t> ranks(static_cast<std::size_t>(n));
  std::iota(ranks.begin(), ranks.end(), 0);
  EXPECT(gathered.output_vector<int32_t>() == ranks);

  // Made before init (main.cc); checked again after shutdown.
  std::fill(survivor.begin(), survivor.end(), r);
  hvdc::allreduce(survivor, hvdc::ReduceOp::Sum, {"cxx.shm.survivor"});
  EXPECT_EQ(survivor[0], n * (n - 1) / 2);
}

}  // namespace

void test_shared_memory(hvdc::SharedBuffer<int32_t>& survivor) {
  check_allocation_and_lookup();
  check_errors();
  check_collectives(survivor);
}

void test_shared_after_shutdown(hvdc::SharedBuffer<int32_t>& survivor, int size) {
  EXPECT(!hvdc::is_initialized());
  EXPECT_EQ(survivor.size(), 16u);
  EXPECT_EQ(survivor[15], size * (size - 1) / 2);  // the allreduce's result is still there
  survivor[15] = -5;
  EXPECT_EQ(survivor[15], -5);
  EXPECT(hvdc::mem_region(&survivor[15]).base == survivor.data());
  int32_t* start = survivor.data();
  survivor.free();
  EXPECT_ERROR(HVD_ERR_INVALID_ARGUMENT, "in no buffer of hvd_mem_alloc", hvdc::mem_region(start));
}

}  // namespace cxx_test
