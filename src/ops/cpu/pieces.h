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
  // One contiguous buffer.
  Pieces(void* data, size_t bytes);

  size_t bytes() const { return total_; }
  size_t count() const { return pieces_.size(); }
  const Piece& piece(size_t i) const { return pieces_[i]; }

  // Calls fn(ptr, n) for each contiguous part of [offset, offset + len), in order.
  template <typename Fn>
  void for_each(size_t offset, size_t len, Fn fn) const {
    for (size_t i = find(offset); len > 0 && i < pieces_.size(); ++i) {
      const size_t skip = offset - starts_[i];
      const size_t n = std::min(len, pieces_[i].bytes - skip);
      fn(pieces_[i].data + skip, n);
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

  std::vector<Piece> pieces_;  // empty pieces dropped
  std::vector<size_t> starts_;
  size_t total_ = 0;
};

}  // namespace hvdc::ops::cpu
