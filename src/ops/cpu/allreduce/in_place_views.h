// What the in-place allreduce keeps of a set's buffers from op to op (local/local_access.h):
// this member's descriptions, and the views of the peers' buffers opened from every member's
// descriptions, several of each, so that a loop over a few tensors describes and opens each
// only once.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "ops/cpu/comm.h"
#include "ops/cpu/local/board.h"
#include "ops/cpu/local/local_access.h"
#include "ops/cpu/pieces.h"

namespace hvdc::ops::cpu {

// Whether two views are made of the same pieces (where and how long). Inline: every op asks
// it several times.
inline bool same_pieces(const Pieces& a, const Pieces& b) {
  if (a.count() != b.count()) return false;
  for (size_t i = 0; i < a.count(); ++i) {
    if (a.piece(i).data != b.piece(i).data || a.piece(i).bytes != b.piece(i).bytes) return false;
  }
  return true;
}

// This member's description of in and out, naming its board where it has one: the one kept for
// the same pieces while no region came or went (which could move a piece into one or out of
// it); one kept from before a region came or went is described again in its own entry, and
// pieces never described take the entry used least recently.
const local::OwnDescription& describe_mine(const Pieces& in, const Pieces& out, bool staging,
                                           local::SetAccess& set);

// Where a member's description lies, and its length.
using DescriptionAt = std::pair<const char*, size_t>;

// Opens views of each peer's buffers from the members' descriptions (by member), and with
// `boards`, the peers' boards named there. A view that cannot be opened goes to *opened (the
// peers must still hear of it).
void open_views(const Comm& comm, const Pieces& out, const std::vector<DescriptionAt>& descs,
                local::Board* boards, std::vector<local::PeerViews>* views, bool* needs_cma,
                Status* opened);

// The views of the op whose descriptions `board` holds: those kept where every member
// describes what it described when they were opened and no mapping they use went since, else
// views opened now (kept for the next ops where they all opened; *opened says why not), in
// place of views on the same output that no longer hold where there are such (in_place_views.cc).
const local::OpenedViews& board_views(const Comm& comm, const Pieces& out, local::SetAccess& set,
                                      const local::Board& board, Status* opened);

}  // namespace hvdc::ops::cpu
