#include "ops/cpu/comm.h"

#include "common/dtype.h"
#include "ops/cpu/reduce/reduce.h"

namespace hvdc::ops::cpu {

transport::Tag Comm::tag(int from, int step) const {
  // payload: 8 bits of set context, 16 bits of op sequence, 16 bits of step. A set runs one op
  // at a time, so a window of 2^16 sequence numbers keeps tags of ops in flight distinct.
  uint64_t payload = (static_cast<uint64_t>(context & 0xFF) << 32) | ((seq & 0xFFFF) << 16) |
                     (static_cast<uint64_t>(step) & 0xFFFF);
  return transport::make_tag(transport::TagKind::kData, members[from], payload);
}

char* Comm::scratch_bytes(size_t bytes) {
  if (scratch->size() < bytes) scratch->resize(bytes);
  return scratch->data();
}

char* Comm::staging_bytes(size_t bytes) {
  std::vector<char>* area = staging != nullptr ? staging : &own_staging_;
  if (area->size() < bytes) area->resize(bytes);
  return area->data();
}

void finish_reduction(const Pieces& buf, size_t offset, size_t len, const ReduceSpec& spec) {
  if (spec.divisor <= 1 && spec.postscale == 1.0) return;
  const size_t esize = common::dtype_size(spec.dtype);
  buf.for_each(offset, len, [&](char* p, size_t n) { finish_reduction(p, n / esize, spec); });
}

void finish_reduction(void* buf, size_t count, const ReduceSpec& spec) {
  if (spec.divisor > 1) divide(buf, count, spec.dtype, spec.divisor);
  if (spec.postscale != 1.0) scale(buf, buf, count, spec.dtype, spec.postscale);
}

}  // namespace hvdc::ops::cpu
