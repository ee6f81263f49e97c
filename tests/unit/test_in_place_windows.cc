// The windows of the in-place allreduce among ranks of one host (in_place_local.cc): an op above
// LocalAccess::window_bytes runs window after window where some member stages it and some member
// staged in the set's last op; a window the members may not read goes to the transport together
// with the rest of the op. Threads act as ranks over real UCX; the board's op count tells how
// many windows ran.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "hvdc.h"
#include "memory/shared_regions.h"
#include "ops/cpu/allreduce/allreduce.h"
#include "ops/cpu/local/local_access.h"
#include "ucx_ranks.h"

namespace {

using hvdc::common::Status;
using hvdc::ops::cpu::allreduce;
using hvdc::ops::cpu::Comm;
using hvdc::ops::cpu::Piece;
using hvdc::ops::cpu::Pieces;
using hvdc::ops::cpu::ReduceSpec;
using hvdc::ops::cpu::local::LocalAccess;
using hvdc::ops::cpu::local::SetAccess;
using hvdc::ops::cpu::local::Verdict;
using ucx_ranks::run_ranks;

constexpr size_t kWindowBytes = 16 << 10;
constexpr size_t kOpBytes = 4 * kWindowBytes;
constexpr size_t kFloats = kOpBytes / sizeof(float);
constexpr int kOps = 3;

// Where one rank's buffer of kOpBytes lives: its first and second half in an hvd_mem_alloc region
// (mapped by the peers) or on the heap (staged, or read through the kernel).
struct Placement {
  bool first_in_region;
  bool second_in_region;
  bool stages;  // this rank copies heap buffers through its stage
};

// The rank's buffer, as the two halves the placement says; `region` and `heap` hold them.
Pieces place(const Placement& p, char* region, std::vector<char>& heap) {
  heap.assign(kOpBytes, 0);
  const size_t half = kOpBytes / 2;
  char* first = p.first_in_region ? region : heap.data();
  char* second = p.second_in_region ? region + half : heap.data() + half;
  return Pieces(std::vector<Piece>{{first, half}, {second, half}});
}

// Called before each op with the op's number and the rank's LocalAccess.
using BeforeOp = std::function<void(int op, LocalAccess& access)>;

// One float sum in place over the ranks.
Status sum_in_place(Comm& comm, const Pieces& buf) {
  ReduceSpec spec;
  spec.dtype = HVD_FLOAT32;
  spec.op = HVD_OP_SUM;
  HVDC_RETURN_IF_ERROR(allreduce(comm, buf, spec));
  ++comm.seq;
  return Status::ok();
}

// kOps float sums in place on the buffer; *problem names the first wrong element.
Status sum_ops(Comm& comm, LocalAccess& access, const Pieces& buf, const BeforeOp& before,
               std::string* problem) {
  for (int op = 0; op < kOps; ++op) {
    before(op, access);
    std::vector<float> mine(kFloats);
    for (size_t i = 0; i < kFloats; ++i) mine[i] = static_cast<float>(op + comm.index + i % 1000);
    buf.scatter(0, kOpBytes, reinterpret_cast<const char*>(mine.data()));
    HVDC_RETURN_IF_ERROR(sum_in_place(comm, buf));
    std::vector<float> got(kFloats);
    buf.gather(0, kOpBytes, reinterpret_cast<char*>(got.data()));
    for (size_t i = 0; i < kFloats && problem->empty(); ++i) {
      const float want = static_cast<float>(2 * op + 1 + 2 * (i % 1000));
      if (got[i] != want) {
        *problem = "op " + std::to_string(op) + " element " + std::to_string(i) + " is " +
                   std::to_string(got[i]) + ", want " + std::to_string(want);
      }
    }
  }
  return Status::ok();
}

// Runs kOps ops on two ranks placed as given (refuse_cma: the set's kernel reads are refused
// before the first op) and returns the ops each rank's board ran; *problems by rank.
std::vector<uint64_t> run_placed(const Placement (&placed)[2], bool refuse_cma,
                                 const BeforeOp& before, std::vector<std::string>* problems) {
  std::vector<uint64_t> board_ops(2);
  problems->assign(2, "");
  run_ranks(2, [&](Comm& comm) {
    LocalAccess access;
    access.min_bytes = 0;
    access.window_bytes = kWindowBytes;
    access.stage_max_bytes = placed[comm.index].stages ? kOpBytes : 0;
    comm.local = &access;
    if (refuse_cma) access.sets[comm.members].cma = Verdict::kRefused;
    void* region = nullptr;
    HVDC_RETURN_IF_ERROR(hvdc::memory::allocate_region(kOpBytes, &region));
    std::vector<char> heap;
    const Pieces buf = place(placed[comm.index], static_cast<char*>(region), heap);
    Status st = sum_ops(comm, access, buf, before, &(*problems)[comm.index]);
    const SetAccess& set = access.sets[comm.members];
    board_ops[comm.index] = set.board ? set.board->ops() : 0;
    Status freed = hvdc::memory::free_region(region);
    return st.is_ok() ? freed : st;
  });
  return board_ops;
}

// The first op runs whole (the set has no last op) and through the transport (the boards are
// not known yet); each later op runs windows_per_op windows over the boards.
void expect_windows(const Placement (&placed)[2], uint64_t windows_per_op) {
  std::vector<std::string> problems;
  const std::vector<uint64_t> ops = run_placed(
      placed, false, [](int, LocalAccess&) {}, &problems);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ("", problems[r]) << "rank " << r;
    EXPECT_EQ((kOps - 1) * windows_per_op, ops[r]) << "rank " << r;
  }
}

