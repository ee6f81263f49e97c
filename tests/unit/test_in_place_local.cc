// The in-place allreduce among ranks of one host (ops/cpu/allreduce/in_place_local.cc) on threads
// acting as ranks over real UCX: every dtype and op, odd sizes, misaligned and fused buffers,
// hvd_mem_alloc regions (mapped) beside heap buffers (read through process_vm_readv), and the
// agreed fallback when a rank refuses.
//
// Expectations come from allreduce_ordered, an independent algorithm that reduces in the same
// member order over the transport: the two must agree bit for bit on arbitrary bytes (NaNs,
// infinities, wrapping integers included).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "common/dtype.h"
#include "common/log.h"
#include "hvdc.h"
#include "in_place_fixture.h"
#include "kernel_reference.h"
#include "memory/shared_regions.h"
#include "ops/cpu/allreduce/allreduce.h"
#include "ops/cpu/local/local_access.h"
#include "ops/cpu/local/peer_view.h"
#include "ucx_ranks.h"

namespace {

using hvdc::common::make_error;
using hvdc::common::Status;
using hvdc::ops::cpu::allreduce;
using hvdc::ops::cpu::allreduce_in_place_local;
using hvdc::ops::cpu::allreduce_ordered;
using hvdc::ops::cpu::Comm;
using hvdc::ops::cpu::Piece;
using hvdc::ops::cpu::Pieces;
using hvdc::ops::cpu::ReduceSpec;
using hvdc::ops::cpu::local::LocalAccess;
using hvdc::ops::cpu::local::SetAccess;
using hvdc::ops::cpu::local::Verdict;
using in_place_fixture::enable_local;
using in_place_fixture::Region;
using ucx_ranks::Bytes;
using ucx_ranks::run_ranks;

// Where a case's buffer lives.
enum class Layout {
  kHeap,        // one heap buffer: read through the kernel
  kMisaligned,  // a heap buffer one element past an aligned address (an element's alignment is
                // the API's rule; vector widths and cache lines are not)
  kRegion,      // an hvd_mem_alloc region on every rank: mapped, no kernel read
  kOddRanks,    // regions on even ranks, heap on odd ones: both ways in one op
  kFused,       // three pieces of unequal size: region, heap, region one element further on
};
const Layout kLayouts[] = {Layout::kHeap, Layout::kMisaligned, Layout::kRegion, Layout::kOddRanks,
                           Layout::kFused};

// A rank's shared region, freed when the rank's body ends.
// Deterministic arbitrary bytes, different on every rank and case. Floating values get an
// exponent below the top one: no NaN, whose payload may come from either operand (reduce.h).
Bytes input_bytes(int32_t dtype, int rank, uint64_t seed, size_t bytes) {
  Bytes out(bytes);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(rank) * 0xD1B54A32D192ED03ull;
  for (size_t i = 0; i < bytes; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    out[i] = static_cast<uint8_t>(x >> 56);
  }
  const size_t esize = hvdc::common::dtype_size(dtype);
  const bool floating =
      dtype == HVD_FLOAT16 || dtype == HVD_BFLOAT16 || dtype == HVD_FLOAT32 || dtype == HVD_FLOAT64;
  // The byte holding the sign and the exponent's top bits (little-endian): clear the top one.
  for (size_t i = esize - 1; floating && i < bytes; i += esize) out[i] &= 0xBF;
  return out;
}

// Cuts `total` bytes of `area` and `heap` into the pieces of a layout, filled from `input`.
std::vector<Piece> place(Layout layout, int rank, const Bytes& input, char* region, Bytes& heap,
                         size_t esize) {
  const size_t total = input.size();
  heap.assign(total + 64, 0);
  std::vector<Piece> pieces;
  switch (layout) {
    case Layout::kHeap:
      pieces = {{reinterpret_cast<char*>(heap.data()), total}};
      break;
    case Layout::kMisaligned:
      pieces = {{reinterpret_cast<char*>(heap.data()) + esize, total}};
      break;
    case Layout::kRegion:
      pieces = {{region, total}};
      break;
    case Layout::kOddRanks:
      pieces = {{rank % 2 == 0 ? region : reinterpret_cast<char*>(heap.data()), total}};
      break;
    case Layout::kFused: {
      const size_t count = total / esize;
      const size_t a = count / 3 * esize, b = count / 5 * esize;
      pieces = {
          {region, a}, {reinterpret_cast<char*>(heap.data()) + 8, b}, {region + a + esize, 0}};
      pieces[2].bytes = total - a - b;
      break;
    }
  }
  size_t at = 0;
  for (const Piece& p : pieces) {
    std::memcpy(p.data, input.data() + at, p.bytes);
    at += p.bytes;
  }
  return pieces;
}

// Where the results go.
enum class Output {
  kInPlace,     // into the input
  kSeparate,    // into a second buffer of the same layout: the input must stay unchanged
  kSeparateOdd  // separate on odd ranks, in place on even ones
};

struct Case {
  int32_t dtype;
  int32_t op;
  size_t count;
  Layout layout;
  Output output;
};

std::vector<Case> all_cases(int n) {
  std::vector<Case> cases;
  for (int32_t dtype : kernel_test::kAllDtypes) {
    for (int32_t op : kernel_test::kAllOps) {
      for (size_t count : {size_t{1}, static_cast<size_t>(n + 1), size_t{4099}}) {
        for (Layout layout : kLayouts) {
          for (Output output : {Output::kInPlace, Output::kSeparate, Output::kSeparateOdd}) {
            cases.push_back({dtype, op, count, layout, output});
          }
        }
      }
    }
  }
  return cases;
}

std::string describe(const Case& c) {
  return std::string(hvdc::common::dtype_name(c.dtype)) + " " + hvdc::common::reduce_op_name(c.op) +
         " x" + std::to_string(c.count) + " layout " + std::to_string(static_cast<int>(c.layout)) +
         " output " + std::to_string(static_cast<int>(c.output));
}

// Runs one case through the in-place path and through allreduce_ordered; "" if they agree, the
// in-place path ran and a separate input is unchanged, else what went wrong. The region holds
// the input at 0 and a separate output at kOutputAt.
constexpr size_t kOutputAt = 64 << 10;
Status run_case(Comm& comm, const Case& c, char* region, uint64_t seed, std::string* problem) {
  const size_t esize = hvdc::common::dtype_size(c.dtype);
  const Bytes input = input_bytes(c.dtype, comm.index, seed, c.count * esize);
  ReduceSpec spec;
  spec.dtype = c.dtype;
  spec.op = c.op;
  spec.divisor = c.op == HVD_OP_AVERAGE ? comm.size() : 1;
  Bytes heap_in, heap_out;
  const Pieces in(place(c.layout, comm.index, input, region, heap_in, esize));
  const bool separate =
      c.output == Output::kSeparate || (c.output == Output::kSeparateOdd && comm.index % 2 == 1);
  const Pieces out_view(separate ? place(c.layout, comm.index, Bytes(input.size()),
                                         region + kOutputAt, heap_out, esize)
                                 : std::vector<Piece>{});
  const Pieces& out = separate ? out_view : in;
  size_t done = 0;
  HVDC_RETURN_IF_ERROR(allreduce_in_place_local(comm, in, out, spec, &done));
  const bool ran = done == out.bytes();
  ++comm.seq;
  Bytes want = input;
  HVDC_RETURN_IF_ERROR(allreduce_ordered(comm, Pieces(want.data(), want.size()), spec));
  ++comm.seq;
  Bytes got(want.size()), kept(input.size());
  out.gather(0, got.size(), reinterpret_cast<char*>(got.data()));
  in.gather(0, kept.size(), reinterpret_cast<char*>(kept.data()));
  const std::string diff = ucx_ranks::first_difference(got, want);
  if (!ran) *problem = describe(c) + ": the in-place path did not run";
  if (!diff.empty()) *problem = describe(c) + ": " + diff;
  if (separate && kept != input) *problem = describe(c) + ": the separate input changed";
  return Status::ok();
}

// Ranks, and the window length (LocalAccess::window_bytes): the default runs every case as one
// window; a page cuts the cases of 4099 elements into windows (in_place_local.cc).
class InPlaceLocal : public ::testing::TestWithParam<std::tuple<int, size_t>> {};

TEST_P(InPlaceLocal, AgreesWithTheOrderedAlgorithmBitForBit) {
  const int n = std::get<0>(GetParam());
  const size_t window = std::get<1>(GetParam());
  const bool windows = window < 4099;
  const std::vector<Case> cases = all_cases(n);
  std::vector<std::vector<std::string>> problems(n);
  std::vector<size_t> mapped(n);
  std::vector<int> staged(n);  // whether the rank ever staged (its stage is then mapped too)
  run_ranks(n, [&](Comm& comm) {
    LocalAccess access;
    enable_local(comm, access);
    access.window_bytes = window;
    Region region(2 * kOutputAt);
    for (size_t i = 0; i < cases.size(); ++i) {
      std::string problem;
      // Every other case streams its results out of place (where all buffers are mapped).
      access.stream_min_bytes = i % 2 == 0 ? 0 : SIZE_MAX;
      // Every fourth case reduces mapped segments in blocks of 1000 bytes, the last one short;
      // the others in one block per segment.
      access.block_bytes = i % 4 == 1 ? 1000 : 16 << 10;
      // The cases come in threes, one per kind of output (all_cases); the settings below hold
      // for whole threes, so that each meets every kind.
      const size_t three = i / 3;
      // Every third three, half the ranks stage their heap buffers: staged views meet others.
      // With windows, half the ranks stage in every three, so that every op after the first has
      // a staging member and the cases of 4099 elements run window by window.
      const bool stages = windows ? (three + comm.index) % 2 == 0
                                  : three % 3 == 0 && (three / 3 + comm.index) % 2 == 0;
      access.stage_max_bytes = stages ? 4 * kOutputAt : 0;
      // A third of the fives of threes (every layout, kLayouts) count every output as cold: out
      // of place, this rank writes its own output through non-temporal stores (copied out of
      // its stage, reduced in blocks, or reduced beside the kernel's writes); the others count
      // none as cold.
      access.reuse.set_cold_bytes(three / 5 % 3 == 1 ? 0 : SIZE_MAX);
      HVDC_RETURN_IF_ERROR(run_case(comm, cases[i], region.base, i, &problem));
      if (!problem.empty()) problems[comm.index].push_back(problem);
    }
    mapped[comm.index] = access.regions.mapped_count();
    staged[comm.index] = access.stage != nullptr;
    const SetAccess& set = access.sets[comm.members];
    EXPECT_EQ(Verdict::kAllowed, set.cma);
    EXPECT_EQ(Verdict::kAllowed, set.mapping);
    // After the first op, every op (every window) exchanged its notices on the boards.
    EXPECT_TRUE(set.board && set.board->ready);
    if (set.board && !windows) {
      EXPECT_EQ(cases.size() - 1, set.board->ops());
    }
    if (set.board && windows) {
      EXPECT_GT(set.board->ops(), cases.size() - 1);
    }
    return Status::ok();
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(problems[r].empty())
        << "rank " << r << ": " << problems[r].size() << " cases failed, first: " << problems[r][0];
    // One region and one board per peer, and each peer's stage where it staged, mapped once for
    // all the cases; with windows a stage grows when an op is staged whole (the first op of a
    // staging run), and is mapped again.
    const int peers_staged = std::accumulate(staged.begin(), staged.end(), 0) - staged[r];
    const size_t once = 2 * (n - 1) + peers_staged;
    if (windows) {
      EXPECT_LE(once, mapped[r]) << "rank " << r;
    } else {
      EXPECT_EQ(once, mapped[r]) << "rank " << r;
    }
    EXPECT_TRUE(staged[r]) << "rank " << r << " never staged";
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, InPlaceLocal,
                         ::testing::Combine(::testing::Values(2, 3, 4),
                                            ::testing::Values(LocalAccess().window_bytes,
                                                              size_t{4096})),
                         [](const ::testing::TestParamInfo<std::tuple<int, size_t>>& info) {
                           const bool windows = std::get<1>(info.param) < 4099;
                           return "n" + std::to_string(std::get<0>(info.param)) +
                                  (windows ? "_windows" : "");
                         });

// A stage that cannot be mapped (here: too large to ask for) costs nothing but the staging: the
// op reads the heap buffers through the kernel instead, with the same results, and later ops
// do not try again.
TEST(InPlaceLocalStage, UnmappableStageFallsBackToKernelReads) {
  std::vector<std::string> problems(2);
  run_ranks(2, [&](Comm& comm) {
    LocalAccess access;
    enable_local(comm, access);
    access.stage_max_bytes = SIZE_MAX;
    access.window_bytes = SIZE_MAX / 2;  // the stage is a window long
    for (int op = 0; op < 2; ++op) {
      Bytes heap(4096 * sizeof(float));
      float* v = reinterpret_cast<float*>(heap.data());
      for (int i = 0; i < 4096; ++i) v[i] = static_cast<float>(comm.index + i);
      ReduceSpec spec;
      spec.dtype = HVD_FLOAT32;
      spec.op = HVD_OP_SUM;
      size_t done = 0;
      HVDC_RETURN_IF_ERROR(allreduce_in_place_local(comm, Pieces(v, heap.size()),
                                                    Pieces(v, heap.size()), spec, &done));
      const bool ran = done == heap.size();
      ++comm.seq;
      for (int i = 0; i < 4096 && problems[comm.index].empty(); ++i) {
        if (!ran || v[i] != static_cast<float>(2 * i + 1)) {
          problems[comm.index] = "op " + std::to_string(op) + " element " + std::to_string(i);
        }
      }
    }
    EXPECT_EQ(0u, access.stage_max_bytes);
    EXPECT_EQ(nullptr, access.stage);
    EXPECT_EQ(Verdict::kAllowed, access.sets[comm.members].cma);
    return Status::ok();
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ("", problems[r]) << "rank " << r;
}

// Log lines of the fallback, counted across the thread-ranks.
std::atomic<int> g_fallback_lines{0};
void count_fallback(void*, int32_t, const char* message) {
  if (std::strstr(message, "instead of reading each other's memory in place") != nullptr) {
    ++g_fallback_lines;
  }
}

// One rank refuses (HVDC_PEER_READS=0): every rank sees it at the first op, falls back to the
// transport for this and every later op with correct results, and each says so once.
TEST(InPlaceLocalFallback, OneRefusingRankMakesEveryRankFallBackAndLogOnce) {
  constexpr int kRanks = 3;
  g_fallback_lines = 0;
  hvdc::common::set_log_callback(count_fallback, nullptr);
  std::vector<std::string> problems(kRanks);
  run_ranks(kRanks, [&](Comm& comm) {
    LocalAccess access;
    enable_local(comm, access);
    access.reads_allowed = comm.index != 1;
    Region region(8192);
    for (int op = 0; op < 4; ++op) {
      // Heap buffers, then regions: both kinds of access are refused.
      Bytes heap(8192);
      float* v = op % 2 == 0 ? reinterpret_cast<float*>(heap.data())
                             : reinterpret_cast<float*>(region.base);
      for (int i = 0; i < 2048; ++i) v[i] = static_cast<float>(comm.index + i);
      ReduceSpec spec;
      spec.dtype = HVD_FLOAT32;
      spec.op = HVD_OP_SUM;
      HVDC_RETURN_IF_ERROR(allreduce(comm, Pieces(v, 8192), spec));
      comm.seq += 1;
      for (int i = 0; i < 2048 && problems[comm.index].empty(); ++i) {
        if (v[i] != static_cast<float>(3 * i + 3)) {
          problems[comm.index] = "op " + std::to_string(op) + " element " + std::to_string(i);
        }
      }
    }
    EXPECT_EQ(Verdict::kRefused, access.sets[comm.members].cma) << "rank " << comm.index;
    EXPECT_EQ(Verdict::kRefused, access.sets[comm.members].mapping) << "rank " << comm.index;
    return Status::ok();
  });
  hvdc::common::set_log_callback(nullptr, nullptr);
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ("", problems[r]) << "rank " << r;
  EXPECT_EQ(kRanks, g_fallback_lines.load());
}

}  // namespace

namespace {

using hvdc::ops::cpu::local::PeerView;
using hvdc::ops::cpu::local::PieceDesc;

pid_t exited_child() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return child;
}

// A view of 64 bytes of a process that has exited, as global rank `rank`.
void open_exited_view(int rank, hvdc::memory::PeerRegions& regions, PeerView* view) {
  static char remote[64];
  PieceDesc piece;
  piece.addr = reinterpret_cast<uintptr_t>(remote);
  piece.bytes = sizeof remote;
  ASSERT_TRUE(view->open(exited_child(), rank, {piece}, regions).is_ok());
}

// A peer that is gone fails a read as a peer failure naming its rank: fatal, as a lost
// connection is, so that every rank's work ends instead of some waiting for it.
TEST(PeerViewErrors, ReadingAProcessThatExitedIsAPeerFailure) {
  hvdc::memory::PeerRegions regions;
  PeerView view;
  ASSERT_NO_FATAL_FAILURE(open_exited_view(7, regions, &view));
  char got[64];
  const Status st = view.read(0, sizeof got, got);
  EXPECT_EQ(HVD_ERR_PEER_FAILURE, st.code()) << st.message();
  EXPECT_NE(std::string::npos, st.message().find("rank 7")) << st.message();
}

// Writing to a peer that is gone is a peer failure too, and the message says it was a write.
TEST(PeerViewErrors, WritingAProcessThatExitedIsAPeerFailure) {
  hvdc::memory::PeerRegions regions;
  PeerView view;
  ASSERT_NO_FATAL_FAILURE(open_exited_view(5, regions, &view));
  const char data[64] = {1};
  const Status st = view.write(0, sizeof data, data, false);
  EXPECT_EQ(HVD_ERR_PEER_FAILURE, st.code()) << st.message();
  EXPECT_NE(std::string::npos, st.message().find("rank 5")) << st.message();
  EXPECT_NE(std::string::npos, st.message().find("written")) << st.message();
}

// A write that spans pieces lands in each: the heap piece through process_vm_writev, the region
// piece through the mapping, and nothing outside the span changes. The probe leaves the byte
// it writes back as it was.
TEST(PeerViewWrites, AWriteAcrossAHeapAndARegionPieceLandsInBoth) {
  std::vector<char> heap(100, 'h');
  Region region(4096);
  std::memset(region.base, 'r', 4096);
  const Pieces pieces({{heap.data(), heap.size()}, {region.base + 8, 200}});
  const hvdc::ops::cpu::local::BufferDesc desc = hvdc::ops::cpu::local::describe(pieces, pieces);
  hvdc::memory::PeerRegions regions;
  PeerView view;
  ASSERT_TRUE(view.open(getpid(), 0, desc.outputs, regions).is_ok());
  ASSERT_TRUE(view.needs_cma());
  ASSERT_TRUE(view.probe_cma(true).is_ok());
  EXPECT_EQ('h', heap[0]);
  std::string data(150, 'w');
  ASSERT_TRUE(view.write(40, data.size(), data.data(), true).is_ok());
  EXPECT_EQ(std::string(40, 'h') + std::string(60, 'w'), std::string(heap.begin(), heap.end()));
  EXPECT_EQ(std::string(8, 'r') + std::string(90, 'w') + std::string(110, 'r') + "rr",
            std::string(region.base, 210));
}

// A region that cannot be mapped names the /proc path and the system's reason.
TEST(PeerViewErrors, AnUnmappableRegionNamesThePath) {
  PieceDesc piece;
  piece.bytes = 4096;
  piece.region.id = 1;
  piece.region.fd = 1 << 20;  // no such descriptor
  piece.region.mapped_bytes = 4096;
  hvdc::memory::PeerRegions regions;
  PeerView view;
  const Status st = view.open(getpid(), 0, {piece}, regions);
  EXPECT_EQ(HVD_ERR_SYSTEM, st.code()) << st.message();
  EXPECT_NE(std::string::npos, st.message().find("/fd/1048576")) << st.message();
  EXPECT_EQ(0u, regions.mapped_count());
}

}  // namespace
