// What the in-place path between ranks of one host keeps from op to op: the peers' mapped
// regions, which member sets found that they may read each other's memory (and how), and the
// switches. One per host backend; engine thread only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/lru_slots.h"
#include "memory/peer_regions.h"
#include "ops/cpu/local/board.h"
#include "ops/cpu/local/output_reuse.h"
#include "ops/cpu/local/peer_view.h"
#include "ops/cpu/pieces.h"
#include "ops/cpu/segments.h"

namespace hvdc::ops::cpu::local {

enum class Verdict { kUnknown, kAllowed, kRefused };

// This member's description of its buffers for an op (buffer_desc.h), encoded.
struct OwnDescription {
  Pieces in, out;        // the views it names
  uint64_t regions = 0;  // memory::regions_generation() when described
  bool staging = false;  // what it says of staging (buffer_desc.h)
  std::string encoded;
};

// Views of the peers' buffers, opened from every member's description.
struct OpenedViews {
  std::vector<std::string> descriptions;  // by member, this member's own included
  Pieces layout;                          // the output they were checked against
  std::vector<PeerViews> views;           // by member
  bool need_cma = false;
  uint64_t mappings = ~uint64_t{0};  // LocalAccess::regions.generation() when opened
};

struct SetAccess {
  Verdict cma = Verdict::kUnknown;      // process_vm_readv of user buffers
  Verdict mapping = Verdict::kUnknown;  // mapping hvd_mem_alloc regions
  // The members' notices in shared memory (board.h), once created; none where that failed.
  std::unique_ptr<Board> board;
  bool board_failed = false;
  // The set's first allreduce went in place whatever its size: it opens the board, on which the
  // lane (core/lane/lane.h) agrees on the small ops that come after it.
  bool first_op_done = false;
  // A set runs the same buffers op after op, or a few in turn: this member's descriptions of
  // the last ones, and the views opened from the members' descriptions, are reused while they
  // still hold, up to kKeptDescriptions of each (in_place_views.cc), each entry found by a hash
  // of its buffers in the slots of the same index.
  std::vector<OwnDescription> descriptions;
  common::LruSlots description_slots{kKeptDescriptions};
  std::vector<OpenedViews> opened;
  common::LruSlots opened_slots{kKeptDescriptions};
  // Whether some member copied windows through its stage in the set's last op here (read from
  // every member's description, so the same on each): the next op is cut into windows from its
  // start only then, so that sets on hvd_mem_alloc buffers pay for no windows (in_place_local.cc).
  bool last_op_staging = false;
};

struct LocalAccess {
  // HVDC_PEER_READS=0 makes this rank refuse: every set it is in falls back to the transport.
  bool reads_allowed = true;
  // Allreduces from this size on read local peers in place (HVDC_LOCAL_MIN_BYTES), and those
  // agreed on the lane at any size (Comm::lane).
  size_t min_bytes = 16 << 10;
  // HVDC_LANE: a set's first allreduce goes in place whatever its size, to open the board the
  // lane agrees on (the same on every rank, as init checks).
  bool lane = true;
  memory::PeerRegions regions;
  // The peers' regions stay mapped between ops while at most this many, of at most this many
  // bytes, are (memory::PeerRegions::trim): room for the buffers of a model of thousands of
  // tensors taken in turn, where 256 once made every op map its regions again past 256. The
  // bytes bound those of regions the peers freed, which a mapping keeps until it goes; the
  // peers' live regions fit in it unless they take more than half the machine's memory.
  size_t mapped_regions_max = 4096;
  size_t mapped_bytes_max = std::max<size_t>(memory::physical_bytes() / 2, size_t{1} << 30);
  std::map<std::vector<int>, SetAccess> sets;  // by member ranks
  bool fallback_logged = false;
  std::vector<char> bounce;           // a segment per member, for reads through the kernel
  std::vector<char> sum;              // a segment's result out of place, streamed to every output
  std::vector<char*> mapped_outputs;  // each peer's output of a segment, mapped here
  // One op's segments of this member's chunk, and where each member's part of a segment is
  // read; kept, so that a warm op allocates neither.
  std::vector<Segment> segments;
  std::vector<const char*> sources;
  // Where every output is mapped, a segment is reduced and copied to the peers' outputs a block
  // of this many bytes at a time: half a first-level data cache (32 KiB on the x86 and Arm
  // cores this runs on), so that the copies read the sum from it.
  size_t block_bytes = 16 << 10;
  // Two members in place reduce mapped segments in one pass storing to both buffers up to this op
  // size: 1.1-1.5x the blocks at 256 KiB-4 MiB here, a tie at 16-64 MiB, half their speed at 256
  // MiB (docs/performance.md).
  size_t one_pass_max_bytes = size_t{16} << 20;
  // Out of place on mapped buffers, results are streamed past the cache from this op size on:
  // below it the members' inputs and outputs together fit the 8 MiB last-level cache of the VM
  // this was measured on, and streaming lost there (docs/performance.md).
  size_t stream_min_bytes = size_t{4} << 20;
  // Which outputs are cold when written (output_reuse.h): out of place, this member writes
  // those through non-temporal stores.
  OutputReuse reuse;
  // Ops larger than this run as windows of about this size, one after the other, where a member
  // stages them: a window is copied into the stage, reduced and copied out while its lines are
  // still in the cache. The same on every member (never a setting): they must cut the same
  // windows. 1 MiB: the ResNet-50 and BERT-base heap steps ran faster than with 2 or 4 MiB
  // (docs/performance.md).
  size_t window_bytes = size_t{1} << 20;
  // Heap buffers are copied through `stage` (HVDC_LOCAL_STAGE_BYTES, 0: never), a region of this
  // rank's that its peers map, instead of being read through the kernel, where the op (or its
  // window) is no larger than this.
  size_t stage_max_bytes = 16 << 20;
  void* stage = nullptr;   // mapped on first use, as long as the longest op or window staged
  size_t stage_bytes = 0;  // its length

  LocalAccess() = default;
  LocalAccess(const LocalAccess&) = delete;
  LocalAccess& operator=(const LocalAccess&) = delete;
  ~LocalAccess();
};

}  // namespace hvdc::ops::cpu::local
