#include "ops/cpu/pieces.h"

#include <algorithm>
#include <cstring>

#include "common/copy_bytes.h"

namespace hvdc::ops::cpu {

Pieces::Pieces(std::vector<Piece> pieces) {
  add(pieces.data(), pieces.size());
}

Pieces::Pieces(const Piece* pieces, size_t n) {
  add(pieces, n);
}

Pieces::Pieces(void* data, size_t bytes) {
  const Piece one = {static_cast<char*>(data), bytes};
  add(&one, 1);
}

void Pieces::add(const Piece* pieces, size_t n) {
  for (size_t i = 0; i < n; ++i) count_ += pieces[i].bytes > 0 ? 1 : 0;
  if (count_ > 1) {
    pieces_.reserve(count_);
    starts_.reserve(count_);
  }
  for (size_t i = 0; i < n; ++i) {
    const Piece& p = pieces[i];
    if (p.bytes == 0) continue;
    if (count_ == 1) {
      one_ = p;
    } else {
      pieces_.push_back(p);
      starts_.push_back(total_);
    }
    total_ += p.bytes;
  }
}

size_t Pieces::find(size_t offset) const {
  if (count_ <= 1) return 0;
  auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
  return it == starts_.begin() ? 0 : static_cast<size_t>(it - starts_.begin()) - 1;
}

size_t Pieces::run(size_t offset, size_t len) const {
  if (count_ == 0 || len == 0) return 0;
  const size_t i = find(offset);
  return std::min(len, at()[i].bytes - (offset - start(i)));
}

char* Pieces::contiguous(size_t offset, size_t len) const {
  if (count_ == 0) return nullptr;
  const size_t i = find(offset);
  const size_t skip = offset - start(i);
  const Piece& p = at()[i];
  return skip + len <= p.bytes ? p.data + skip : nullptr;
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
