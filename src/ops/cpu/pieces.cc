#include "ops/cpu/pieces.h"

#include <algorithm>
#include <cstring>

#include "common/copy_bytes.h"

namespace hvdc::ops::cpu {

Pieces::Pieces(std::vector<Piece> pieces) {
  pieces.erase(
      std::remove_if(pieces.begin(), pieces.end(), [](const Piece& p) { return p.bytes == 0; }),
      pieces.end());
  if (pieces.size() <= 1) {
    if (!pieces.empty()) keep_one(pieces[0]);
    return;
  }
  pieces_ = std::move(pieces);  // the caller's storage, not a copy
  count_ = pieces_.size();
  starts_.reserve(count_);
  for (const Piece& p : pieces_) {
    starts_.push_back(total_);
    total_ += p.bytes;
  }
}

Pieces::Pieces(const Piece* pieces, size_t n) {
  size_t nonempty = 0;
  const Piece* last = nullptr;
  for (size_t i = 0; i < n; ++i) {
    if (pieces[i].bytes == 0) continue;
    ++nonempty;
    last = &pieces[i];
  }
  if (nonempty > 1) {
    *this = Pieces(std::vector<Piece>(pieces, pieces + n));
  } else if (last != nullptr) {
    keep_one(*last);
  }
}

Pieces::Pieces(void* data, size_t bytes) {
  if (bytes > 0) keep_one({static_cast<char*>(data), bytes});
}

void Pieces::keep_one(const Piece& piece) {
  one_ = piece;
  count_ = 1;
  total_ = piece.bytes;
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
