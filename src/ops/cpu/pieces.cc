#include "ops/cpu/pieces.h"

#include <algorithm>
#include <cstring>

#include "common/copy_bytes.h"

namespace hvdc::ops::cpu {

Pieces::Pieces(std::vector<Piece> pieces) : pieces_(std::move(pieces)) {
  pieces_.erase(
      std::remove_if(pieces_.begin(), pieces_.end(), [](const Piece& p) { return p.bytes == 0; }),
      pieces_.end());
  starts_.reserve(pieces_.size());
  for (const Piece& p : pieces_) {
    starts_.push_back(total_);
    total_ += p.bytes;
  }
}

Pieces::Pieces(void* data, size_t bytes)
    : Pieces(std::vector<Piece>{{static_cast<char*>(data), bytes}}) {}

size_t Pieces::find(size_t offset) const {
  auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
  return it == starts_.begin() ? 0 : static_cast<size_t>(it - starts_.begin()) - 1;
}

size_t Pieces::run(size_t offset, size_t len) const {
  if (pieces_.empty() || len == 0) return 0;
  const size_t i = find(offset);
  return std::min(len, pieces_[i].bytes - (offset - starts_[i]));
}

char* Pieces::contiguous(size_t offset, size_t len) const {
  if (pieces_.empty()) return nullptr;
  const size_t i = find(offset);
  const size_t skip = offset - starts_[i];
  return skip + len <= pieces_[i].bytes ? pieces_[i].data + skip : nullptr;
}

Pieces Pieces::slice(size_t offset, size_t len) const {
  std::vector<Piece> parts;
  for_each(offset, len, [&](char* p, size_t n) { parts.push_back({p, n}); });
  return Pieces(std::move(parts));
}

void Pieces::gather(size_t offset, size_t len, char* dst) const {
  for_each(offset, len, [&](char* p, size_t n) {
    common::copy_bytes(dst, p, n);
    dst += n;
  });
}

void Pieces::scatter(size_t offset, size_t len, const char* src) const {
  for_each(offset, len, [&](char* p, size_t n) {
    common::copy_bytes(p, src, n);
    src += n;
  });
}

void Pieces::copy_to(const Pieces& to, size_t offset, size_t len) const {
  if (&to == this) return;  // in place: every allreduce of this kind comes through here
  for_each_with(to, offset, len, [](const char* from, char* dst, size_t n) {
    if (from != dst) common::copy_bytes(dst, from, n);
  });
}

}  // namespace hvdc::ops::cpu
