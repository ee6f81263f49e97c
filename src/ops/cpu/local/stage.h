// Small heap allreduces among ranks of one host go through a stage: each member copies its input
// into a region of its own that the peers map (the same memory as hvd_mem_alloc's), the members
// reduce the stages in place over the mappings, and each copies its result out. Two copies in user
// space cost less than reading and writing the peers' heap through the kernel, whose fixed cost
// per call (pinning the pages) dominates below about a megabyte (docs/performance.md).
#pragma once

#include "common/status.h"
#include "ops/cpu/local/local_access.h"
#include "ops/cpu/pieces.h"

namespace hvdc::ops::cpu::local {

using common::Status;

// True when the op fits the stage and some piece of `in` or `out` is outside every
// hvd_mem_alloc region (those are mapped by the peers as they are).
bool wants_stage(const LocalAccess& access, const Pieces& in, const Pieces& out);

// A view with the piece sizes of `out`, laid end to end in access.stage (mapped on first use).
Status stage_view(LocalAccess& access, const Pieces& out, Pieces* staged);

}  // namespace hvdc::ops::cpu::local
