// Seeds for the wire fuzz target: a few valid encodings of every message kind, built with the
// real encoders so that they follow the format as it changes (a checked-in corpus would go
// stale). Small on purpose: libFuzzer grows the corpus from them.
#include <cstring>

#include "bootstrap/tcp/frame.h"
#include "bootstrap/tcp/protocol.h"
#include "core/message.h"
#include "hvdc.h"
#include "wire_fuzz.h"

namespace hvdc::fuzz {

namespace {

namespace bs = hvdc::bootstrap;
using core::OpType;
using core::Request;
using core::Response;
using core::ResponseKind;

std::string with_kind(WireKind kind, const std::string& body, int extra = -1) {
  std::string out(1, static_cast<char>(kind));
  if (extra >= 0) out.push_back(static_cast<char>(extra));
  return out + body;
}

core::RequestList sample_requests() {
  core::RequestList list;
  Request a;
  a.name = "layer0/weight";
  a.dtype = HVD_FLOAT32;
  a.reduce_op = HVD_OP_SUM;
  a.shape = {4, 3};
  Request b = a;
  b.name = "gather";
  b.op_type = OpType::kAllgather;
  b.prescale = 0.5;
  Request c;
  c.name = "ps.create.0";
  c.op_type = OpType::kProcessSetCreate;
  c.shape = {0, 2};
  list.requests = {a, b, c};
  return list;
}

core::ResponseList sample_responses() {
  core::ResponseList list;
  Response fused;
  fused.names = {"grad/a", "grad/b"};
  fused.dtype = HVD_BFLOAT16;
  fused.reduce_op = HVD_OP_AVERAGE;
  fused.counts = {12, 1};
  Response gather;
  gather.op_type = OpType::kAllgather;
  gather.process_set = 1;
  gather.names = {"gather"};
  gather.sizes = {3, 0, 7};
  Response error;
  error.kind = ResponseKind::kError;
  error.op_type = OpType::kBroadcast;
  error.names = {"bcast"};
  error.error_code = HVD_ERR_MISMATCH;
  error.error_message = "Mismatched BROADCAST root rank for tensor 'bcast'";
  list.responses = {fused, gather, error};
  return list;
}

core::RoundMessage sample_round() {
  core::RoundMessage msg;
  msg.round = 42;
  core::CacheBits bits;
  bits.hits = {0x8000000000000001ull, 5};
  bits.invalid = {0, 2};
  core::CacheBits other;
  other.process_set = 3;
  other.hits = {1};
  msg.sets = {bits, other};
  msg.joined = 1;
  msg.responses = sample_responses();
  static const char kInput[] = {1, 2, 3, 4, 5, 6, 7, 8};
  core::RoundInput input;
  input.slot = 1;
  input.data = kInput;
  input.size = sizeof(kInput);
  msg.inputs = {input};
  return msg;
}

std::vector<bs::StoreRequest> sample_store_requests() {
  bs::StoreRequest hello;
  hello.op = bs::StoreOp::kHello;
  hello.client_nonce.assign(bs::kStoreNonceBytes, static_cast<char>(kFuzzClientNonce));
  hello.rank = 3;
  bs::StoreRequest set;
  set.key = "hvdc/allgather/1/0";
  set.value = "value";
  set.reads = 2;
  bs::StoreRequest get;
  get.op = bs::StoreOp::kGet;
  get.keys = {"hvdc/allgather/1/1", "hvdc/allgather/1/2"};
  get.timeout_ms = 1000;
  return {hello, set, get};
}

std::vector<bs::StoreReply> sample_store_replies() {
  bs::StoreReply ok;
  bs::StoreReply values;
  values.kind = bs::StoreReplyKind::kValues;
  values.values = {"a", ""};
  bs::StoreReply timed_out;
  timed_out.kind = bs::StoreReplyKind::kTimedOut;
  timed_out.missing = {1};
  bs::StoreReply error;
  error.kind = bs::StoreReplyKind::kError;
  error.error = "get of 0 keys";
  return {ok, values, timed_out, error};
}

// Frames as one end of a fuzz connection sends them (see wire_fuzz.cc).
std::string frames(const std::vector<std::string>& payloads, bool authenticated, bool to_client) {
  uint8_t server_nonce[bs::kStoreNonceBytes];
  uint8_t client_nonce[bs::kStoreNonceBytes];
  std::memset(server_nonce, kFuzzServerNonce, sizeof(server_nonce));
  std::memset(client_nonce, kFuzzClientNonce, sizeof(client_nonce));
  bs::FrameChannel sender;
  sender.start(authenticated ? kFuzzSecret : "", server_nonce, client_nonce, to_client);
  std::string out;
  for (const std::string& payload : payloads) out += sender.seal(payload);
  return out;
}

void add_frame_seeds(std::vector<std::string>* seeds) {
  std::vector<std::string> requests;
  for (const bs::StoreRequest& r : sample_store_requests())
    requests.push_back(bs::encode_request(r));
  std::vector<std::string> replies;
  for (const bs::StoreReply& r : sample_store_replies()) replies.push_back(bs::encode_reply(r));
  for (bool authenticated : {false, true}) {
    const int auth = authenticated ? kFrameAuthenticated : 0;
    // Limit index 2 is the store's frame limit; 0 the hello limit.
    seeds->push_back(with_kind(kFrameStream, frames({requests[0]}, authenticated, false), auth));
    seeds->push_back(with_kind(kFrameStream, frames(requests, authenticated, false), 2 | auth));
    seeds->push_back(
        with_kind(kFrameStream, frames(replies, authenticated, true), 2 | auth | kFrameToClient));
  }
}

}  // namespace

std::vector<std::string> wire_seeds() {
  std::vector<std::string> seeds;
  seeds.push_back(with_kind(kRequestList, core::encode(sample_requests())));
  seeds.push_back(with_kind(kRequestList, core::encode(core::RequestList())));
  seeds.push_back(with_kind(kResponseList, core::encode(sample_responses())));
  seeds.push_back(with_kind(kRoundMessage, core::encode(sample_round())));
  seeds.push_back(with_kind(kRoundMessage, core::encode(core::RoundMessage())));
  core::Terminate notice{HVD_ERR_SHUT_DOWN, 1, "rank 1 shut down", {0, 17, 2, 3}};
  seeds.push_back(with_kind(kTerminate, core::encode(notice)));
  seeds.push_back(with_kind(kStallReport, core::encode(core::StallReport{{1, 3}})));
  seeds.push_back(with_kind(kStallReport, core::encode(core::StallReport{})));
  core::TreeMessage down{core::TreeKind::kDown, 7, 1, {}};
  down.entries.push_back(core::TreeEntry{0, core::encode(sample_round())});
  down.entries.push_back(core::TreeEntry{1, core::encode(core::RoundMessage())});
  seeds.push_back(with_kind(kTreeMessage, core::encode(down)));
  seeds.push_back(with_kind(kTreeMessage, core::encode(core::TreeMessage{})));
  for (const bs::StoreRequest& r : sample_store_requests()) {
    seeds.push_back(with_kind(kStoreRequest, bs::encode_request(r)));
  }
  for (const bs::StoreReply& r : sample_store_replies()) {
    seeds.push_back(with_kind(kStoreReply, bs::encode_reply(r), 2));
  }
  bs::ServerHello hello;
  hello.authenticated = true;
  std::memset(hello.nonce, kFuzzServerNonce, sizeof(hello.nonce));
  seeds.push_back(with_kind(kServerHello, bs::encode_server_hello(hello)));
  add_frame_seeds(&seeds);
  return seeds;
}

}  // namespace hvdc::fuzz
