#include "ops/cpu/local/board.h"

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <new>

#include "common/log.h"
#include "ops/cpu/comm.h"
#include "ops/cpu/local/board_slot.h"
#include "transport/waiting.h"

namespace hvdc::ops::cpu::local {

namespace {

// Room for the descriptions of about 600 pieces (a fused op of 300 tensors out of place) besides
// the kept areas.
constexpr size_t kBoardBytes = (64 << 10) + kKeptDescriptions * sizeof(KeptDescription);

}  // namespace

Board::Board(int members, int index)
    : members_(members),
      index_(index),
      areas_(kKeptDescriptions + 1),
      kept_(kKeptDescriptions),
      slots_(members, nullptr) {}

Board::~Board() {
  if (own_ == nullptr) return;
  Status st = memory::free_region(own_);
  if (!st.is_ok()) HVDC_LOG_WARNING("freeing an allreduce board: %s", st.message().c_str());
}

Status Board::create() {
  void* base = nullptr;
  HVDC_RETURN_IF_ERROR(
      memory::allocate_region(kBoardBytes, &base).with_context("mapping the allreduce board"));
  own_ = new (base) Slot();
  slots_[index_] = own_;
  if (!memory::locate_in_region(own_, kBoardBytes, &ref_)) {
    return common::make_error(HVD_ERR_INTERNAL, "the allreduce board is in no shared region");
  }
  return Status::ok();
}

Status Board::open_peer(int m, pid_t pid, const memory::RegionRef& ref,
                        memory::PeerRegions& regions) {
  if (slots_[m] != nullptr) return Status::ok();
  char* base = nullptr;
  HVDC_RETURN_IF_ERROR(regions.map(pid, ref, &base, /*pinned=*/true));
  slots_[m] = reinterpret_cast<Slot*>(base + ref.offset);
  return Status::ok();
}

bool Board::peers_open() const {
  for (const Slot* slot : slots_) {
    if (slot == nullptr) return false;
  }
  return true;
}

bool Board::fits(size_t bytes) const {
  return bytes <= kBoardBytes - offsetof(Slot, desc);
}

bool Board::area_holds(int area, const std::string& desc) const {
  if (area == 0) {
    return own_->desc_bytes == desc.size() &&
           std::memcmp(own_->desc, desc.data(), desc.size()) == 0;
  }
  const KeptDescription& kept = own_->kept[area - 1];
  return kept.bytes == desc.size() && std::memcmp(kept.data, desc.data(), desc.size()) == 0;
}

bool Board::holds_description(const std::string& desc) const {
  return area_holds(static_cast<int>(own_->desc_at), desc);
}

uint64_t Board::key_hash(const LaneBuffer& buffer) {
  using common::LruSlots;
  const uint64_t data = reinterpret_cast<uintptr_t>(buffer.data);
  return LruSlots::mix(LruSlots::mix(data, reinterpret_cast<uintptr_t>(buffer.out)), buffer.bytes);
}

// The kept area given to `buffer` before, else the one the kept slots give up.
int Board::area_for(const LaneBuffer& buffer, size_t bytes) {
  if (buffer.data == nullptr || bytes > kKeptDescriptionBytes) return 0;
  const uint64_t hash = key_hash(buffer);
  int s = kept_.find(hash, [&](int slot) { return same_buffers(areas_[slot + 1].key, buffer); });
  if (s >= 0) {
    kept_.touch(s);
  } else {
    s = kept_.take(hash);
  }
  return s + 1;
}

void Board::post_description(const std::string& desc, uint64_t op, const LaneBuffer& buffer) {
  const int a = area_for(buffer, desc.size());
  Area& area = areas_[a];
  area.key = buffer;
  area.described = LaneBuffer();  // until the op says what it holds (note_described)
  current_ = a;
  // Rewritten only where it changed: a store to a line the peers read takes it out of their
  // caches, and in a loop over the same buffers each of them then missed on every line of it
  // for every op. The comparison reads this member's own lines.
  if (!area_holds(a, desc)) {
    if (a == 0) {
      own_->desc_bytes = desc.size();
      std::memcpy(own_->desc, desc.data(), desc.size());
    } else {
      own_->kept[a - 1].bytes = desc.size();
      std::memcpy(own_->kept[a - 1].data, desc.data(), desc.size());
    }
  }
  own_->desc_at = static_cast<uint32_t>(a);
  transport::raise_flag(&own_->described, &own_->described_sleepers, op);
}

void Board::post_outcome(const Status& st, uint64_t op) {
  own_->code = st.code();
  if (st.is_ok()) {
    own_->message[0] = '\0';  // the usual case, without snprintf's cost
  } else {
    std::snprintf(own_->message, sizeof own_->message, "%s", st.message().c_str());
  }
  transport::raise_flag(&own_->written, &own_->written_sleepers, op);
}

Status Board::wait(Comm& comm, bool written, uint64_t op) const {
  transport::FlagWait flags[8];
  std::vector<transport::FlagWait> more(members_ > 9 ? members_ - 1 : 0);
  transport::FlagWait* all = members_ > 9 ? more.data() : flags;
  size_t n = 0;
  for (int m = 0; m < members_; ++m) {
    if (m == index_) continue;
    Slot* slot = slots_[m];
    all[n++] =
        written
            ? transport::FlagWait{comm.members[m], &slot->written, op, &slot->written_sleepers}
            : transport::FlagWait{comm.members[m], &slot->described, op, &slot->described_sleepers};
  }
  return comm.transport->wait_flags(all, n, comm.interrupt);
}

const char* Board::description(int m, size_t* bytes) const {
  const Slot* slot = slots_[m];
  const uint32_t at = slot->desc_at;
  if (at == 0 || at > static_cast<uint32_t>(kKeptDescriptions)) {
    *bytes = at == 0 ? slot->desc_bytes : 0;  // any other value is no description at all
    return slot->desc;
  }
  *bytes = slot->kept[at - 1].bytes;
  return slot->kept[at - 1].data;
}

Status Board::outcome(int m) const {
  const Slot* slot = slots_[m];
  if (slot->code == HVD_SUCCESS) return Status::ok();
  char message[sizeof slot->message];
  std::memcpy(message, slot->message, sizeof message);
  message[sizeof message - 1] = '\0';
  return Status(static_cast<hvd_status_t>(slot->code), message);
}

}  // namespace hvdc::ops::cpu::local
