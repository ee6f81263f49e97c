// Little-endian binary encoding for everything hvdc sends over the network: control messages,
// negotiation lists, cache bit vectors, the rendezvous store's greeting, frames and messages.
// WireReader is the one decoder for bytes from a peer: it checks every length against what
// remains before it allocates or copies, so malformed or truncated input is an error, never a
// crash or an oversized allocation. Callers add the semantic limits (name length, ndim, counts).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/copy_bytes.h"
#include "common/status.h"

// Fields are copied in host byte order, which is the wire's order only on little-endian hosts.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the wire format assumes little-endian");

namespace hvdc::common {

class WireWriter {
 public:
  WireWriter() = default;
  // Writes into `reuse`'s storage (emptied first), so that a message encoded again and again
  // keeps one allocation.
  explicit WireWriter(std::string reuse) : out_(std::move(reuse)) { out_.clear(); }
  void reserve(size_t bytes) { out_.reserve(bytes); }
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void i32(int32_t v) { raw(&v, sizeof(v)); }
  void u32(uint32_t v) { raw(&v, sizeof(v)); }
  void i64(int64_t v) { raw(&v, sizeof(v)); }
  void f64(double v) { raw(&v, sizeof(v)); }
  void str(const std::string& s);
  void i64s(const std::vector<int64_t>& v);
  void u64s(const std::vector<uint64_t>& v);  // the same layout as i64s
  // A field of fixed size (magic, nonce): no length prefix, the reader knows the size.
  void bytes(const void* p, size_t n) { raw(p, n); }
  std::string take() { return std::move(out_); }

 private:
  // Fields from 2 KiB on (an input riding with a round) land where they would, and only where
  // that is memcpy's slow case (copy_bytes.h) are they copied by copy_bytes, into space zeroed
  // first (C++17 strings grow no other way); elsewhere append copies them without the zeroing.
  static constexpr size_t kLargeField = 2048;
  void raw(const void* p, size_t n) {
    const char* from = static_cast<const char*>(p);
    if (n < kLargeField) {
      out_.append(from, n);
      return;
    }
    const size_t at = out_.size();
    if (out_.capacity() < at + n) out_.reserve(std::max(at + n, 2 * out_.capacity()));
    if (!copy_is_slow(out_.data() + at, from, n)) {
      out_.append(from, n);
      return;
    }
    out_.resize(at + n);
    copy_bytes(&out_[at], from, n);
  }
  std::string out_;
};

class WireReader {
 public:
  // Keeps a reference to `in`, which must outlive the reader.
  WireReader(const std::string& in, const char* what) : in_(in), what_(what) {}
  Status u8(uint8_t* v) { return raw(v, sizeof(*v)); }
  Status i32(int32_t* v) { return raw(v, sizeof(*v)); }
  Status u32(uint32_t* v) { return raw(v, sizeof(*v)); }
  Status i64(int64_t* v) { return raw(v, sizeof(*v)); }
  Status f64(double* v) { return raw(v, sizeof(*v)); }
  Status str(std::string* s, size_t max_len);
  // The same field without a copy: *data points into the input, which must outlive its use.
  Status view(const char** data, uint32_t* size, size_t max_len);
  Status i64s(std::vector<int64_t>* v, size_t max_count);
  Status u64s(std::vector<uint64_t>* v, size_t max_count);
  // A field of fixed size, written by WireWriter::bytes.
  Status bytes(void* p, size_t n) { return raw(p, n); }
  // A count of items, each at least min_item_bytes long: rejects counts the input cannot hold.
  Status count(uint32_t* n, size_t min_item_bytes);
  // Fails unless every byte was consumed.
  Status finish() const;

 private:
  Status raw(void* p, size_t n);
  template <class T>
  Status array(std::vector<T>* v, size_t max_count);
  Status malformed(const char* why) const;
  const std::string& in_;
  size_t pos_ = 0;
  const char* what_;
};

}  // namespace hvdc::common
