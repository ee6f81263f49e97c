// libFuzzer target for every decoder of bytes from the network (layout in wire_fuzz.h). It must
// never crash; a decode that succeeds must re-encode to exactly the input (the encoding is
// canonical) and decode again to an equal message, else it aborts. scripts/fuzz.sh builds it
// with clang and -fsanitize=fuzzer,address,undefined; the gcc-built meson test
// 'wire-fuzz-regressions' replays the seeds and tests/fuzz/regressions/ through it.
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bootstrap/tcp/frame.h"
#include "bootstrap/tcp/protocol.h"
#include "core/message.h"
#include "hvdc.h"
#include "wire_fuzz.h"

namespace hvdc::fuzz {

namespace {

namespace bs = hvdc::bootstrap;
using common::Status;

[[noreturn]] void fail(const char* kind, const char* what) {
  std::fprintf(stderr, "wire fuzz: %s: %s\n", kind, what);
  std::abort();
}

void require(bool ok, const char* kind, const char* what) {
  if (!ok) fail(kind, what);
}

// Bitwise, so that a NaN read from the wire equals itself.
bool same(double a, double b) {
  return std::memcmp(&a, &b, sizeof(a)) == 0;
}

bool equal(const core::Request& a, const core::Request& b) {
  return a.name == b.name && a.process_set == b.process_set && a.op_type == b.op_type &&
         a.dtype == b.dtype && a.reduce_op == b.reduce_op && a.root == b.root &&
         a.device_type == b.device_type && a.device_id == b.device_id &&
         same(a.prescale, b.prescale) && same(a.postscale, b.postscale) && a.shape == b.shape;
}

bool equal(const core::Response& a, const core::Response& b) {
  return a.kind == b.kind && a.process_set == b.process_set && a.op_type == b.op_type &&
         a.names == b.names && a.error_code == b.error_code && a.error_message == b.error_message &&
         a.sizes == b.sizes && a.dtype == b.dtype && a.reduce_op == b.reduce_op &&
         a.root == b.root && a.device_type == b.device_type && a.device_id == b.device_id &&
         same(a.prescale, b.prescale) && same(a.postscale, b.postscale) && a.counts == b.counts;
}

bool equal(const core::CacheBits& a, const core::CacheBits& b) {
  return a.process_set == b.process_set && a.hits == b.hits && a.invalid == b.invalid;
}

template <typename T>
bool equal(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!equal(a[i], b[i])) return false;
  }
  return true;
}

bool equal(const core::RequestList& a, const core::RequestList& b) {
  return equal(a.requests, b.requests);
}

bool equal(const core::ResponseList& a, const core::ResponseList& b) {
  return equal(a.responses, b.responses);
}

bool equal(const core::RoundMessage& a, const core::RoundMessage& b) {
  return a.round == b.round && equal(a.sets, b.sets) && a.joined == b.joined &&
         equal(a.responses, b.responses);
}

bool equal(const core::Terminate& a, const core::Terminate& b) {
  return a.code == b.code && a.rank == b.rank && a.reason == b.reason &&
         a.completed_ops == b.completed_ops;
}

bool equal(const core::StallReport& a, const core::StallReport& b) {
  return a.waiting_for == b.waiting_for;
}

bool equal(const core::TreeMessage& a, const core::TreeMessage& b) {
  if (a.kind != b.kind || a.round != b.round || a.open_next != b.open_next ||
      a.entries.size() != b.entries.size()) {
    return false;
  }
  for (size_t i = 0; i < a.entries.size(); ++i) {
    if (a.entries[i].rank != b.entries[i].rank || a.entries[i].bytes != b.entries[i].bytes) {
      return false;
    }
  }
  return true;
}

bool equal(const bs::StoreRequest& a, const bs::StoreRequest& b) {
  return a.op == b.op && a.client_nonce == b.client_nonce && a.rank == b.rank && a.key == b.key &&
         a.value == b.value && a.reads == b.reads && a.keys == b.keys &&
         a.timeout_ms == b.timeout_ms;
}

bool equal(const bs::StoreReply& a, const bs::StoreReply& b) {
  return a.kind == b.kind && a.values == b.values && a.missing == b.missing && a.error == b.error;
}

bool equal(const bs::ServerHello& a, const bs::ServerHello& b) {
  return a.authenticated == b.authenticated && std::memcmp(a.nonce, b.nonce, sizeof(a.nonce)) == 0;
}

