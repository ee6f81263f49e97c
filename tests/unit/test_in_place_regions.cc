// The in-place allreduce among ranks of one host (ops/cpu/allreduce/in_place_local.cc) on
// hvd_mem_alloc regions taken many at a time or afresh op after op: what it keeps of the peers'
// mappings, of its own descriptions and of the views it opened stays bounded and correct, and a
// loop over many tensors in turn finds what it kept. Threads act as ranks over real UCX.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "hvdc.h"
#include "in_place_fixture.h"
#include "ops/cpu/allreduce/allreduce.h"
#include "ops/cpu/local/local_access.h"
#include "ucx_ranks.h"

namespace {

using hvdc::common::Status;
using hvdc::ops::cpu::allreduce_in_place_local;
using hvdc::ops::cpu::Comm;
using hvdc::ops::cpu::Pieces;
using hvdc::ops::cpu::ReduceSpec;
using hvdc::ops::cpu::local::LocalAccess;
using hvdc::ops::cpu::local::SetAccess;
using in_place_fixture::enable_local;
using in_place_fixture::Region;
using ucx_ranks::run_ranks;

// Op `op` of two ranks on 1024 floats of a region in place, checked: *problem names the first
// wrong element (or an op that did not run in place), unless it names an earlier one.
Status sum_region_in_place(Comm& comm, float* v, int op, std::string* problem) {
  for (int i = 0; i < 1024; ++i) v[i] = static_cast<float>(op + comm.index * 1000 + i);
  ReduceSpec spec;
  spec.dtype = HVD_FLOAT32;
  spec.op = HVD_OP_SUM;
  size_t done = 0;
  HVDC_RETURN_IF_ERROR(
      allreduce_in_place_local(comm, Pieces(v, 4096), Pieces(v, 4096), spec, &done));
  const bool ran = done == 4096;
  ++comm.seq;
  for (int i = 0; i < 1024 && problem->empty(); ++i) {
    const float want = static_cast<float>(2 * (op + i) + 1000);
    if (!ran || v[i] != want) {
      *problem = "op " + std::to_string(op) + " element " + std::to_string(i) + " is " +
                 std::to_string(v[i]) + ", want " + std::to_string(want);
    }
  }
  return Status::ok();
}

// Regions freed and allocated op after op: the peers' mappings stay bounded, by count and by
// bytes, and a new region at a reused address is mapped afresh (its data, not the old region's,
// is read).
class FreshRegions : public ::testing::TestWithParam<bool> {};

TEST_P(FreshRegions, EveryOpStaysCorrectAndBounded) {
  const bool by_bytes = GetParam();
  constexpr int kOps = 300;
  std::vector<std::string> problems(2);
  std::vector<size_t> bytes(2);
  run_ranks(2, [&](Comm& comm) {
    LocalAccess access;
    enable_local(comm, access);
    if (by_bytes) {
      access.mapped_bytes_max = 64 << 10;
    } else {
      access.mapped_regions_max = 256;
    }
    for (int op = 0; op < kOps; ++op) {
      Region region(4096);
      float* v = reinterpret_cast<float*>(region.base);
      HVDC_RETURN_IF_ERROR(sum_region_in_place(comm, v, op, &problems[comm.index]));
    }
    bytes[comm.index] = access.regions.unpinned_bytes();
    return Status::ok();
  });
  // Every unpinned mapping is one of those regions (4 KiB each; the boards are pinned): at most
  // the bound's worth and the last op's region.
  const size_t most = by_bytes ? (64 << 10) + 4096 : 257 * 4096;
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ("", problems[r]) << "rank " << r;
    EXPECT_LE(bytes[r], most) << "rank " << r;
    EXPECT_GE(bytes[r], size_t{4096}) << "rank " << r << ": the last op's region is not mapped";
  }
}

INSTANTIATE_TEST_SUITE_P(Bound, FreshRegions, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("Bytes") : std::string("Count");
                         });

