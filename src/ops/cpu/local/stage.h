// Heap allreduces among ranks of one host, HVDC_LOCAL_STAGE_BYTES at most at a time (an op, or
// a window of a larger one: in_place_local.cc), go through a stage: a region of the member's own
// that the peers map, shown to them in place of its buffers. The peers read their chunks of its
// input there and write their results there; the member copies those chunks in before the op
// and out after it, and reduces its own chunk from its buffers directly. Copies in user space to
// and from mapped memory cost less than the kernel's copies, which pin the peer's pages on every
// call (docs/memory.md).
#pragma once

#include "common/status.h"
#include "ops/cpu/local/local_access.h"
#include "ops/cpu/pieces.h"

namespace hvdc::ops::cpu::local {

using common::Status;

// True when some piece of `out`, or of a separate `in`, is outside every hvd_mem_alloc region
// (those are mapped by the peers as they are): the buffers are the heap's, for the stage.
bool needs_stage(const Pieces& in, const Pieces& out);
// Whether this rank copies windows through its stage: HVDC_LOCAL_STAGE_BYTES holds a window (and
// the stage could be mapped). Windows pay off only then.
bool stage_holds_windows(const LocalAccess& access);
// Whether `bytes` (an op or a window) are staged where they need it: they fit the stage.
bool stage_fits(const LocalAccess& access, size_t bytes);

// A view with the piece sizes of `out` (an op or a window), laid end to end in access.stage
// (mapped on first use, grown to the longest op or window staged).
Status stage_view(LocalAccess& access, const Pieces& out, Pieces* staged);

}  // namespace hvdc::ops::cpu::local
