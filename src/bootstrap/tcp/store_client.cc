// A rank's connection to the rendezvous store: connect with backoff, check the greeting,
// authenticate both ways, then one request and one reply at a time.
#include <algorithm>
#include <chrono>
#include <string>

#include "bootstrap/tcp/frame.h"
#include "bootstrap/tcp/protocol.h"
#include "bootstrap/tcp/socket.h"
#include "bootstrap/tcp/store.h"

namespace hvdc::bootstrap {

using common::make_error;
using common::strfmt;

namespace {

// The handshake gets at least this long even under a short connect timeout: the store answers
// within milliseconds, but a loaded machine may be slow to schedule it.
constexpr double kMinHandshakeSeconds = 10;
// A get's socket deadline exceeds the wait the store enforces by this much, so the store's
// answer (naming the missing keys) normally arrives first.
constexpr double kReplyGraceSeconds = 10;
// Longer timeouts (about 116 days) are treated as this, so converting them to the clock's
// nanoseconds or to milliseconds cannot overflow.
constexpr double kMaxTimeoutSeconds = 1e7;

Clock::time_point after(double seconds) {
  if (seconds <= 0) return Clock::time_point::max();
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(std::min(seconds, kMaxTimeoutSeconds)));
}

}  // namespace

class StoreClient::Connection {
 public:
  Connection(const StoreClientOptions& options, Fd fd)
      : options_(options),
        endpoint_(format_endpoint(options.host, options.port)),
        fd_(std::move(fd)) {}

  const std::string& endpoint() const { return endpoint_; }
  double timeout_seconds() const { return options_.timeout_seconds; }
  Status handshake();
  // Sends one request and reads its reply. A kError reply is returned as an error; the
  // connection stays usable.
  Status call(const StoreRequest& request, Clock::time_point deadline, size_t keys_asked,
              StoreReply* reply);
  // An HVD_ERR_BOOTSTRAP error naming the rank and the store.
  Status error(const std::string& what) const;

 private:
  Status read_exact(std::string* out, size_t n, Clock::time_point deadline);
  Status read_frame(Clock::time_point deadline, std::string* body);
  Status send(const std::string& payload, Clock::time_point deadline);
  Status fail(const Status& st) {
    if (broken_.is_ok()) broken_ = st;
    fd_.reset();
    return broken_;
  }

  StoreClientOptions options_;
  std::string endpoint_;
  Fd fd_;
  FrameReader reader_{kStoreMaxFrameBytes};
  FrameChannel channel_;
  Status broken_;
};

Status StoreClient::Connection::error(const std::string& what) const {
  return Status(
      HVD_ERR_BOOTSTRAP,
      strfmt("rank %d, rendezvous store at %s: ", options_.rank, endpoint_.c_str()) + what);
}

Status StoreClient::Connection::read_exact(std::string* out, size_t n, Clock::time_point deadline) {
  out->assign(n, '\0');
  size_t have = 0;
  while (have < n) {
    bool ready = false;
    HVDC_RETURN_IF_ERROR(wait_readable(fd_.get(), deadline, &ready));
    if (!ready) return error("no greeting from the store in time");
    const ssize_t got = ::recv(fd_.get(), &(*out)[have], n - have, 0);
    if (got == 0) return error("the store closed the connection before greeting");
    if (got < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
      return error("recv failed: " + errno_text(errno));
    }
    if (got > 0) have += static_cast<size_t>(got);
  }
  return Status::ok();
}

Status StoreClient::Connection::read_frame(Clock::time_point deadline, std::string* body) {
  for (;;) {
    FrameReader::Result result;
    Status st = reader_.read(fd_.get(), &result);
    if (!st.is_ok()) return fail(error(st.message()));
    if (result == FrameReader::Result::kFrame) {
      *body = reader_.take_body();
      return Status::ok();
    }
    if (result == FrameReader::Result::kClosed) {
      return fail(error("the store closed the connection (has rank 0 exited?)"));
    }
    bool ready = false;
    HVDC_RETURN_IF_ERROR(wait_readable(fd_.get(), deadline, &ready));
    if (!ready) return fail(error("no reply from the store in time"));
  }
}

Status StoreClient::Connection::send(const std::string& payload, Clock::time_point deadline) {
  const std::string frame = channel_.seal(payload);
  Status st = write_all(fd_.get(), frame.data(), frame.size(), deadline);
  if (!st.is_ok()) return fail(error(st.message()));
  return Status::ok();
}

