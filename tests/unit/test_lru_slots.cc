// The kept entries' index (src/common/lru_slots.h): a slot is found by its hash and what it
// holds, slots are taken while any is left, then a loop over more keys than slots keeps all but
// one, and what went unused is given up least recently used first; a slot given up is no longer
// found by its old hash.
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

// Uses keys 0..n-1 in turn, `passes` times; how many uses of the last pass found their key.
int found_in_last_pass(Keys* keys, int n, int passes, int first_key = 0) {
  int found = 0;
  for (int pass = 0; pass < passes; ++pass) {
    found = 0;
    for (int k = first_key; k < first_key + n; ++k) {
      found += keys->find(k) >= 0;
      keys->use(k);
    }
  }
  return found;
}

TEST_P(LruSlotsTest, TakesFreshSlotsFirstThenTheLeastRecentlyUsed) {
  Keys keys(4, hash());
  for (int k = 0; k < 4; ++k) EXPECT_EQ(k, keys.use(k));
  EXPECT_EQ(4, keys.slots().in_use());
  // Keys 1 and 3 then go unused for more than four uses per slot: no longer in use, they are
  // given up least recently used first.
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(2, keys.use(2));  // found, and now the most recently used
    EXPECT_EQ(0, keys.use(0));
  }
  EXPECT_EQ(1, keys.use(10));  // in the place of key 1, the least recently used
  EXPECT_EQ(-1, keys.find(1));
  EXPECT_EQ(3, keys.use(11));  // then key 3's
  EXPECT_EQ(-1, keys.find(3));
  for (int k : {0, 2, 10, 11}) EXPECT_GE(keys.find(k), 0) << "key " << k;
  EXPECT_EQ(4, keys.slots().in_use());
}

TEST_P(LruSlotsTest, WhileEverySlotIsInUseANewKeyTakesTheSlotOfTheLastNewOne) {
  Keys keys(4, hash());
  for (int k = 0; k < 4; ++k) keys.use(k);
  EXPECT_EQ(3, keys.use(10));  // key 0, the oldest, was used four uses ago: key 3's slot
  EXPECT_EQ(3, keys.use(11));  // key 10 was not used again: its slot
  EXPECT_EQ(2, keys.use(2));
  EXPECT_EQ(3, keys.use(12));  // key 11 neither
  EXPECT_EQ(3, keys.use(12));  // found: key 12 is no longer the last new one
  EXPECT_EQ(0, keys.use(13));  // so key 0, the least recently used, goes
  for (int k : {1, 2, 12, 13}) EXPECT_GE(keys.find(k), 0) << "key " << k;
  for (int k : {0, 3, 10, 11}) EXPECT_EQ(-1, keys.find(k)) << "key " << k;
}

TEST_P(LruSlotsTest, ALoopOverMoreKeysThanSlotsFindsAllButOnePerPass) {
  constexpr int kSlots = 8;
  for (int n : {9, 12, 2 * kSlots, 4 * kSlots}) {
    Keys keys(kSlots, hash());
    EXPECT_EQ(kSlots - 1, found_in_last_pass(&keys, n, 5)) << n << " keys";
    EXPECT_EQ(kSlots, keys.slots().in_use());
  }
  // Past four uses per slot the oldest counts as unused: least recently used, every use misses.
  Keys longer(kSlots, hash());
  EXPECT_EQ(0, found_in_last_pass(&longer, 5 * kSlots, 5));
  Keys fits(9, hash());
  EXPECT_EQ(9, found_in_last_pass(&fits, 9, 2));
}

TEST_P(LruSlotsTest, NewKeysAmongALoopLeaveTheLoopKept) {
  // Six keys in turn and three new ones each pass: nine a pass, more than the eight slots, all
  // of which least recently used alone would miss on.
  Keys keys(8, hash());
  int next_new = 100;
  for (int pass = 0; pass < 6; ++pass) {
    int found = 0;
    for (int k = 0; k < 6; ++k) {
      found += keys.find(k) >= 0;
      keys.use(k);
    }
    if (pass > 0) {
      EXPECT_EQ(6, found) << "pass " << pass;
    }
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(-1, keys.find(next_new));
      keys.use(next_new++);
    }
  }
}

TEST_P(LruSlotsTest, AnotherSetOfKeysIsKeptOnceTheFirstGoesUnused) {
  constexpr int kSlots = 8;
  Keys keys(kSlots, hash());
  found_in_last_pass(&keys, kSlots, 3);
  // The first set stays while it counts as in use (four uses per slot); then it goes least
  // recently used first, and the second set is kept whole.
  EXPECT_LT(found_in_last_pass(&keys, kSlots, 3, 100), kSlots);
  EXPECT_EQ(kSlots, found_in_last_pass(&keys, kSlots, 3, 100));
  for (int k = 0; k < kSlots; ++k) EXPECT_EQ(-1, keys.find(k)) << "key " << k;
}

// The policy of lru_slots.h written out plainly: each key's last use and which key was taken
// last, the victim found by a scan.
class PlainPolicy {
 public:
  explicit PlainPolicy(int slots) : slots_(slots) {}
  void use(int key) {
    ++uses_;
    for (Entry& e : kept_) {
      if (e.key != key) continue;
      e.used = uses_;
      if (fresh_ == key) fresh_ = -1;
      return;
    }
    if (static_cast<int>(kept_.size()) < slots_) {
      kept_.push_back({key, uses_});
    } else {
      size_t oldest = 0, fresh = kept_.size();
      for (size_t i = 0; i < kept_.size(); ++i) {
        if (kept_[i].used < kept_[oldest].used) oldest = i;
        if (kept_[i].key == fresh_) fresh = i;
      }
      const bool in_use = uses_ - 1 - kept_[oldest].used <= 4u * slots_;
      kept_[in_use && fresh < kept_.size() ? fresh : oldest] = {key, uses_};
    }
    fresh_ = key;
  }
  bool holds(int key) const {
    for (const Entry& e : kept_) {
      if (e.key == key) return true;
    }
    return false;
  }

 private:
  struct Entry {
    int key;
    uint64_t used;
  };
  int slots_;
  uint64_t uses_ = 0;
  int fresh_ = -1;
  std::vector<Entry> kept_;
};

TEST_P(LruSlotsTest, KeepsWhatThePlainPolicyKeeps) {
  constexpr int kSlots = 64;
  Keys keys(kSlots, hash());
  PlainPolicy plain(kSlots);
  uint64_t state = 12345;
  for (int i = 0; i < 20000; ++i) {
    // Phases of loops of 40 to 400 keys, new keys and keys used again at random.
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const int phase = i / 2000;
    const int loop = 40 + 40 * phase;
    const int key = (state >> 60) == 0 ? 1000 + i : (i % loop) + 100 * (phase % 3);
    ASSERT_EQ(plain.holds(key), keys.find(key) >= 0) << "use " << i << " key " << key;
    plain.use(key);
    keys.use(key);
  }
  // Every key kept is in its own slot, and the slots are full.
  std::vector<bool> slot_taken(kSlots, false);
  int found = 0;
  for (int key = 0; key < 21000; ++key) {
    const int s = keys.find(key);
    if (s < 0) continue;
    ++found;
    ASSERT_TRUE(plain.holds(key)) << "key " << key;
    EXPECT_FALSE(slot_taken[s]) << "slot " << s << " found for two keys";
    slot_taken[s] = true;
  }
  EXPECT_EQ(kSlots, found);
}

INSTANTIATE_TEST_SUITE_P(Hashes, LruSlotsTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("Colliding") : std::string("Distinct");
                         });

}  // namespace
}  // namespace hvdc::common
