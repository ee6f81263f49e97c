#include "ops/cpu/local/stage.h"

#include <algorithm>
#include <vector>

#include "common/log.h"
#include "memory/shared_regions.h"

namespace hvdc::ops::cpu::local {
namespace {

bool in_regions(const Pieces& buf) {
  memory::RegionRef ref;
  for (size_t i = 0; i < buf.count(); ++i) {
    if (!memory::locate_in_region(buf.piece(i).data, buf.piece(i).bytes, &ref)) return false;
  }
  return true;
}

}  // namespace

LocalAccess::~LocalAccess() {
  if (stage == nullptr) return;
  Status st = memory::free_region(stage);
  if (!st.is_ok()) HVDC_LOG_WARNING("freeing the allreduce stage: %s", st.message().c_str());
}

bool needs_stage(const Pieces& in, const Pieces& out) {
  return !in_regions(out) || (&in != &out && !in_regions(in));
}

bool stage_holds_windows(const LocalAccess& access) {
  return access.stage_max_bytes >= access.window_bytes;
}

bool stage_fits(const LocalAccess& access, size_t bytes) {
  return bytes > 0 && bytes <= access.stage_max_bytes;
}

Status stage_view(LocalAccess& access, const Pieces& out, Pieces* staged) {
  if (access.stage_bytes < out.bytes()) {
    if (access.stage != nullptr) HVDC_RETURN_IF_ERROR(memory::free_region(access.stage));
    access.stage = nullptr;
    access.stage_bytes = 0;
    const size_t bytes =
        std::max(out.bytes(), std::min(access.window_bytes, access.stage_max_bytes));
    HVDC_RETURN_IF_ERROR(
        memory::allocate_region(bytes, &access.stage).with_context("mapping the allreduce stage"));
    access.stage_bytes = bytes;
  }
  // The stage is one buffer: a view of one piece keeps it inline and allocates nothing.
  if (out.count() <= 1) {
    *staged = Pieces(access.stage, out.bytes());
    return Status::ok();
  }
  std::vector<Piece> pieces;
  pieces.reserve(out.count());
  char* at = static_cast<char*>(access.stage);
  for (size_t i = 0; i < out.count(); ++i) {
    pieces.push_back({at, out.piece(i).bytes});
    at += out.piece(i).bytes;
  }
  *staged = Pieces(std::move(pieces));
  return Status::ok();
}

}  // namespace hvdc::ops::cpu::local
