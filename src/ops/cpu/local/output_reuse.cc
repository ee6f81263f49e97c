#include "ops/cpu/local/output_reuse.h"

#include <fstream>
#include <string>

namespace hvdc::ops::cpu::local {
namespace {

constexpr size_t kDefaultLastLevelCache = size_t{32} << 20;

// "32768K" -> 33554432; 0 if it does not parse.
size_t parse_cache_size(const std::string& text) {
  size_t value = 0, i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    value = value * 10 + static_cast<size_t>(text[i] - '0');
  }
  if (i < text.size() && text[i] == 'K') return value << 10;
  if (i < text.size() && text[i] == 'M') return value << 20;
  return i == text.size() ? value : 0;
}

}  // namespace

size_t last_level_cache_bytes() {
  // cpu0's caches by index, from the first level up; the last one that reads is the largest.
  size_t largest = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream file("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) +
                       "/size");
    std::string text;
    if (!(file >> text)) break;
    const size_t bytes = parse_cache_size(text);
    if (bytes > largest) largest = bytes;
  }
  return largest > 0 ? largest : kDefaultLastLevelCache;
}

bool OutputReuse::cold(const Pieces& out) const {
  if (cold_bytes_ == 0) return true;
  size_t cold_bytes = 0;
  for (size_t i = 0; i < out.count(); ++i) {
    const Piece& piece = out.piece(i);
    auto it = last_written_.find(piece.data);
    if (it != last_written_.end() && total_ - it->second >= cold_bytes_) cold_bytes += piece.bytes;
  }
  return cold_bytes > 0 && cold_bytes >= out.bytes() - cold_bytes;
}

void OutputReuse::written(const Pieces& out) {
  if (last_written_.size() + out.count() > kMaxTracked) last_written_.clear();
  total_ += out.bytes();  // what is written after this op is what counts against it
  for (size_t i = 0; i < out.count(); ++i) last_written_[out.piece(i).data] = total_;
}

}  // namespace hvdc::ops::cpu::local
