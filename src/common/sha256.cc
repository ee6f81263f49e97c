#include "common/sha256.h"

#include <cstring>

namespace hvdc::common {
namespace {

// FIPS 180-4 section 4.2.2: the first 32 bits of the fractional parts of the cube roots of the
// first 64 primes.
constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

// Section 5.3.3: the first 32 bits of the fractional parts of the square roots of the first 8
// primes.
constexpr uint32_t kInitial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

inline uint32_t rotr(uint32_t x, int n) {
  return (x >> n) | (x << (32 - n));
}

inline uint32_t load_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

inline void store_be32(uint32_t v, uint8_t* p) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

// Overwrites key material in a way the compiler may not drop as a dead store.
void wipe(void* p, size_t n) {
  volatile uint8_t* bytes = static_cast<volatile uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) bytes[i] = 0;
}

}  // namespace

void Sha256::reset() {
  std::memcpy(state_, kInitial, sizeof(state_));
  used_ = 0;
  total_bytes_ = 0;
}

// Section 6.2.2: the message schedule and the 64 rounds over one 512-bit block.
void Sha256::compress(const uint8_t* block) {
  uint32_t w[64];
  for (int t = 0; t < 16; ++t) w[t] = load_be32(block + 4 * t);
  for (int t = 16; t < 64; ++t) {
    uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
  uint32_t e = state_[4], f = state_[5], g = state_[6], h = state_[7];
  for (int t = 0; t < 64; ++t) {
    uint32_t big_s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
    uint32_t ch = (e & f) ^ (~e & g);
    uint32_t t1 = h + big_s1 + ch + kRound[t] + w[t];
    uint32_t big_s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
    uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = big_s0 + maj;
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state_[0] += a;
  state_[1] += b;
  state_[2] += c;
  state_[3] += d;
  state_[4] += e;
  state_[5] += f;
  state_[6] += g;
  state_[7] += h;
}

void Sha256::update(const void* data, size_t n) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  total_bytes_ += n;
  if (used_ > 0) {
    size_t take = n < kSha256BlockBytes - used_ ? n : kSha256BlockBytes - used_;
    std::memcpy(block_ + used_, p, take);
    used_ += take;
    p += take;
    n -= take;
    if (used_ < kSha256BlockBytes) return;
    compress(block_);
    used_ = 0;
  }
  // Whole blocks straight from the caller's buffer, without a copy.
  for (; n >= kSha256BlockBytes; p += kSha256BlockBytes, n -= kSha256BlockBytes) compress(p);
  if (n > 0) std::memcpy(block_, p, n);
  used_ = n;
}

// Section 5.1.1: a 1 bit, zeros up to 56 bytes mod 64, then the length in bits, big-endian.
Sha256Digest Sha256::finish() {
  const uint64_t bit_length = total_bytes_ * 8;
  block_[used_++] = 0x80;
  if (used_ > kSha256BlockBytes - 8) {
    std::memset(block_ + used_, 0, kSha256BlockBytes - used_);
    compress(block_);
    used_ = 0;
  }
  std::memset(block_ + used_, 0, kSha256BlockBytes - 8 - used_);
  store_be32(static_cast<uint32_t>(bit_length >> 32), block_ + 56);
  store_be32(static_cast<uint32_t>(bit_length), block_ + 60);
  compress(block_);
  Sha256Digest digest;
  for (int i = 0; i < 8; ++i) store_be32(state_[i], digest.data() + 4 * i);
  reset();
  return digest;
}

Sha256Digest sha256(const void* data, size_t n) {
  Sha256 hash;
  hash.update(data, n);
  return hash.finish();
}

// RFC 2104: H((K ^ opad) || H((K ^ ipad) || message)), K hashed first when longer than a block.
HmacSha256::HmacSha256(const void* key, size_t key_len) {
  uint8_t block[kSha256BlockBytes] = {};
  if (key_len > kSha256BlockBytes) {
    Sha256Digest hashed = sha256(key, key_len);
    std::memcpy(block, hashed.data(), hashed.size());
    wipe(hashed.data(), hashed.size());
  } else if (key_len > 0) {
    std::memcpy(block, key, key_len);
  }
  uint8_t pad[kSha256BlockBytes];
  for (size_t i = 0; i < kSha256BlockBytes; ++i) pad[i] = block[i] ^ 0x36;
  keyed_inner_.update(pad, sizeof(pad));
  for (size_t i = 0; i < kSha256BlockBytes; ++i) pad[i] = block[i] ^ 0x5c;
  keyed_outer_.update(pad, sizeof(pad));
  wipe(pad, sizeof(pad));
  wipe(block, sizeof(block));
  inner_ = keyed_inner_;
}

Sha256Digest HmacSha256::finish() {
  Sha256Digest inner_digest = inner_.finish();
  Sha256 outer = keyed_outer_;
  outer.update(inner_digest.data(), inner_digest.size());
  inner_ = keyed_inner_;
  return outer.finish();
}

Sha256Digest hmac_sha256(const void* key, size_t key_len, const void* data, size_t n) {
  HmacSha256 mac(key, key_len);
  mac.update(data, n);
  return mac.finish();
}

bool constant_time_equal(const void* a, const void* b, size_t n) {
  const volatile uint8_t* x = static_cast<const volatile uint8_t*>(a);
  const volatile uint8_t* y = static_cast<const volatile uint8_t*>(b);
  uint8_t diff = 0;
  for (size_t i = 0; i < n; ++i) diff |= static_cast<uint8_t>(x[i] ^ y[i]);
  return diff == 0;
}

}  // namespace hvdc::common
