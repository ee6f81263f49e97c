// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), written for the rendezvous store's message
// authentication so that hvdc needs no crypto library. Not for bulk data: the store MACs a few
// small control messages per connection.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace hvdc::common {

constexpr size_t kSha256Bytes = 32;
constexpr size_t kSha256BlockBytes = 64;
using Sha256Digest = std::array<uint8_t, kSha256Bytes>;

// Streaming hash: update() any number of times, then finish(), which also resets.
class Sha256 {
 public:
  Sha256() { reset(); }
  void reset();
  void update(const void* data, size_t n);
  Sha256Digest finish();

 private:
  void compress(const uint8_t* block);

  uint32_t state_[8];
  uint8_t block_[kSha256BlockBytes];
  size_t used_ = 0;  // bytes waiting in block_
  uint64_t total_bytes_ = 0;
};

Sha256Digest sha256(const void* data, size_t n);

// HMAC with one key for many messages: the key's padded blocks are hashed once in the
// constructor, so each message costs only its own blocks.
class HmacSha256 {
 public:
  HmacSha256(const void* key, size_t key_len);
  explicit HmacSha256(const std::string& key) : HmacSha256(key.data(), key.size()) {}
  void update(const void* data, size_t n) { inner_.update(data, n); }
  // The MAC of everything passed to update() since the last finish(); starts a new message.
  Sha256Digest finish();

 private:
  Sha256 keyed_inner_;  // state after absorbing key ^ ipad
  Sha256 keyed_outer_;  // state after absorbing key ^ opad
  Sha256 inner_;
};

Sha256Digest hmac_sha256(const void* key, size_t key_len, const void* data, size_t n);

// Equality whose running time does not depend on where the inputs differ, so that a peer
// guessing a MAC learns nothing from how fast it is refused.
bool constant_time_equal(const void* a, const void* b, size_t n);

}  // namespace hvdc::common
