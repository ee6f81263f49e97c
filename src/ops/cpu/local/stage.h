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

// True when this rank copies windows through its stage (HVDC_LOCAL_STAGE_BYTES holds a window,
// and its stage could be mapped) and some piece of `in` or `out` is outside every hvd_mem_alloc
// region (those are mapped by the peers as they are): windows pay off for such buffers.
bool stages_windows(const LocalAccess& access, const Pieces& in, const Pieces& out);
// True when `out` (an op or a window) fits the stage and some piece of it or of `in` is outside
// every hvd_mem_alloc region: it is staged.
bool wants_stage(const LocalAccess& access, const Pieces& in, const Pieces& out);

// A view with the piece sizes of `out` (one window), laid end to end in access.stage (mapped on
// first use, a window long).
Status stage_view(LocalAccess& access, const Pieces& out, Pieces* staged);

}  // namespace hvdc::ops::cpu::local
