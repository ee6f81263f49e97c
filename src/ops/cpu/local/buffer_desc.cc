#include "ops/cpu/local/buffer_desc.h"

#include <unistd.h>

#include <cstring>

namespace hvdc::ops::cpu::local {
namespace {

using common::make_error;

constexpr uint32_t kMagic = 0x68764c42;   // "hvLB"
constexpr size_t kHeaderBytes = 16 + 32;  // magic, pid, piece count, flags, board
constexpr uint32_t kFlagStaging = 1;
constexpr size_t kPieceBytes = 48;

template <typename T>
void put(std::string* out, T value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <typename T>
T get(const char*& p) {
  T value;
  std::memcpy(&value, p, sizeof value);
  p += sizeof value;
  return value;
}

void put_region(std::string* out, const memory::RegionRef& r) {
  put<uint64_t>(out, r.id);
  put<uint64_t>(out, r.offset);
  put<uint64_t>(out, r.mapped_bytes);
  put<int64_t>(out, r.fd);
}

memory::RegionRef get_region(const char*& p) {
  memory::RegionRef r;
  r.id = get<uint64_t>(p);
  r.offset = get<uint64_t>(p);
  r.mapped_bytes = get<uint64_t>(p);
  r.fd = static_cast<int32_t>(get<int64_t>(p));
  return r;
}

void put_piece(std::string* out, const PieceDesc& p) {
  put<uint64_t>(out, p.addr);
  put<uint64_t>(out, p.bytes);
  put_region(out, p.region);
}

PieceDesc get_piece(const char*& p) {
  PieceDesc d;
  d.addr = get<uint64_t>(p);
  d.bytes = get<uint64_t>(p);
  d.region = get_region(p);
  return d;
}

std::vector<PieceDesc> describe_pieces(const Pieces& buf) {
  std::vector<PieceDesc> out(buf.count());
  for (size_t i = 0; i < buf.count(); ++i) {
    const Piece& piece = buf.piece(i);
    out[i].addr = reinterpret_cast<uintptr_t>(piece.data);
    out[i].bytes = piece.bytes;
    if (!memory::locate_in_region(piece.data, piece.bytes, &out[i].region)) out[i].region = {};
  }
  return out;
}

}  // namespace

bool BufferDesc::all_in_regions() const {
  for (const std::vector<PieceDesc>* side : {&inputs, &outputs}) {
    for (const PieceDesc& p : *side) {
      if (p.region.id == 0) return false;
    }
  }
  return true;
}

BufferDesc describe(const Pieces& in, const Pieces& out) {
  BufferDesc desc;
  desc.pid = getpid();
  desc.inputs = describe_pieces(in);
  desc.outputs = describe_pieces(out);
  return desc;
}

size_t encoded_size(size_t pieces) {
  return kHeaderBytes + 2 * pieces * kPieceBytes;
}

void encode(const BufferDesc& desc, std::string* out) {
  out->clear();
  out->reserve(encoded_size(desc.outputs.size()));
  put<uint32_t>(out, kMagic);
  put<int32_t>(out, desc.pid);
  put<uint32_t>(out, static_cast<uint32_t>(desc.outputs.size()));
  put<uint32_t>(out, desc.staging ? kFlagStaging : 0);
  put_region(out, desc.board);
  for (const PieceDesc& p : desc.inputs) put_piece(out, p);
  for (const PieceDesc& p : desc.outputs) put_piece(out, p);
}

bool described_staging(const char* data, size_t bytes) {
  if (bytes < kHeaderBytes) return false;
  const char* p = data;
  if (get<uint32_t>(p) != kMagic) return false;
  p += 8;  // pid, piece count
  return (get<uint32_t>(p) & kFlagStaging) != 0;
}

Status decode(const char* data, size_t bytes, const Pieces& mine, BufferDesc* out) {
  if (bytes != encoded_size(mine.count())) {
    return make_error(HVD_ERR_INTERNAL, "a peer's buffer description has %zu bytes, not %zu", bytes,
                      encoded_size(mine.count()));
  }
  const char* p = data;
  if (get<uint32_t>(p) != kMagic) {
    return make_error(HVD_ERR_INTERNAL, "a peer's buffer description is corrupt");
  }
  out->pid = get<int32_t>(p);
  if (get<uint32_t>(p) != mine.count()) {
    return make_error(HVD_ERR_INTERNAL, "a peer's buffer has another piece count");
  }
  out->staging = (get<uint32_t>(p) & kFlagStaging) != 0;
  out->board = get_region(p);
  out->inputs.clear();
  out->outputs.clear();
  for (size_t i = 0; i < 2 * mine.count(); ++i) {
    const PieceDesc d = get_piece(p);
    const size_t want = mine.piece(i % mine.count()).bytes;
    if (d.bytes != want) {
      return make_error(HVD_ERR_INTERNAL, "piece %zu of a peer's buffer has %llu bytes, not %zu",
                        i % mine.count(), static_cast<unsigned long long>(d.bytes), want);
    }
    (i < mine.count() ? out->inputs : out->outputs).push_back(d);
  }
  return Status::ok();
}

}  // namespace hvdc::ops::cpu::local
