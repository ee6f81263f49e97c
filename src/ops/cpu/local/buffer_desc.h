// What a member tells the other members on its host about its buffer for one op: its pid and
// where each piece lies, and for a piece inside an hvd_mem_alloc region, the region, so that
// they map it instead of reading through the kernel. Fixed-size records: every member's view
// has the same pieces (the agreed tensors), so every description has the same length.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "memory/shared_regions.h"
#include "ops/cpu/pieces.h"

namespace hvdc::ops::cpu::local {

using common::Status;

struct PieceDesc {
  uint64_t addr = 0;
  uint64_t bytes = 0;
  memory::RegionRef region;  // region.id == 0: not in a shared region
};

// The input the peers reduce from and the output they copy results from; the same pieces for
// an allreduce in place.
struct BufferDesc {
  pid_t pid = 0;
  bool staging = false;     // the member copies this op through its stage (local/stage.h)
  memory::RegionRef board;  // the member's board (board.h); id 0: it has none
  std::vector<PieceDesc> inputs;
  std::vector<PieceDesc> outputs;

  bool all_in_regions() const;
};

BufferDesc describe(const Pieces& in, const Pieces& out);
// The encoded length of a description with `pieces` pieces on each side.
size_t encoded_size(size_t pieces);
// Encodes desc into *out, replacing its contents (its capacity is kept).
void encode(const BufferDesc& desc, std::string* out);
// Whether an encoded description says its member stages (false if it is no description).
bool described_staging(const char* data, size_t bytes);
// Checks the record against the layout of `mine` (the same piece sizes in the same order).
Status decode(const char* data, size_t bytes, const Pieces& mine, BufferDesc* out);

}  // namespace hvdc::ops::cpu::local
