#include "bootstrap/tcp/protocol.h"

#include "bootstrap/tcp/frame.h"
#include "common/wire.h"

namespace hvdc::bootstrap {

using common::make_error;
using common::WireReader;
using common::WireWriter;

namespace {

constexpr size_t kMaxErrorBytes = 1024;
// Smallest encoded key or value: its u32 length.
constexpr size_t kMinStringBytes = 4;

Status decode_get(WireReader& in, StoreRequest* out) {
  HVDC_RETURN_IF_ERROR(in.i64(&out->timeout_ms));
  uint32_t count = 0;
  HVDC_RETURN_IF_ERROR(in.count(&count, kMinStringBytes));
  if (count == 0 || count > kStoreMaxKeysPerGet) {
    return make_error(HVD_ERR_BOOTSTRAP, "get of %u keys (1 to %u allowed)", count,
                      kStoreMaxKeysPerGet);
  }
  out->keys.resize(count);
  for (std::string& key : out->keys) {
    HVDC_RETURN_IF_ERROR(in.str(&key, kStoreMaxKeyBytes));
    HVDC_RETURN_IF_ERROR(check_key(key));
  }
  return Status::ok();
}

}  // namespace

Status check_key(const std::string& key) {
  if (key.empty() || key.size() > kStoreMaxKeyBytes) {
    return make_error(HVD_ERR_BOOTSTRAP, "store key of %zu bytes (1 to %u allowed)", key.size(),
                      kStoreMaxKeyBytes);
  }
  return Status::ok();
}

std::string encode_request(const StoreRequest& request) {
  WireWriter out;
  out.u8(static_cast<uint8_t>(request.op));
  switch (request.op) {
    case StoreOp::kHello:
      out.str(request.client_nonce);
      out.i32(request.rank);
      break;
    case StoreOp::kSet:
      out.str(request.key);
      out.str(request.value);
      out.u32(request.reads);
      break;
    case StoreOp::kGet:
      out.i64(request.timeout_ms);
      out.u32(static_cast<uint32_t>(request.keys.size()));
      for (const std::string& key : request.keys) out.str(key);
      break;
  }
  return out.take();
}

Status decode_request(const std::string& payload, StoreRequest* out) {
  WireReader in(payload, "store request");
  uint8_t op = 0;
  HVDC_RETURN_IF_ERROR(in.u8(&op));
  out->op = static_cast<StoreOp>(op);
  switch (out->op) {
    case StoreOp::kHello:
      HVDC_RETURN_IF_ERROR(in.str(&out->client_nonce, kStoreNonceBytes));
      if (out->client_nonce.size() != kStoreNonceBytes) {
        return make_error(HVD_ERR_BOOTSTRAP, "hello with a nonce of %zu bytes",
                          out->client_nonce.size());
      }
      HVDC_RETURN_IF_ERROR(in.i32(&out->rank));
      break;
    case StoreOp::kSet:
      HVDC_RETURN_IF_ERROR(in.str(&out->key, kStoreMaxKeyBytes));
      HVDC_RETURN_IF_ERROR(check_key(out->key));
      HVDC_RETURN_IF_ERROR(in.str(&out->value, kStoreMaxValueBytes));
      HVDC_RETURN_IF_ERROR(in.u32(&out->reads));
      break;
    case StoreOp::kGet:
      HVDC_RETURN_IF_ERROR(decode_get(in, out));
      break;
    default:
      return make_error(HVD_ERR_BOOTSTRAP, "unknown store request %u", op);
  }
  return in.finish();
}

std::string encode_reply(const StoreReply& reply) {
  WireWriter out;
  out.u8(static_cast<uint8_t>(reply.kind));
  switch (reply.kind) {
    case StoreReplyKind::kOk:
      break;
    case StoreReplyKind::kValues:
      out.u32(static_cast<uint32_t>(reply.values.size()));
      for (const std::string& value : reply.values) out.str(value);
      break;
    case StoreReplyKind::kTimedOut:
      out.u32(static_cast<uint32_t>(reply.missing.size()));
      for (uint32_t index : reply.missing) out.u32(index);
      break;
    case StoreReplyKind::kError:
      out.str(reply.error.substr(0, kMaxErrorBytes));
      break;
  }
  return out.take();
}

size_t values_reply_bytes(const std::vector<std::string>& values) {
  size_t bytes = 1 + 4;
  for (const std::string& value : values) bytes += 4 + value.size();
  return bytes;
}

Status decode_reply(const std::string& payload, size_t keys_asked, StoreReply* out) {
  WireReader in(payload, "store reply");
  uint8_t kind = 0;
  HVDC_RETURN_IF_ERROR(in.u8(&kind));
  out->kind = static_cast<StoreReplyKind>(kind);
  uint32_t count = 0;
  switch (out->kind) {
    case StoreReplyKind::kOk:
      break;
    case StoreReplyKind::kValues:
      HVDC_RETURN_IF_ERROR(in.count(&count, kMinStringBytes));
      if (count != keys_asked) {
        return make_error(HVD_ERR_BOOTSTRAP, "store sent %u values for %zu keys", count,
                          keys_asked);
      }
      out->values.resize(count);
      for (std::string& value : out->values) {
        HVDC_RETURN_IF_ERROR(in.str(&value, kStoreMaxValueBytes));
      }
      break;
    case StoreReplyKind::kTimedOut:
      HVDC_RETURN_IF_ERROR(in.count(&count, sizeof(uint32_t)));
      if (count > keys_asked) return make_error(HVD_ERR_BOOTSTRAP, "store named too many keys");
      out->missing.resize(count);
      for (uint32_t& index : out->missing) {
        HVDC_RETURN_IF_ERROR(in.u32(&index));
        if (index >= keys_asked) return make_error(HVD_ERR_BOOTSTRAP, "store named a bad key");
      }
      break;
    case StoreReplyKind::kError:
      HVDC_RETURN_IF_ERROR(in.str(&out->error, kMaxErrorBytes));
      break;
    default:
      return make_error(HVD_ERR_BOOTSTRAP, "unknown store reply %u", kind);
  }
  return in.finish();
}

}  // namespace hvdc::bootstrap