// Decodes `in`; on success requires the canonical round trip. Returns whether it decoded.
template <typename T, typename Decode, typename Encode>
bool round_trip(const char* kind, const std::string& in, Decode decode, Encode encode, T* out) {
  Status st = decode(in, out);
  if (!st.is_ok()) {
    require(!st.message().empty(), kind, "an error without a message");
    return false;
  }
  const std::string again = encode(*out);
  require(again == in, kind, "re-encoding differs from the input");
  T back;
  require(decode(again, &back).is_ok(), kind, "the re-encoded message does not decode");
  require(equal(*out, back), kind, "decoding again gives a different message");
  return true;
}

// What the engine checks before acting on a decoded message must hold up to any input too.
void check_limits(const core::RequestList& list) {
  for (const core::Request& r : list.requests) {
    require(r.name.size() <= core::kMaxNameLength, "request", "name over the limit");
    require(r.shape.size() <= HVD_MAX_NDIM, "request", "ndim over the limit");
    (void)core::check_request(r);
  }
}

void check_limits(const core::ResponseList& list) {
  for (const core::Response& r : list.responses) (void)core::check_response(r);
}

void fuzz_core(WireKind kind, const std::string& in) {
  auto dec = [](const std::string& bytes, auto* out) { return core::decode(bytes, out); };
  auto enc = [](const auto& msg) { return core::encode(msg); };
  if (kind == kRequestList) {
    core::RequestList list;
    if (round_trip("request list", in, dec, enc, &list)) check_limits(list);
  } else if (kind == kResponseList) {
    core::ResponseList list;
    if (round_trip("response list", in, dec, enc, &list)) check_limits(list);
  } else if (kind == kRoundMessage) {
    core::RoundMessage msg;
    if (round_trip("round message", in, dec, enc, &msg)) check_limits(msg.responses);
  } else if (kind == kStallReport) {
    core::StallReport report;
    round_trip("stall report", in, dec, enc, &report);
  } else if (kind == kTreeMessage) {
    core::TreeMessage msg;
    round_trip("tree message", in, dec, enc, &msg);
  } else {
    core::Terminate notice;
    round_trip("terminate", in, dec, enc, &notice);
  }
}

void fuzz_store_request(const std::string& in) {
  bs::StoreRequest request;
  round_trip("store request", in, bs::decode_request, bs::encode_request, &request);
}

void fuzz_store_reply(const std::string& in, size_t keys_asked) {
  auto dec = [keys_asked](const std::string& bytes, bs::StoreReply* out) {
    return bs::decode_reply(bytes, keys_asked, out);
  };
  bs::StoreReply reply;
  round_trip("store reply", in, dec, bs::encode_reply, &reply);
}

void fuzz_server_hello(const std::string& in) {
  bs::ServerHello hello;
  round_trip("server hello", in, bs::decode_server_hello, bs::encode_server_hello, &hello);
}

// A connected pair of non-blocking stream sockets; [1] is the sending end.
struct SocketPair {
  int fd[2] = {-1, -1};
  SocketPair() {
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fd) != 0) fail("frames", "socketpair");
  }
  ~SocketPair() {
    for (int f : fd) {
      if (f >= 0) close(f);
    }
  }
  // Sends what the socket buffer takes, then ends the stream; returns what was sent.
  std::string send_and_close(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = send(fd[1], bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    close(fd[1]);
    fd[1] = -1;
    return bytes.substr(0, sent);
  }
};

void start_channel(bs::FrameChannel* channel, bool authenticated, bool is_server) {
  uint8_t server_nonce[bs::kStoreNonceBytes];
  uint8_t client_nonce[bs::kStoreNonceBytes];
  std::memset(server_nonce, kFuzzServerNonce, sizeof(server_nonce));
  std::memset(client_nonce, kFuzzClientNonce, sizeof(client_nonce));
  channel->start(authenticated ? kFuzzSecret : "", server_nonce, client_nonce, is_server);
}

