#include "core/message.h"

#include "common/wire.h"
#include "hvdc.h"

namespace hvdc::core {

using common::WireReader;
using common::WireWriter;

namespace {

constexpr size_t kMaxReasonLength = 64 << 10;
constexpr size_t kMaxErrorLength = 1 << 20;
constexpr size_t kMinRequestBytes = 4 + 4 * 6 + 8 * 2 + 4;  // empty name and shape
constexpr size_t kMinResponseBytes = 4 * 4 + 4 + 4;
constexpr size_t kMaxSizes = 1 << 20;  // one per rank

Status check_enum(int32_t value, int32_t max, const char* what) {
  if (value < 0 || value > max) {
    return common::make_error(HVD_ERR_INTERNAL, "malformed message: %s value %d", what, value);
  }
  return Status::ok();
}

Status read_request(WireReader& in, Request* r) {
  int32_t type = 0;
  HVDC_RETURN_IF_ERROR(in.str(&r->name, kMaxNameLength));
  HVDC_RETURN_IF_ERROR(in.i32(&type));
  HVDC_RETURN_IF_ERROR(check_enum(type, static_cast<int32_t>(OpType::kBarrier), "op type"));
  r->op_type = static_cast<OpType>(type);
  HVDC_RETURN_IF_ERROR(in.i32(&r->dtype));
  HVDC_RETURN_IF_ERROR(in.i32(&r->reduce_op));
  HVDC_RETURN_IF_ERROR(in.i32(&r->root));
  HVDC_RETURN_IF_ERROR(in.i32(&r->device_type));
  HVDC_RETURN_IF_ERROR(in.i32(&r->device_id));
  HVDC_RETURN_IF_ERROR(in.f64(&r->prescale));
  HVDC_RETURN_IF_ERROR(in.f64(&r->postscale));
  return in.i64s(&r->shape, HVD_MAX_NDIM);
}

Status read_response(WireReader& in, Response* r) {
  int32_t kind = 0, type = 0;
  HVDC_RETURN_IF_ERROR(in.i32(&kind));
  HVDC_RETURN_IF_ERROR(check_enum(kind, static_cast<int32_t>(ResponseKind::kError), "response"));
  r->kind = static_cast<ResponseKind>(kind);
  HVDC_RETURN_IF_ERROR(in.i32(&type));
  HVDC_RETURN_IF_ERROR(check_enum(type, static_cast<int32_t>(OpType::kBarrier), "op type"));
  r->op_type = static_cast<OpType>(type);
  uint32_t n = 0;
  HVDC_RETURN_IF_ERROR(in.count(&n, 4));
  r->names.resize(n);
  for (std::string& name : r->names) HVDC_RETURN_IF_ERROR(in.str(&name, kMaxNameLength));
  HVDC_RETURN_IF_ERROR(in.i32(&r->error_code));
  HVDC_RETURN_IF_ERROR(in.str(&r->error_message, kMaxErrorLength));
  return in.i64s(&r->sizes, kMaxSizes);
}

}  // namespace

size_t element_count(const std::vector<int64_t>& shape, size_t from) {
  size_t n = 1;
  for (size_t i = from; i < shape.size(); ++i) n *= static_cast<size_t>(shape[i]);
  return n;
}

const char* op_type_name(OpType type) {
  switch (type) {
    case OpType::kAllreduce:
      return "ALLREDUCE";
    case OpType::kAllgather:
      return "ALLGATHER";
    case OpType::kBroadcast:
      return "BROADCAST";
    case OpType::kBarrier:
      return "BARRIER";
  }
  return "UNKNOWN";
}

std::string encode(const RequestList& list) {
  WireWriter out;
  out.u32(static_cast<uint32_t>(list.requests.size()));
  for (const Request& r : list.requests) {
    out.str(r.name);
    out.i32(static_cast<int32_t>(r.op_type));
    out.i32(r.dtype);
    out.i32(r.reduce_op);
    out.i32(r.root);
    out.i32(r.device_type);
    out.i32(r.device_id);
    out.f64(r.prescale);
    out.f64(r.postscale);
    out.i64s(r.shape);
  }
  return out.take();
}

std::string encode(const ResponseList& list) {
  WireWriter out;
  out.u32(static_cast<uint32_t>(list.responses.size()));
  for (const Response& r : list.responses) {
    out.i32(static_cast<int32_t>(r.kind));
    out.i32(static_cast<int32_t>(r.op_type));
    out.u32(static_cast<uint32_t>(r.names.size()));
    for (const std::string& name : r.names) out.str(name);
    out.i32(r.error_code);
    out.str(r.error_message);
    out.i64s(r.sizes);
  }
  return out.take();
}

std::string encode(const Terminate& msg) {
  WireWriter out;
  out.i32(msg.code);
  out.i32(msg.rank);
  out.str(msg.reason);
  return out.take();
}

Status decode(const std::string& bytes, RequestList* out) {
  WireReader in(bytes, "request list");
  uint32_t n = 0;
  HVDC_RETURN_IF_ERROR(in.count(&n, kMinRequestBytes));
  out->requests.resize(n);
  for (Request& r : out->requests) HVDC_RETURN_IF_ERROR(read_request(in, &r));
  return in.finish();
}

Status decode(const std::string& bytes, ResponseList* out) {
  WireReader in(bytes, "response list");
  uint32_t n = 0;
  HVDC_RETURN_IF_ERROR(in.count(&n, kMinResponseBytes));
  out->responses.resize(n);
  for (Response& r : out->responses) HVDC_RETURN_IF_ERROR(read_response(in, &r));
  return in.finish();
}

Status decode(const std::string& bytes, Terminate* out) {
  WireReader in(bytes, "terminate notice");
  HVDC_RETURN_IF_ERROR(in.i32(&out->code));
  HVDC_RETURN_IF_ERROR(in.i32(&out->rank));
  HVDC_RETURN_IF_ERROR(in.str(&out->reason, kMaxReasonLength));
  return in.finish();
}

}  // namespace hvdc::core
