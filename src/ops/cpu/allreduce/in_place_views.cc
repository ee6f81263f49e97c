#include "ops/cpu/allreduce/in_place_views.h"

#include <cstdint>
#include <cstring>

#include "memory/shared_regions.h"
#include "ops/cpu/local/buffer_desc.h"

namespace hvdc::ops::cpu {
namespace {

using local::OpenedViews;
using local::OwnDescription;

// Views kept on one output whose peers' descriptions changed since: a peer that takes a few
// buffers in turn for one tensor still finds its views, one that takes a new one every op
// does not fill the hash's chain with dead views that every later lookup would compare.
constexpr int kViewsPerOutput = 4;

// A hash of a view, for finding what is kept of it: its length, its count of pieces and where
// its first and last pieces lie (an entry found is compared piece by piece anyway, so a hash
// of every piece of a fused op would cost more than it turns away).
uint64_t pieces_hash(const Pieces& pieces, uint64_t seed) {
  using common::LruSlots;
  uint64_t h = LruSlots::mix(seed, pieces.bytes());
  h = LruSlots::mix(h, pieces.count());
  if (pieces.count() == 0) return h;
  h = LruSlots::mix(h, reinterpret_cast<uintptr_t>(pieces.piece(0).data));
  return LruSlots::mix(h, reinterpret_cast<uintptr_t>(pieces.piece(pieces.count() - 1).data));
}

// The entry of `kept` that slot s of `slots` names, made where s is new.
template <typename Entry>
Entry& entry_at(std::vector<Entry>* kept, int s) {
  if (static_cast<size_t>(s) >= kept->size()) kept->resize(s + 1);
  return (*kept)[s];
}

// What views kept are to the op on `out` whose descriptions the board holds. They serve it
// (kHold) where they were opened from the descriptions the board holds, checked against the same
// output (decoding them again checks only its layout, but this member's own description, among
// them, names its pieces anyway: comparing the pieces first costs a loop over many tensors in
// turn a few loads per entry instead of a comparison of descriptions), and no mapping they use
// went since. Views opened before a mapping went never hold again (kMappingsGone: the generation
// only grows); those on this output from peers' descriptions that changed since are kDead.
enum class KeptViews { kHold, kMappingsGone, kDead, kOtherOutput };

KeptViews kept_views_state(const Comm& comm, const local::LocalAccess& access,
                           const OpenedViews& kept, const Pieces& out, const local::Board& board) {
  if (kept.mappings != access.regions.generation()) return KeptViews::kMappingsGone;
  if (!same_pieces(kept.layout, out)) return KeptViews::kOtherOutput;
  if (kept.descriptions.size() != static_cast<size_t>(comm.size())) return KeptViews::kDead;
  for (int m = 0; m < comm.size(); ++m) {
    size_t bytes = 0;
    const char* desc = board.description(m, &bytes);
    const std::string& was = kept.descriptions[m];
    if (bytes != was.size() || std::memcmp(desc, was.data(), bytes) != 0) return KeptViews::kDead;
  }
  return KeptViews::kHold;
}

}  // namespace

const OwnDescription& describe_mine(const Pieces& in, const Pieces& out, bool staging,
                                    local::SetAccess& set) {
  const uint64_t regions = memory::regions_generation();
  const uint64_t hash = pieces_hash(in, pieces_hash(out, staging));
  common::LruSlots& slots = set.description_slots;
  int s = slots.find(hash, [&](int slot) {
    const OwnDescription& kept = set.descriptions[slot];
    return kept.staging == staging && same_pieces(kept.in, in) && same_pieces(kept.out, out);
  });
  if (s >= 0) {
    slots.touch(s);
    // Described while other regions were mapped, it is described again in its own entry.
    if (set.descriptions[s].regions == regions) return set.descriptions[s];
  } else {
    s = slots.take(hash);
  }
  OwnDescription& mine = entry_at(&set.descriptions, s);
  local::BufferDesc desc = local::describe(in, out);
  desc.staging = staging;
  if (set.board) desc.board = set.board->ref();
  local::encode(desc, &mine.encoded);
  mine.in = in;
  mine.out = out;
  mine.regions = regions;
  mine.staging = staging;
  return mine;
}

void open_views(const Comm& comm, const Pieces& out, const std::vector<DescriptionAt>& descs,
                local::Board* boards, std::vector<local::PeerViews>* views, bool* needs_cma,
                Status* opened) {
  local::LocalAccess& access = *comm.local;
  access.regions.trim(access.mapped_regions_max, access.mapped_bytes_max);
  views->assign(comm.size(), local::PeerViews());
  *needs_cma = false;
  *opened = Status::ok();
  for (int m = 0; m < comm.size(); ++m) {
    local::BufferDesc desc;
    Status st = local::decode(descs[m].first, descs[m].second, out, &desc);
    *needs_cma = *needs_cma || !desc.all_in_regions();
    if (m == comm.index) continue;
    if (st.is_ok() && boards != nullptr && desc.board.id != 0) {
      (void)boards->open_peer(m, desc.pid, desc.board, access.regions);  // else: no board
    }
    local::PeerViews& v = (*views)[m];
    if (st.is_ok()) st = v.in.open(desc.pid, comm.members[m], desc.inputs, access.regions);
    if (st.is_ok()) st = v.out.open(desc.pid, comm.members[m], desc.outputs, access.regions);
    if (opened->is_ok() && !st.is_ok()) *opened = st;
  }
}

const OpenedViews& board_views(const Comm& comm, const Pieces& out, local::SetAccess& set,
                               const local::Board& board, Status* opened) {
  const local::LocalAccess& access = *comm.local;
  *opened = Status::ok();
  const uint64_t hash = pieces_hash(out, 0);
  common::LruSlots& slots = set.opened_slots;
  // Views opened before a mapping went never hold again (the generation only grows): the first
  // of them on this output is opened again in place, so that they do not pile up on its hash.
  // Nor do views from peers' descriptions that changed (a peer that gives this tensor a new
  // buffer every op): once kViewsPerOutput of those are kept, the one taken longest ago (found
  // last: a chain runs from the most recently taken) is opened again in place.
  int stale = -1, dead = -1, dead_count = 0;
  int s = slots.find(hash, [&](int slot) {
    const KeptViews state = kept_views_state(comm, access, set.opened[slot], out, board);
    if (state == KeptViews::kMappingsGone && stale < 0) stale = slot;
    if (state == KeptViews::kDead) {
      dead = slot;
      ++dead_count;
    }
    return state == KeptViews::kHold;
  });
  if (stale < 0 && dead_count >= kViewsPerOutput) stale = dead;
  if (s >= 0 || stale >= 0) {
    slots.touch(s >= 0 ? s : stale);
    if (s >= 0) return set.opened[s];
    s = stale;
  } else {
    s = slots.take(hash);
  }
  OpenedViews& fresh = entry_at(&set.opened, s);
  fresh.layout = out;
  std::vector<DescriptionAt> descs(comm.size());
  fresh.descriptions.resize(comm.size());
  for (int m = 0; m < comm.size(); ++m) {
    descs[m].first = board.description(m, &descs[m].second);
    fresh.descriptions[m].assign(descs[m].first, descs[m].second);
  }
  open_views(comm, out, descs, nullptr, &fresh.views, &fresh.need_cma, opened);
  // Read after open_views, whose trim of the mapped regions may have moved it.
  fresh.mappings = opened->is_ok() ? access.regions.generation() : ~uint64_t{0};
  return fresh;
}

}  // namespace hvdc::ops::cpu
