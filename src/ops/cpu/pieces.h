// A list of buffers seen as one byte range. Fused collectives run over the caller's tensors
// in place through this view instead of copying them into one fusion buffer: on one host the two
// whole-buffer copies cost more than the fusion saves (DESIGN.md section 6).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace hvdc::ops::cpu {

struct Piece {
  char* data;
  size_t bytes;
};

class Pieces {
 public:
  Pieces() = default;
  explicit Pieces(std::vector<Piece> pieces);
  // The n pieces at `pieces` (copied).
  Pieces(const Piece* pieces, size_t n);
  // One contiguous buffer.
  Pieces(void* data, size_t bytes);

  size_t bytes() const { return total_; }
  size_t count() const { return count_; }
  const Piece& piece(size_t i) const { return at()[i]; }

  // Calls fn(ptr, n) for each contiguous part of [offset, offset + len), in order.
  template <typename Fn>
  void for_each(size_t offset, size_t len, Fn fn) const {
    const Piece* pieces = at();
    for (size_t i = find(offset); len > 0 && i < count_; ++i) {
      const size_t skip = offset - start(i);
      const size_t n = std::min(len, pieces[i].bytes - skip);
      fn(pieces[i].data + skip, n);
      offset += n;
      len -= n;
    }
  }
  // Calls fn(mine, theirs, n) for each part of [offset, offset + len) that is contiguous in this
  // view and in `other` (a view of the same total size, with its own piece boundaries).
  template <typename Fn>
  void for_each_with(const Pieces& other, size_t offset, size_t len, Fn fn) const {
    while (len > 0) {
      const size_t n = std::min(run(offset, len), other.run(offset, len));
      if (n == 0) return;  // past the end of either view
      fn(contiguous(offset, n), other.contiguous(offset, n), n);
      offset += n;
      len -= n;
    }
  }
  // Bytes from `offset` to the end of the piece holding it, at most `len`.
  size_t run(size_t offset, size_t len) const;
  // The address of [offset, offset + len) when it lies in one piece, else nullptr.
  char* contiguous(size_t offset, size_t len) const;
  // Copies [offset, offset + len) out to dst, or in from src.
  void gather(size_t offset, size_t len, char* dst) const;
  void scatter(size_t offset, size_t len, const char* src) const;
  // The view of bytes [offset, offset + len) only.
  Pieces slice(size_t offset, size_t len) const;
  // Copies every byte of this view into `to`, a view of the same total size.
  void copy_to(const Pieces& to) const { copy_to(to, 0, total_); }
  // The same for the bytes [offset, offset + len) only.
  void copy_to(const Pieces& to, size_t offset, size_t len) const;

 private:
  size_t find(size_t offset) const;  // the piece holding byte `offset`
  // A view of one piece, the most common (one tensor, or one buffer), keeps it inline, so that
  // making one allocates nothing.
  const Piece* at() const { return count_ <= 1 ? &one_ : pieces_.data(); }
  size_t start(size_t i) const { return count_ <= 1 ? 0 : starts_[i]; }
  void keep_one(const Piece& piece);  // a view of one nonempty piece, inline

  Piece one_ = {nullptr, 0};
  std::vector<Piece> pieces_;  // empty pieces dropped; unused for a view of one piece
  std::vector<size_t> starts_;
  size_t count_ = 0;
  size_t total_ = 0;
};

}  // namespace hvdc::ops::cpu
