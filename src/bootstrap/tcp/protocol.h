// The rendezvous store's messages (frame payloads): requests from ranks, replies from the store.
// Decoding checks every count and length against the store's limits before allocating.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace hvdc::bootstrap {

using common::Status;

enum class StoreOp : uint8_t {
  kHello = 1,  // client nonce and rank; must be the first frame and only the first
  kSet = 2,    // key, value, read budget
  kGet = 3,    // keys and a timeout: answered when every key is present, or at the timeout
};

enum class StoreReplyKind : uint8_t {
  kOk = 1,        // hello accepted, value stored
  kValues = 2,    // one value per key asked, in order
  kTimedOut = 3,  // the indices of the keys still missing at the timeout
  kError = 4,     // a request the store understood but cannot serve
};

struct StoreRequest {
  StoreOp op = StoreOp::kSet;
  std::string client_nonce;       // kHello: kStoreNonceBytes bytes
  int32_t rank = -1;              // kHello: for the store's log lines
  std::string key;                // kSet
  std::string value;              // kSet
  uint32_t reads = 0;             // kSet: erased after this many deliveries; 0 keeps it
  std::vector<std::string> keys;  // kGet
  int64_t timeout_ms = 0;         // kGet: <= 0 waits without a limit
};

struct StoreReply {
  StoreReplyKind kind = StoreReplyKind::kOk;
  std::vector<std::string> values;  // kValues
  std::vector<uint32_t> missing;    // kTimedOut
  std::string error;                // kError
};

std::string encode_request(const StoreRequest& request);
Status decode_request(const std::string& payload, StoreRequest* out);

std::string encode_reply(const StoreReply& reply);
// keys_asked: the number of keys of the request this answers; a kValues reply must hold exactly
// that many values and a kTimedOut reply only indices below it.
Status decode_reply(const std::string& payload, size_t keys_asked, StoreReply* out);

// Size of the payload encode_reply would produce for these values.
size_t values_reply_bytes(const std::vector<std::string>& values);

// Checks a key against the limits (non-empty, at most kStoreMaxKeyBytes).
Status check_key(const std::string& key);

}  // namespace hvdc::bootstrap