// Seals a payload on an authenticated channel, reads it back through FrameReader and opens it:
// the frame layer's own round trip.
void sealed_round_trip(const std::string& payload, bool to_client) {
  if (payload.size() > 16 * 1024) return;  // stays within any socket buffer
  bs::FrameChannel sender, receiver;
  start_channel(&sender, true, to_client);
  start_channel(&receiver, true, !to_client);
  SocketPair pair;
  const std::string frame = sender.seal(payload);
  require(pair.send_and_close(frame) == frame, "frames", "short send");
  bs::FrameReader reader(bs::kStoreMaxFrameBytes);
  bs::FrameReader::Result result;
  require(reader.read(pair.fd[0], &result).is_ok(), "frames", "a sealed frame does not read");
  require(result == bs::FrameReader::Result::kFrame, "frames", "a sealed frame is incomplete");
  std::string body = reader.take_body();
  require(receiver.open(&body), "frames", "a sealed frame fails its MAC");
  require(body == payload, "frames", "a sealed frame reads back different");
}

void on_payload(const std::string& payload, bool to_client, bool* sealed_checked) {
  if (to_client) {
    fuzz_store_reply(payload, 2);
  } else {
    fuzz_store_request(payload);
  }
  if (!*sealed_checked) {
    *sealed_checked = true;
    sealed_round_trip(payload, to_client);
  }
}

// Reads the input as a store connection's byte stream, frame after frame, until the stream
// ends, a frame exceeds the limit, or a MAC fails (the store drops the connection then).
void fuzz_frames(uint8_t mode, const std::string& in) {
  constexpr uint32_t kLimits[4] = {bs::kStoreMaxHelloFrameBytes, 4096, bs::kStoreMaxFrameBytes, 0};
  const uint32_t limit = kLimits[mode & kFrameLimitMask];
  const bool to_client = (mode & kFrameToClient) != 0;
  bs::FrameChannel channel, plain;
  start_channel(&channel, (mode & kFrameAuthenticated) != 0, !to_client);
  start_channel(&plain, false, to_client);
  SocketPair pair;
  const std::string sent = pair.send_and_close(in);
  bs::FrameReader reader(limit);
  size_t offset = 0;
  bool sealed_checked = false;
  for (;;) {
    bs::FrameReader::Result result;
    Status st = reader.read(pair.fd[0], &result);
    require(reader.largest_buffer() <= limit, "frames", "a buffer beyond the limit");
    if (!st.is_ok()) break;  // a frame over the limit
    require(result != bs::FrameReader::Result::kPending, "frames", "pending on an ended stream");
    if (result == bs::FrameReader::Result::kClosed) {
      require(reader.mid_frame() || offset == sent.size(), "frames", "bytes left unread");
      break;
    }
    std::string body = reader.take_body();
    require(plain.seal(body) == sent.substr(offset, 4 + body.size()), "frames",
            "a frame differs from the bytes it was read from");
    offset += 4 + body.size();
    if (!channel.open(&body)) break;
    on_payload(body, to_client, &sealed_checked);
  }
}

}  // namespace

}  // namespace hvdc::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hvdc::fuzz;
  if (size == 0) return 0;
  const auto kind = static_cast<WireKind>(data[0] % kWireKinds);
  const bool has_extra = kind == kStoreReply || kind == kFrameStream;
  if (has_extra && size < 2) return 0;
  const size_t skip = has_extra ? 2 : 1;
  const std::string in(reinterpret_cast<const char*>(data) + skip, size - skip);
  switch (kind) {
    case kStoreRequest:
      fuzz_store_request(in);
      break;
    case kStoreReply:
      fuzz_store_reply(in, data[1]);
      break;
    case kServerHello:
      fuzz_server_hello(in);
      break;
    case kFrameStream:
      fuzz_frames(data[1], in);
      break;
    default:
      fuzz_core(kind, in);
      break;
  }
  return 0;
}

// WIRE_FUZZ_WRITE_SEEDS=DIR: write the seeds into DIR and exit (scripts/fuzz.sh seeds the
// corpus this way, from the binary it fuzzes).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("WIRE_FUZZ_WRITE_SEEDS");
  if (dir == nullptr) return 0;
  const std::vector<std::string> seeds = hvdc::fuzz::wire_seeds();
  for (size_t i = 0; i < seeds.size(); ++i) {
    const std::string path = std::string(dir) + "/seed-" + std::to_string(i);
    FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr || std::fwrite(seeds[i].data(), 1, seeds[i].size(), f) != seeds[i].size()) {
      std::fprintf(stderr, "wire fuzz: cannot write %s\n", path.c_str());
      std::exit(1);
    }
    std::fclose(f);
  }
  std::printf("wire fuzz: wrote %zu seeds to %s\n", seeds.size(), dir);
  std::exit(0);
}
