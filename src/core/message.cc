#include "core/message.h"

#include <cctype>

#include "common/dtype.h"
#include "common/wire.h"
#include "hvdc.h"
#include "transport/tag.h"

namespace hvdc::core {

using common::WireReader;
using common::WireWriter;

namespace {

constexpr size_t kMaxReasonLength = 64 << 10;
constexpr size_t kMaxErrorLength = 1 << 20;
constexpr size_t kParamsBytes = 4 * 6 + 8 * 2 + 4;
constexpr size_t kMinRequestBytes = 4 + 4 + kParamsBytes + 4;  // empty name and shape
constexpr size_t kMinResponseBytes = 4 * 2 + kParamsBytes + 4 * 5;
constexpr size_t kMinCacheBitsBytes = 4 + 4 + 4;
constexpr size_t kMaxProcessSetsOnWire = 1 << 16;
constexpr size_t kMaxCacheWords = (1 << 20) / 64;       // HVDC_CACHE_CAPACITY's limit
constexpr size_t kMaxSizes = 1 << 20;                   // one per rank
constexpr size_t kMaxTreeEntryBytes = size_t{1} << 30;  // one rank's round message
constexpr size_t kMinRoundInputBytes = 4 + 4 + 4;
constexpr size_t kMaxRoundInputBytes = size_t{1} << 30;

Status check_enum(int32_t value, int32_t max, const char* what) {
  if (value < 0 || value > max) {
    return common::make_error(HVD_ERR_INTERNAL, "malformed message: %s value %d", what, value);
  }
  return Status::ok();
}

// The op parameters, in the same layout in requests and responses.
void write_params(WireWriter& out, const OpParams& p) {
  out.i32(static_cast<int32_t>(p.op_type));
  out.i32(p.dtype);
  out.i32(p.reduce_op);
  out.i32(p.root);
  out.i32(p.device_type);
  out.i32(p.device_id);
  out.f64(p.prescale);
  out.f64(p.postscale);
  out.u32(p.flags);
}

Status read_params(WireReader& in, OpParams* p) {
  int32_t type = 0;
  HVDC_RETURN_IF_ERROR(in.i32(&type));
  HVDC_RETURN_IF_ERROR(check_enum(type, kMaxOpType, "op type"));
  p->op_type = static_cast<OpType>(type);
  HVDC_RETURN_IF_ERROR(in.i32(&p->dtype));
  HVDC_RETURN_IF_ERROR(in.i32(&p->reduce_op));
  HVDC_RETURN_IF_ERROR(in.i32(&p->root));
  HVDC_RETURN_IF_ERROR(in.i32(&p->device_type));
  HVDC_RETURN_IF_ERROR(in.i32(&p->device_id));
  HVDC_RETURN_IF_ERROR(in.f64(&p->prescale));
  HVDC_RETURN_IF_ERROR(in.f64(&p->postscale));
  return in.u32(&p->flags);
}

Status read_request(WireReader& in, Request* r) {
  HVDC_RETURN_IF_ERROR(in.str(&r->name, kMaxNameLength));
  HVDC_RETURN_IF_ERROR(in.i32(&r->process_set));
  HVDC_RETURN_IF_ERROR(read_params(in, r));
  return in.i64s(&r->shape, HVD_MAX_NDIM);
}

Status read_response(WireReader& in, Response* r) {
  int32_t kind = 0;
  HVDC_RETURN_IF_ERROR(in.i32(&kind));
  HVDC_RETURN_IF_ERROR(check_enum(kind, static_cast<int32_t>(ResponseKind::kError), "response"));
  r->kind = static_cast<ResponseKind>(kind);
  HVDC_RETURN_IF_ERROR(in.i32(&r->process_set));
  HVDC_RETURN_IF_ERROR(read_params(in, r));
  uint32_t n = 0;
  HVDC_RETURN_IF_ERROR(in.count(&n, 4));
  r->names.resize(n);
  for (std::string& name : r->names) HVDC_RETURN_IF_ERROR(in.str(&name, kMaxNameLength));
  HVDC_RETURN_IF_ERROR(in.i32(&r->error_code));
  HVDC_RETURN_IF_ERROR(in.str(&r->error_message, kMaxErrorLength));
  HVDC_RETURN_IF_ERROR(in.i64s(&r->sizes, kMaxSizes));
  return in.i64s(&r->counts, kMaxSizes);
}

void write_responses(WireWriter& out, const ResponseList& list) {
  out.u32(static_cast<uint32_t>(list.responses.size()));
  for (const Response& r : list.responses) {
    out.i32(static_cast<int32_t>(r.kind));
    out.i32(r.process_set);
    write_params(out, r);
    out.u32(static_cast<uint32_t>(r.names.size()));
    for (const std::string& name : r.names) out.str(name);
    out.i32(r.error_code);
    out.str(r.error_message);
    out.i64s(r.sizes);
    out.i64s(r.counts);
  }
}

Status read_responses(WireReader& in, ResponseList* out) {
  uint32_t n = 0;
  HVDC_RETURN_IF_ERROR(in.count(&n, kMinResponseBytes));
  out->responses.resize(n);
  for (Response& r : out->responses) HVDC_RETURN_IF_ERROR(read_response(in, &r));
  return Status::ok();
}

void write_words(WireWriter& out, const std::vector<uint64_t>& words) {
  out.u64s(words);
}

Status read_words(WireReader& in, std::vector<uint64_t>* words) {
  return in.u64s(words, kMaxCacheWords);
}

void write_cache_bits(WireWriter& out, const std::vector<CacheBits>& sets) {
  out.u32(static_cast<uint32_t>(sets.size()));
  for (const CacheBits& bits : sets) {
    out.i32(bits.process_set);
    write_words(out, bits.hits);
    write_words(out, bits.invalid);
  }
}

Status read_cache_bits(WireReader& in, std::vector<CacheBits>* sets) {
  uint32_t n = 0;
  HVDC_RETURN_IF_ERROR(in.count(&n, kMinCacheBitsBytes));
  if (n > kMaxProcessSetsOnWire) {
    return common::make_error(HVD_ERR_INTERNAL, "malformed message: %u process sets", n);
  }
  sets->resize(n);
  for (CacheBits& bits : *sets) {
    HVDC_RETURN_IF_ERROR(in.i32(&bits.process_set));
    HVDC_RETURN_IF_ERROR(read_words(in, &bits.hits));
    HVDC_RETURN_IF_ERROR(read_words(in, &bits.invalid));
  }
  return Status::ok();
}

// Views into the message's bytes: no copy of the inputs.
Status read_round_inputs(WireReader& in, std::vector<RoundInput>* inputs) {
  uint32_t n = 0;
  HVDC_RETURN_IF_ERROR(in.count(&n, kMinRoundInputBytes));
  inputs->resize(n);
  for (RoundInput& input : *inputs) {
    HVDC_RETURN_IF_ERROR(in.i32(&input.process_set));
    HVDC_RETURN_IF_ERROR(in.u32(&input.slot));
    HVDC_RETURN_IF_ERROR(in.view(&input.data, &input.size, kMaxRoundInputBytes));
  }
  return Status::ok();
}

Status semantic_error(const char* what, const std::string& name) {
  return common::make_error(HVD_ERR_INTERNAL, "invalid message from a peer: %s (tensor '%s')", what,
                            name.c_str());
}

bool all_non_negative(const std::vector<int64_t>& values) {
  for (int64_t v : values) {
    if (v < 0) return false;
  }
  return true;
}

bool needs_first_dim(OpType type) {
  return type == OpType::kAllgather || type == OpType::kAlltoall || type == OpType::kReducescatter;
}

}  // namespace

Status check_request(const Request& request) {
  if (!all_non_negative(request.shape)) return semantic_error("negative dimension", request.name);
  if (needs_first_dim(request.op_type) && request.shape.empty()) {
    return semantic_error("no first dimension", request.name);
  }
  return Status::ok();
}

Status check_response(const Response& response) {
  if (response.names.empty()) return semantic_error("response without names", "");
  const std::string& name = response.names[0];
  if (response.kind == ResponseKind::kError) {
    return response.error_code < 0 ? Status::ok()
                                   : semantic_error("error response without an error", name);
  }
  if (response.op_type == OpType::kAllreduce && response.counts.size() != response.names.size()) {
    return semantic_error("allreduce counts do not match its names", name);
  }
  if (!all_non_negative(response.counts) || !all_non_negative(response.sizes)) {
    return semantic_error("negative count or size", name);
  }
  return Status::ok();
}

size_t element_count(const std::vector<int64_t>& shape, size_t from) {
  size_t n = 1;
  for (size_t i = from; i < shape.size(); ++i) n *= static_cast<size_t>(shape[i]);
  return n;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

size_t response_bytes(const Response& response) {
  size_t count = 0;
  for (int64_t c : response.counts) count += static_cast<size_t>(c);
  return count * common::dtype_size(response.dtype);
}

std::string op_label(OpType type) {
  std::string label = op_type_name(type);
  for (char& c : label) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return label;
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
    case OpType::kAlltoall:
      return "ALLTOALL";
    case OpType::kReducescatter:
      return "REDUCESCATTER";
    case OpType::kJoin:
      return "JOIN";
    case OpType::kProcessSetCreate:
      return "PROCESS_SET_CREATE";
    case OpType::kProcessSetDestroy:
      return "PROCESS_SET_DESTROY";
  }
  return "UNKNOWN";
}

namespace {

void write_request(WireWriter& out, const Request& r) {
  out.str(r.name);
  out.i32(r.process_set);
  write_params(out, r);
  out.i64s(r.shape);
}

}  // namespace

std::string encode(const RequestList& list) {
  WireWriter out;
  out.u32(static_cast<uint32_t>(list.requests.size()));
  for (const Request& r : list.requests) write_request(out, r);
  return out.take();
}

std::string encode(const ResponseList& list) {
  WireWriter out;
  write_responses(out, list);
  return out.take();
}

std::string encode(const RoundMessage& msg, std::string reuse) {
  WireWriter out(std::move(reuse));
  size_t input_bytes = 0;
  for (const RoundInput& input : msg.inputs) input_bytes += 12 + input.size;
  out.reserve(512 + input_bytes);  // a warm step's round (a few sets' bits) in one allocation
  out.i64(static_cast<int64_t>(msg.round));
  write_cache_bits(out, msg.sets);
  out.i32(msg.joined);
  write_responses(out, msg.responses);
  out.u32(static_cast<uint32_t>(msg.inputs.size()));
  for (const RoundInput& input : msg.inputs) {
    out.i32(input.process_set);
    out.u32(input.slot);
    out.u32(input.size);
    out.bytes(input.data, input.size);
  }
  return out.take();
}

std::string encode(const TreeMessage& msg) {
  WireWriter out;
  out.i32(static_cast<int32_t>(msg.kind));
  out.i64(static_cast<int64_t>(msg.round));
  out.i32(msg.open_next);
  out.u32(static_cast<uint32_t>(msg.entries.size()));
  for (const TreeEntry& e : msg.entries) {
    out.i32(e.rank);
    out.str(e.bytes);
  }
  return out.take();
}

std::string encode(const Terminate& msg) {
  WireWriter out;
  out.i32(msg.code);
  out.i32(msg.rank);
  out.str(msg.reason);
  out.i64s(msg.completed_ops);
  return out.take();
}

std::string encode(const StallReport& msg) {
  WireWriter out;
  out.i64s(msg.waiting_for);
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
  HVDC_RETURN_IF_ERROR(read_responses(in, out));
  return in.finish();
}

Status decode(const std::string& bytes, RoundMessage* out) {
  WireReader in(bytes, "round message");
  int64_t round = 0;
  HVDC_RETURN_IF_ERROR(in.i64(&round));
  out->round = static_cast<uint64_t>(round);
  HVDC_RETURN_IF_ERROR(read_cache_bits(in, &out->sets));
  HVDC_RETURN_IF_ERROR(in.i32(&out->joined));
  HVDC_RETURN_IF_ERROR(read_responses(in, &out->responses));
  HVDC_RETURN_IF_ERROR(read_round_inputs(in, &out->inputs));
  return in.finish();
}

Status decode(const std::string& bytes, TreeMessage* out) {
  WireReader in(bytes, "tree round message");
  int32_t kind = 0;
  HVDC_RETURN_IF_ERROR(in.i32(&kind));
  HVDC_RETURN_IF_ERROR(check_enum(kind, kMaxTreeKind, "tree message kind"));
  out->kind = static_cast<TreeKind>(kind);
  int64_t round = 0;
  HVDC_RETURN_IF_ERROR(in.i64(&round));
  out->round = static_cast<uint64_t>(round);
  HVDC_RETURN_IF_ERROR(in.i32(&out->open_next));
  uint32_t n = 0;
  HVDC_RETURN_IF_ERROR(in.count(&n, 4 + 4));
  if (n > static_cast<uint32_t>(transport::kMaxRanks)) {
    return common::make_error(HVD_ERR_INTERNAL, "malformed message: %u tree entries", n);
  }
  out->entries.resize(n);
  for (TreeEntry& e : out->entries) {
    HVDC_RETURN_IF_ERROR(in.i32(&e.rank));
    HVDC_RETURN_IF_ERROR(in.str(&e.bytes, kMaxTreeEntryBytes));
  }
  return in.finish();
}

Status decode(const std::string& bytes, Terminate* out) {
  WireReader in(bytes, "terminate notice");
  HVDC_RETURN_IF_ERROR(in.i32(&out->code));
  HVDC_RETURN_IF_ERROR(in.i32(&out->rank));
  HVDC_RETURN_IF_ERROR(in.str(&out->reason, kMaxReasonLength));
  HVDC_RETURN_IF_ERROR(in.i64s(&out->completed_ops, 2 * kMaxProcessSetsOnWire));
  return in.finish();
}

Status decode(const std::string& bytes, StallReport* out) {
  WireReader in(bytes, "stall report");
  HVDC_RETURN_IF_ERROR(in.i64s(&out->waiting_for, transport::kMaxRanks));
  return in.finish();
}

}  // namespace hvdc::core
