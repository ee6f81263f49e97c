#include "ops/cpu/segments.h"

#include <algorithm>

namespace hvdc::ops::cpu {
std::vector<Segment> split_segments(const Pieces& buf, size_t offset, size_t len,
                                    const SegmentLimits& limits) {
  std::vector<Segment> segs;
  split_segments(buf, offset, len, limits, &segs);
  return segs;
}

void split_segments(const Pieces& buf, size_t offset, size_t len, const SegmentLimits& limits,
                    std::vector<Segment>* out) {
  std::vector<Segment>& segs = *out;
  segs.clear();
  while (len > 0) {
    size_t run = buf.run(offset, len);
    Segment seg;
    seg.offset = offset;
    if (run >= limits.min_direct || run == len) {
      seg.bytes = std::min(run, limits.max_direct);
      seg.addr = buf.contiguous(offset, seg.bytes);
    } else {
      // Pack short runs until the block is full or a long run begins.
      seg.staged = true;
      while (len - seg.bytes > 0 && seg.bytes < limits.max_staged) {
        run = buf.run(offset + seg.bytes, len - seg.bytes);
        if (run >= limits.min_direct && seg.bytes > 0) break;
        seg.bytes += std::min(run, limits.max_staged - seg.bytes);
      }
    }
    segs.push_back(seg);
    offset += seg.bytes;
    len -= seg.bytes;
  }
}

size_t staged_bytes(const std::vector<Segment>& segs) {
  size_t total = 0;
  for (const Segment& s : segs) total += s.staged ? s.bytes : 0;
  return total;
}

char* place_staged(std::vector<Segment>& segs, char* area) {
  for (Segment& s : segs) {
    if (!s.staged) continue;
    s.addr = area;
    area += s.bytes;
  }
  return area;
}

}  // namespace hvdc::ops::cpu
