#include "common/wire.h"

#include <cstring>

namespace hvdc::common {

void WireWriter::str(const std::string& s) {
  u32(static_cast<uint32_t>(s.size()));
  raw(s.data(), s.size());
}

void WireWriter::i64s(const std::vector<int64_t>& v) {
  u32(static_cast<uint32_t>(v.size()));
  raw(v.data(), v.size() * sizeof(int64_t));
}

void WireWriter::u64s(const std::vector<uint64_t>& v) {
  u32(static_cast<uint32_t>(v.size()));
  raw(v.data(), v.size() * sizeof(uint64_t));
}

Status WireReader::malformed(const char* why) const {
  return make_error(HVD_ERR_INTERNAL, "malformed %s (%zu bytes): %s at offset %zu", what_,
                    in_.size(), why, pos_);
}

Status WireReader::raw(void* p, size_t n) {
  if (in_.size() - pos_ < n) return malformed("truncated");
  std::memcpy(p, in_.data() + pos_, n);
  pos_ += n;
  return Status::ok();
}

Status WireReader::view(const char** data, uint32_t* size, size_t max_len) {
  uint32_t len = 0;
  HVDC_RETURN_IF_ERROR(u32(&len));
  if (len > max_len) return malformed("string longer than allowed");
  if (in_.size() - pos_ < len) return malformed("string runs past the end");
  *data = in_.data() + pos_;
  *size = len;
  pos_ += len;
  return Status::ok();
}

Status WireReader::str(std::string* s, size_t max_len) {
  uint32_t len = 0;
  HVDC_RETURN_IF_ERROR(u32(&len));
  if (len > max_len) return malformed("string longer than allowed");
  if (in_.size() - pos_ < len) return malformed("string runs past the end");
  s->assign(in_.data() + pos_, len);
  pos_ += len;
  return Status::ok();
}

template <class T>
Status WireReader::array(std::vector<T>* v, size_t max_count) {
  uint32_t n = 0;
  HVDC_RETURN_IF_ERROR(u32(&n));
  if (n > max_count) return malformed("array longer than allowed");
  if ((in_.size() - pos_) / sizeof(T) < n) return malformed("array runs past the end");
  v->resize(n);
  if (n > 0) std::memcpy(v->data(), in_.data() + pos_, n * sizeof(T));
  pos_ += n * sizeof(T);
  return Status::ok();
}

Status WireReader::i64s(std::vector<int64_t>* v, size_t max_count) {
  return array(v, max_count);
}

Status WireReader::u64s(std::vector<uint64_t>* v, size_t max_count) {
  return array(v, max_count);
}

Status WireReader::count(uint32_t* n, size_t min_item_bytes) {
  HVDC_RETURN_IF_ERROR(u32(n));
  if (min_item_bytes > 0 && (in_.size() - pos_) / min_item_bytes < *n) {
    return malformed("item count larger than the message can hold");
  }
  return Status::ok();
}

Status WireReader::finish() const {
  return pos_ == in_.size() ? Status::ok() : malformed("trailing bytes");
}

}  // namespace hvdc::common