TEST(InPlaceLocalWindows, HeapBuffersStagedRunWindowByWindow) {
  const Placement heap_staged = {false, false, true};
  expect_windows({heap_staged, heap_staged}, kOpBytes / kWindowBytes);
}

TEST(InPlaceLocalWindows, OneStagingMemberIsEnoughForWindows) {
  const Placement region = {true, true, true}, heap_staged = {false, false, true};
  expect_windows({region, heap_staged}, kOpBytes / kWindowBytes);
}

TEST(InPlaceLocalWindows, MappedBuffersRunWhole) {
  const Placement region = {true, true, true};
  expect_windows({region, region}, 1);
}

TEST(InPlaceLocalWindows, KernelReadsRunWhole) {
  const Placement heap_unstaged = {false, false, false};
  expect_windows({heap_unstaged, heap_unstaged}, 1);
}

// A stage shorter than a window stages small ops whole but cuts no windows: an op above the
// window after them runs whole (through the kernel), not as windows read through the kernel.
TEST(InPlaceLocalWindows, AStageShorterThanAWindowCutsNoWindows) {
  std::vector<std::string> problems(2);
  std::vector<uint64_t> board_ops(2);
  run_ranks(2, [&](Comm& comm) {
    LocalAccess access;
    access.min_bytes = 0;
    access.window_bytes = kWindowBytes;
    access.stage_max_bytes = kWindowBytes / 2;
    comm.local = &access;
    std::vector<char> heap;
    // Two ops staged whole (the first through the transport), then one of four windows' length.
    for (size_t bytes : {kWindowBytes / 2, kWindowBytes / 2, kOpBytes}) {
      heap.assign(bytes, 0);
      const Pieces buf(heap.data(), bytes);
      std::vector<float> mine(bytes / sizeof(float), static_cast<float>(comm.index + 1));
      buf.scatter(0, bytes, reinterpret_cast<const char*>(mine.data()));
      HVDC_RETURN_IF_ERROR(sum_in_place(comm, buf));
      const float* got = reinterpret_cast<const float*>(heap.data());
      for (size_t i = 0; i < bytes / sizeof(float) && problems[comm.index].empty(); ++i) {
        if (got[i] != 3.0f) problems[comm.index] = "element " + std::to_string(i) + " of an op";
      }
    }
    const SetAccess& set = access.sets[comm.members];
    board_ops[comm.index] = set.board ? set.board->ops() : 0;
    return Status::ok();
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ("", problems[r]) << "rank " << r;
    EXPECT_EQ(2u, board_ops[r]) << "rank " << r;
  }
}

// After a staged op, an op no member stages (staging turned off here, as when a stage cannot be
// mapped) runs its first window, then the rest as one. With kernel reads refused, the first
// window (in the regions) is reduced in place and the rest (heap) goes through the transport,
// with right results.
TEST(InPlaceLocalWindows, AWindowThatMayNotBeReadGoesToTheTransportWithTheRest) {
  const Placement half = {true, false, true};
  std::vector<std::string> problems;
  const std::vector<uint64_t> ops = run_placed(
      {half, half}, true,
      [](int op, LocalAccess& access) {
        if (op == 1) access.stage_max_bytes = 0;
      },
      &problems);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ("", problems[r]) << "rank " << r;
    // The first op whole through the transport; the second its first window and the rest
    // turned away, on the boards; the third whole (no member staged in the second), turned away.
    EXPECT_EQ(3u, ops[r]) << "rank " << r;
  }
}

}  // namespace