// A loop over more regions than a member keeps descriptions of, each taken in turn (a model's
// parameters from hvd_mem_alloc, averaged one by one): once every region is mapped, no op maps
// or unmaps one again, however many there are below the bound (256 once made every op past 256
// map its region afresh).
TEST(InPlaceLocalRegions, ManyRegionsInTurnStayMapped) {
  constexpr int kRegions = 600;
  std::vector<std::string> problems(2);
  std::vector<uint64_t> generations(2);
  std::vector<size_t> remapped(2);
  run_ranks(2, [&](Comm& comm) {
    LocalAccess access;
    enable_local(comm, access);
    std::vector<std::unique_ptr<Region>> regions;
    for (int i = 0; i < kRegions; ++i) regions.push_back(std::make_unique<Region>(4096));
    size_t mapped_after_first = 0;
    for (int op = 0; op < 2 * kRegions; ++op) {
      if (op == kRegions) {
        generations[comm.index] = access.regions.generation();
        mapped_after_first = access.regions.mapped_count();
      }
      float* v = reinterpret_cast<float*>(regions[op % kRegions]->base);
      HVDC_RETURN_IF_ERROR(sum_region_in_place(comm, v, op, &problems[comm.index]));
    }
    generations[comm.index] = access.regions.generation() - generations[comm.index];
    remapped[comm.index] = access.regions.mapped_count() - mapped_after_first;
    return Status::ok();
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ("", problems[r]) << "rank " << r;
    EXPECT_EQ(0u, generations[r]) << "rank " << r << ": mappings went in the second pass";
    EXPECT_EQ(0u, remapped[r]) << "rank " << r << ": regions mapped in the second pass";
  }
}

// A set running op after op on the same regions reuses what its first op described and opened.
// The peers' mappings may still go meanwhile (trimmed, as another set's op does when many
// regions are mapped): the next op maps them again instead of writing through stale views.
TEST(InPlaceLocalRegions, KeptViewsAreOpenedAgainAfterTheMappingsAreTrimmed) {
  constexpr int kOps = 8;
  std::vector<std::string> problems(2);
  run_ranks(2, [&](Comm& comm) {
    LocalAccess access;
    enable_local(comm, access);
    Region region(4096);
    float* v = reinterpret_cast<float*>(region.base);
    for (int op = 0; op < kOps; ++op) {
      HVDC_RETURN_IF_ERROR(sum_region_in_place(comm, v, op, &problems[comm.index]));
      // Twice: the first marks every mapping unused, the second unmaps them.
      if (op % 3 == 2) {
        access.regions.trim(0);
        access.regions.trim(0);
      }
    }
    return Status::ok();
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ("", problems[r]) << "rank " << r;
}

// What the last of `passes` loops over `count` regions in turn (each op on one, in place) took
// slots for again on each rank: its own descriptions, and views of the peers' buffers. Each take
// is a lookup that found nothing kept.
struct Retaken {
  uint64_t descriptions = 0;
  uint64_t views = 0;
};

std::vector<Retaken> loop_in_turn(int count, int passes, std::vector<std::string>* problems) {
  std::vector<Retaken> retaken(2);
  run_ranks(2, [&](Comm& comm) {
    LocalAccess access;
    enable_local(comm, access);
    std::vector<std::unique_ptr<Region>> regions;
    for (int i = 0; i < count; ++i) regions.push_back(std::make_unique<Region>(4096));
    Retaken& mine = retaken[comm.index];
    for (int pass = 0, op = 0; pass < passes; ++pass) {
      if (pass == passes - 1) {  // the set exists from the first op on
        const SetAccess& set = access.sets[comm.members];
        mine = {set.description_slots.takes(), set.opened_slots.takes()};
      }
      for (int i = 0; i < count; ++i, ++op) {
        float* v = reinterpret_cast<float*>(regions[i]->base);
        HVDC_RETURN_IF_ERROR(sum_region_in_place(comm, v, op, &(*problems)[comm.index]));
      }
    }
    const SetAccess& set = access.sets[comm.members];
    mine = {set.description_slots.takes() - mine.descriptions,
            set.opened_slots.takes() - mine.views};
    return Status::ok();
  });
  return retaken;
}

// A loop over more tensors in turn than 64 (what was kept before) but fewer than are kept now
// finds every one's description and views in its second pass: no slot is taken again (but for
// the first op's views, below).
TEST(InPlaceLocalRegions, ALoopOverHundredsOfTensorsFindsWhatItKept) {
  std::vector<std::string> problems(2);
  const std::vector<Retaken> retaken = loop_in_turn(300, 2, &problems);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ("", problems[r]) << "rank " << r;
    EXPECT_EQ(0u, retaken[r].descriptions) << "rank " << r << ": descriptions made again";
    // The set's first op opens its views before the board is there, outside what is kept:
    // the second pass keeps them, the first tensor's included.
    EXPECT_EQ(1u, retaken[r].views) << "rank " << r << ": views opened again";
  }
}

// A loop over more tensors in turn than are kept keeps all but one of them: each pass after
// the first takes a slot again only for the others (common/replacement.h), where least
// recently used alone took one for every op.
TEST(InPlaceLocalRegions, ALoopOverMoreTensorsThanAreKeptFindsAllButOne) {
  constexpr int kKept = hvdc::ops::cpu::local::kKeptDescriptions;
  constexpr int kRegions = kKept + 88;
  std::vector<std::string> problems(2);
  const std::vector<Retaken> retaken = loop_in_turn(kRegions, 3, &problems);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ("", problems[r]) << "rank " << r;
    EXPECT_EQ(uint64_t{kRegions - (kKept - 1)}, retaken[r].descriptions) << "rank " << r;
    EXPECT_EQ(uint64_t{kRegions - (kKept - 1)}, retaken[r].views) << "rank " << r;
  }
}

// A peer that gives one tensor a new buffer every op (here rank 1, while rank 0 keeps its
// own): rank 0's views of it never hold again, and only a few of them stay kept.
TEST(InPlaceLocalRegions, APeerWithANewBufferEveryOpLeavesFewDeadViews) {
  constexpr int kOps = 40;
  std::vector<std::string> problems(2);
  std::vector<int> opened(2);
  run_ranks(2, [&](Comm& comm) {
    LocalAccess access;
    enable_local(comm, access);
    Region mine(4096);
    for (int op = 0; op < kOps; ++op) {
      Region fresh(4096);
      char* base = comm.index == 0 ? mine.base : fresh.base;
      HVDC_RETURN_IF_ERROR(
          sum_region_in_place(comm, reinterpret_cast<float*>(base), op, &problems[comm.index]));
    }
    opened[comm.index] = access.sets[comm.members].opened_slots.in_use();
    return Status::ok();
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ("", problems[r]) << "rank " << r;
  EXPECT_LE(opened[0], 5) << "rank 0 kept a view for each of rank 1's buffers";
}

}  // namespace
