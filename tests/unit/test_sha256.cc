// SHA-256 against the FIPS 180-4 / NIST examples and HMAC-SHA256 against RFC 4231 (cases 1-4, 6,
// 7; case 5 truncates the output, which hvdc never does). Expected digests are the published
// constants, not values computed by the code under test.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "common/sha256.h"

namespace {

using hvdc::common::constant_time_equal;
using hvdc::common::hmac_sha256;
using hvdc::common::HmacSha256;
using hvdc::common::Sha256;
using hvdc::common::sha256;
using hvdc::common::Sha256Digest;

std::string hex(const Sha256Digest& digest) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t byte : digest) {
    out.push_back(kDigits[byte >> 4]);
    out.push_back(kDigits[byte & 0xF]);
  }
  return out;
}

std::string sha256_hex(const std::string& message) {
  return hex(sha256(message.data(), message.size()));
}

std::string hmac_hex(const std::string& key, const std::string& data) {
  return hex(hmac_sha256(key.data(), key.size(), data.data(), data.size()));
}

TEST(Sha256, NistVectors) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(
      sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklm"
                 "nopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, MillionAs) {
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // The same message fed in pieces that straddle block boundaries in every way.
  Sha256 hash;
  const std::string piece(997, 'a');
  size_t fed = 0;
  while (fed < 1000000) {
    size_t n = std::min(piece.size(), size_t{1000000} - fed);
    hash.update(piece.data(), n);
    fed += n;
  }
  EXPECT_EQ(hex(hash.finish()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, StreamingMatchesOneShotAtEverySplit) {
  std::string message;
  for (int i = 0; i < 200; ++i) message.push_back(static_cast<char>(i * 7 + 3));
  for (size_t len : {0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 200}) {
    const Sha256Digest whole = sha256(message.data(), len);
    for (size_t split = 0; split <= len; ++split) {
      Sha256 hash;
      hash.update(message.data(), split);
      hash.update(message.data() + split, len - split);
      ASSERT_EQ(hash.finish(), whole) << "length " << len << " split at " << split;
    }
  }
}

TEST(Sha256, FinishResets) {
  Sha256 hash;
  hash.update("junk", 4);
  (void)hash.finish();
  hash.update("abc", 3);
  EXPECT_EQ(hex(hash.finish()), sha256_hex("abc"));
}

TEST(HmacSha256, Rfc4231) {
  EXPECT_EQ(hmac_hex(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hmac_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(hmac_hex(std::string(20, '\xaa'), std::string(50, '\xdd')),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  std::string key4;
  for (int i = 1; i <= 25; ++i) key4.push_back(static_cast<char>(i));
  EXPECT_EQ(hmac_hex(key4, std::string(50, '\xcd')),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  const std::string long_key(131, '\xaa');
  EXPECT_EQ(hmac_hex(long_key, "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(hmac_hex(long_key,
                     "This is a test using a larger than block-size key and a larger than "
                     "block-size data. The key needs to be hashed before being used by the HMAC "
                     "algorithm."),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

TEST(HmacSha256, KeyReusedAcrossMessagesAndPieces) {
  HmacSha256 mac(std::string("Jefe"));
  mac.update("what do ya ", 11);
  mac.update("want for nothing?", 17);
  EXPECT_EQ(hex(mac.finish()), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  mac.update("what do ya want for nothing?", 28);
  EXPECT_EQ(hex(mac.finish()), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(ConstantTimeEqual, ComparesEveryByte) {
  const std::string a = "0123456789abcdef";
  std::string b = a;
  EXPECT_TRUE(constant_time_equal(a.data(), b.data(), a.size()));
  EXPECT_TRUE(constant_time_equal(a.data(), b.data(), 0));
  for (size_t i = 0; i < a.size(); ++i) {
    b = a;
    b[i] ^= 0x01;
    EXPECT_FALSE(constant_time_equal(a.data(), b.data(), a.size())) << "byte " << i;
  }
}

}  // namespace