Status StoreClient::Connection::handshake() {
  const Clock::time_point deadline =
      after(std::max(options_.timeout_seconds, kMinHandshakeSeconds));
  std::string greeting;
  HVDC_RETURN_IF_ERROR(read_exact(&greeting, kServerHelloBytes, deadline));
  ServerHello server;
  Status st = decode_server_hello(greeting, &server);
  if (!st.is_ok()) return error(st.message());
  const bool have_secret = !options_.secret.empty();
  // Never fall back to no authentication when this rank has a secret: an impostor could offer
  // exactly that.
  if (have_secret && !server.authenticated) {
    return error(
        "the store does not authenticate but this rank has HVDC_SECRET set; is "
        "another job's store on this port?");
  }
  StoreRequest hello;
  hello.op = StoreOp::kHello;
  hello.rank = options_.rank;
  hello.client_nonce.resize(kStoreNonceBytes);
  HVDC_RETURN_IF_ERROR(random_bytes(&hello.client_nonce[0], kStoreNonceBytes));
  channel_.start(options_.secret, server.nonce,
                 reinterpret_cast<const uint8_t*>(hello.client_nonce.data()), false);
  // Sent even without a secret toward a store that wants one, so that the store logs the
  // refusal where the operator looks.
  HVDC_RETURN_IF_ERROR(send(encode_request(hello), deadline));
  if (!have_secret && server.authenticated) {
    return fail(error("the store requires HVDC_SECRET, which this rank does not have"));
  }
  std::string body;
  st = read_frame(deadline, &body);
  if (!st.is_ok()) {
    return have_secret ? Status(st.code(), st.message() + " (refused: wrong HVDC_SECRET?)") : st;
  }
  StoreReply reply;
  if (!channel_.open(&body)) {
    return fail(
        error("the store's answer failed authentication: not this job's store, or a "
              "different HVDC_SECRET"));
  }
  st = decode_reply(body, 0, &reply);
  if (!st.is_ok() || reply.kind != StoreReplyKind::kOk) {
    return fail(error("unexpected answer to the hello"));
  }
  return Status::ok();
}

Status StoreClient::Connection::call(const StoreRequest& request, Clock::time_point deadline,
                                     size_t keys_asked, StoreReply* reply) {
  if (!broken_.is_ok()) return broken_;
  HVDC_RETURN_IF_ERROR(send(encode_request(request), deadline));
  std::string body;
  HVDC_RETURN_IF_ERROR(read_frame(deadline, &body));
  if (!channel_.open(&body)) return fail(error("a reply failed authentication"));
  Status st = decode_reply(body, keys_asked, reply);
  if (!st.is_ok()) return fail(error(st.message()));
  if (reply->kind == StoreReplyKind::kError) return error(reply->error);
  return Status::ok();
}

StoreClient::StoreClient(std::unique_ptr<Connection> connection)
    : connection_(std::move(connection)) {}

StoreClient::~StoreClient() = default;

Status StoreClient::connect(const StoreClientOptions& options, std::unique_ptr<StoreClient>* out) {
  if (options.port <= 0 || options.port > 65535) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "rank %d: rendezvous store port %d is out of range",
                      options.rank, options.port);
  }
  Fd fd;
  HVDC_RETURN_IF_ERROR(
      connect_with_backoff(options.host, options.port, options.rank, options.timeout_seconds, &fd));
  auto connection = std::make_unique<Connection>(options, std::move(fd));
  HVDC_RETURN_IF_ERROR(connection->handshake());
  out->reset(new StoreClient(std::move(connection)));
  return Status::ok();
}

const std::string& StoreClient::endpoint() const {
  return connection_->endpoint();
}

Status StoreClient::set(const std::string& key, const std::string& value, uint32_t reads) {
  Status st = check_key(key);
  if (!st.is_ok() || value.size() > kStoreMaxValueBytes) {
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "store set of key '%.64s' (%zu bytes) and a value of %zu bytes: keys take 1 "
                      "to %u bytes, values at most %u",
                      key.c_str(), key.size(), value.size(), kStoreMaxKeyBytes,
                      kStoreMaxValueBytes);
  }
  StoreRequest request;
  request.op = StoreOp::kSet;
  request.key = key;
  request.value = value;
  request.reads = reads;
  StoreReply reply;
  HVDC_RETURN_IF_ERROR(
      connection_->call(request, after(connection_->timeout_seconds()), 0, &reply));
  return Status::ok();
}

Status StoreClient::get(const std::vector<std::string>& keys, double timeout_seconds,
                        std::vector<std::string>* values, std::vector<uint32_t>* missing) {
  if (keys.empty() || keys.size() > kStoreMaxKeysPerGet) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "store get of %zu keys (1 to %u allowed)",
                      keys.size(), kStoreMaxKeysPerGet);
  }
  for (const std::string& key : keys) HVDC_RETURN_IF_ERROR(check_key(key));
  StoreRequest request;
  request.op = StoreOp::kGet;
  request.keys = keys;
  request.timeout_ms =
      timeout_seconds > 0
          ? std::max<int64_t>(
                1, static_cast<int64_t>(std::min(timeout_seconds, kMaxTimeoutSeconds) * 1000))
          : 0;
  const Clock::time_point deadline =
      timeout_seconds > 0 ? after(timeout_seconds + kReplyGraceSeconds) : Clock::time_point::max();
  StoreReply reply;
  HVDC_RETURN_IF_ERROR(connection_->call(request, deadline, keys.size(), &reply));
  if (reply.kind == StoreReplyKind::kTimedOut) {
    const std::string first = reply.missing.empty() ? "?" : keys[reply.missing.front()];
    if (missing != nullptr) *missing = reply.missing;
    return connection_->error(
        strfmt("timed out after %.1f s waiting for %zu of %zu keys (first: '%s')", timeout_seconds,
               reply.missing.size(), keys.size(), first.c_str()));
  }
  if (reply.kind != StoreReplyKind::kValues) {
    return connection_->error("unexpected answer to a get");
  }
  *values = std::move(reply.values);
  return Status::ok();
}

}  // namespace hvdc::bootstrap
