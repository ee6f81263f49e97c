// The kept entries' index (src/common/lru_slots.h): a slot is found by its hash and what it
// holds, slots are taken while any is left and then given up least recently used first, and a
// slot given up is no longer found by its old hash.
#include "common/lru_slots.h"

#include <gtest/gtest.h>

#include <vector>

namespace hvdc::common {
namespace {

// Slots holding integer keys, hashed by a function that may collide on purpose.
class Keys {
 public:
  Keys(int slots, uint64_t (*hash)(int)) : slots_(slots), hash_(hash) {}
  // The key's slot, taken where it has none.
  int use(int key) {
    int s = find(key);
    if (s >= 0) {
      slots_.touch(s);
      return s;
    }
    s = slots_.take(hash_(key));
    if (static_cast<size_t>(s) >= keys_.size()) keys_.resize(s + 1);
    keys_[s] = key;
    return s;
  }
  int find(int key) const {
    return slots_.find(hash_(key), [&](int s) { return keys_[s] == key; });
  }
  const LruSlots& slots() const { return slots_; }

 private:
  LruSlots slots_;
  uint64_t (*hash_)(int);
  std::vector<int> keys_;
};

uint64_t distinct(int key) {
  return LruSlots::mix(0, static_cast<uint64_t>(key));
}
uint64_t colliding(int key) {
  return static_cast<uint64_t>(key % 3);  // three hashes for every key, many keys on each
}

class LruSlotsTest : public ::testing::TestWithParam<bool> {
 protected:
  uint64_t (*hash())(int) { return GetParam() ? colliding : distinct; }
};

TEST_P(LruSlotsTest, TakesFreshSlotsFirstThenTheLeastRecentlyUsed) {
  Keys keys(4, hash());
  for (int k = 0; k < 4; ++k) EXPECT_EQ(k, keys.use(k));
  EXPECT_EQ(4, keys.slots().in_use());
  EXPECT_EQ(2, keys.use(2));  // found, and now the most recently used
  EXPECT_EQ(0, keys.use(0));
  EXPECT_EQ(1, keys.use(10));  // in the place of key 1, the least recently used
  EXPECT_EQ(-1, keys.find(1));
  EXPECT_EQ(3, keys.use(11));  // then key 3's
  EXPECT_EQ(-1, keys.find(3));
  for (int k : {0, 2, 10, 11}) EXPECT_GE(keys.find(k), 0) << "key " << k;
  EXPECT_EQ(4, keys.slots().in_use());
}

TEST_P(LruSlotsTest, ALoopOverMoreKeysThanSlotsMissesOnEveryUse) {
  Keys keys(8, hash());
  for (int pass = 0; pass < 3; ++pass) {
    for (int k = 0; k < 9; ++k) {
      EXPECT_EQ(-1, keys.find(k)) << "pass " << pass << " key " << k;
      keys.use(k);
    }
  }
  Keys fits(9, hash());
  for (int k = 0; k < 9; ++k) fits.use(k);
  for (int k = 0; k < 9; ++k) EXPECT_EQ(k, fits.find(k));
}

TEST_P(LruSlotsTest, EveryKeptKeyIsFoundAfterManyEvictions) {
  constexpr int kSlots = 64;
  Keys keys(kSlots, hash());
  for (int k = 0; k < 1000; ++k) keys.use((k * 7919) % 301);
  // The last kSlots distinct keys used are found, in their own slots; no other key is.
  std::vector<int> last;
  for (int k = 999; k >= 0 && static_cast<int>(last.size()) < kSlots; --k) {
    const int key = (k * 7919) % 301;
    bool seen = false;
    for (int l : last) seen = seen || l == key;
    if (!seen) last.push_back(key);
  }
  std::vector<bool> slot_taken(kSlots, false);
  for (int key : last) {
    const int s = keys.find(key);
    ASSERT_GE(s, 0) << "key " << key;
    EXPECT_FALSE(slot_taken[s]) << "slot " << s << " found for two keys";
    slot_taken[s] = true;
  }
  int found = 0;
  for (int key = 0; key < 301; ++key) found += keys.find(key) >= 0;
  EXPECT_EQ(kSlots, found);
}

INSTANTIATE_TEST_SUITE_P(Hashes, LruSlotsTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("Colliding") : std::string("Distinct");
                         });

}  // namespace
}  // namespace hvdc::common
