#include "bootstrap/tcp/frame.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "bootstrap/tcp/socket.h"
#include "common/wire.h"

namespace hvdc::bootstrap {

using common::make_error;

namespace {

constexpr char kMagic[8] = {'H', 'V', 'D', 'C', 'S', 'T', 'O', 'R'};
constexpr uint32_t kVersion = 1;
constexpr char kKeyLabel[] = "hvdc-store-v1";
constexpr uint8_t kToServer = 'C';
constexpr uint8_t kToClient = 'S';
// A frame body's first buffer (or the whole frame, when smaller): big enough for few system
// calls, small enough that announcing a large frame and sending little costs little.
constexpr size_t kReadChunk = 64 * 1024;

// A frame's length prefix, through the same decoder as every other field from the network.
uint32_t frame_length(const uint8_t* header, size_t n) {
  const std::string bytes(reinterpret_cast<const char*>(header), n);
  common::WireReader in(bytes, "frame header");
  uint32_t length = 0;
  (void)in.u32(&length);  // n is always 4: the caller reads the whole header first
  return length;
}

// What a recv() return value means for a frame being read: bytes arrived (kData), try again
// (kRetry, EINTR), or the read stops here with *result set or an error in *status (kStop).
enum class RecvOutcome { kData, kRetry, kStop };

RecvOutcome classify_recv(ssize_t got, FrameReader::Result* result, Status* status) {
  if (got > 0) return RecvOutcome::kData;
  // A reset is an end of stream too: a peer that exits with unread data resets.
  if (got == 0 || errno == ECONNRESET) {
    *result = FrameReader::Result::kClosed;
    return RecvOutcome::kStop;
  }
  if (errno == EINTR) return RecvOutcome::kRetry;
  if (errno == EAGAIN || errno == EWOULDBLOCK) {
    *result = FrameReader::Result::kPending;
    return RecvOutcome::kStop;
  }
  *status = make_error(HVD_ERR_BOOTSTRAP, "recv failed: %s", errno_text(errno).c_str());
  return RecvOutcome::kStop;
}

}  // namespace

std::string encode_server_hello(const ServerHello& hello) {
  common::WireWriter out;
  out.bytes(kMagic, sizeof(kMagic));
  out.u32(kVersion);
  out.u8(hello.authenticated ? 1 : 0);
  out.bytes(hello.nonce, kStoreNonceBytes);
  return out.take();
}

Status decode_server_hello(const std::string& bytes, ServerHello* out) {
  common::WireReader in(bytes, "store greeting");
  char magic[sizeof(kMagic)] = {};
  if (bytes.size() != kServerHelloBytes || !in.bytes(magic, sizeof(magic)).is_ok() ||
      std::memcmp(magic, kMagic, sizeof(kMagic)) != 0) {
    return make_error(HVD_ERR_BOOTSTRAP, "the peer is not an hvdc rendezvous store");
  }
  uint32_t version = 0;
  uint8_t flags = 0;
  HVDC_RETURN_IF_ERROR(in.u32(&version));
  if (version != kVersion) {
    return make_error(HVD_ERR_BOOTSTRAP, "the store speaks protocol version %u, this rank %u",
                      version, kVersion);
  }
  HVDC_RETURN_IF_ERROR(in.u8(&flags));
  if (flags > 1) return make_error(HVD_ERR_BOOTSTRAP, "the store's greeting has unknown flags");
  HVDC_RETURN_IF_ERROR(in.bytes(out->nonce, kStoreNonceBytes));
  HVDC_RETURN_IF_ERROR(in.finish());
  out->authenticated = flags == 1;
  return Status::ok();
}

void FrameChannel::start(const std::string& secret, const uint8_t* server_nonce,
                         const uint8_t* client_nonce, bool is_server) {
  send_direction_ = is_server ? kToClient : kToServer;
  recv_direction_ = is_server ? kToServer : kToClient;
  send_seq_ = recv_seq_ = 0;
  mac_.reset();
  if (secret.empty()) return;
  common::HmacSha256 derive(secret);
  derive.update(kKeyLabel, sizeof(kKeyLabel) - 1);
  derive.update(server_nonce, kStoreNonceBytes);
  derive.update(client_nonce, kStoreNonceBytes);
  common::Sha256Digest session_key = derive.finish();
  mac_ = std::make_unique<common::HmacSha256>(session_key.data(), session_key.size());
  session_key.fill(0);
}

common::Sha256Digest FrameChannel::compute(uint8_t direction, uint64_t sequence, const char* data,
                                           size_t n) {
  uint8_t prefix[9];
  prefix[0] = direction;
  for (int i = 0; i < 8; ++i) prefix[1 + i] = static_cast<uint8_t>(sequence >> (8 * i));
  mac_->update(prefix, sizeof(prefix));
  mac_->update(data, n);
  return mac_->finish();
}

std::string FrameChannel::seal(const std::string& payload) {
  common::WireWriter frame;
  frame.u32(static_cast<uint32_t>(payload.size() + mac_bytes()));
  frame.bytes(payload.data(), payload.size());
  if (authenticated()) {
    const common::Sha256Digest tag =
        compute(send_direction_, send_seq_, payload.data(), payload.size());
    frame.bytes(tag.data(), tag.size());
  }
  ++send_seq_;
  return frame.take();
}

bool FrameChannel::open(std::string* body) {
  if (!authenticated()) {
    ++recv_seq_;
    return true;
  }
  if (body->size() < kStoreMacBytes) return false;
  const size_t payload_bytes = body->size() - kStoreMacBytes;
  const common::Sha256Digest expected =
      compute(recv_direction_, recv_seq_, body->data(), payload_bytes);
  if (!common::constant_time_equal(expected.data(), body->data() + payload_bytes, kStoreMacBytes)) {
    return false;
  }
  body->resize(payload_bytes);
  ++recv_seq_;
  return true;
}

Status FrameReader::read(int fd, Result* result) {
  while (header_have_ < sizeof(header_)) {
    const ssize_t got = ::recv(fd, header_ + header_have_, sizeof(header_) - header_have_, 0);
    Status status;
    const RecvOutcome outcome = classify_recv(got, result, &status);
    if (outcome == RecvOutcome::kRetry) continue;
    if (outcome == RecvOutcome::kStop) return status;
    header_have_ += static_cast<size_t>(got);
    if (header_have_ < sizeof(header_)) continue;
    declared_ = frame_length(header_, sizeof(header_));
    if (declared_ > limit_) {
      return make_error(HVD_ERR_BOOTSTRAP, "frame of %u bytes exceeds the limit of %u bytes",
                        declared_, limit_);
    }
    body_ = std::string();
    body_have_ = 0;
  }
  return receive_body(fd, result);
}

// Replaces the buffer by one with room for `needed` bytes, doubling up to the declared length. A
// fresh string is reserved each time because libstdc++ rounds a reserve on a non-empty string up
// to twice its old capacity, which could pass the declared length.
void FrameReader::grow(size_t needed) {
  const size_t capacity =
      std::min<size_t>(declared_, std::max({needed, 2 * body_.capacity(), kReadChunk}));
  std::string bigger;
  bigger.reserve(capacity);
  bigger.assign(body_.data(), body_have_);
  body_.swap(bigger);
  largest_ = std::max(largest_, body_.capacity());
}

Status FrameReader::receive_body(int fd, Result* result) {
  while (body_have_ < declared_) {
    // Grow only once the buffer is full, so it stays within twice what arrived (or one chunk).
    if (body_have_ == body_.capacity()) grow(body_have_ + 1);
    const size_t want = std::min<size_t>(declared_, body_.capacity()) - body_have_;
    body_.resize(body_have_ + want);
    const ssize_t got = ::recv(fd, &body_[body_have_], want, 0);
    body_.resize(body_have_ + static_cast<size_t>(got > 0 ? got : 0));
    Status status;
    const RecvOutcome outcome = classify_recv(got, result, &status);
    if (outcome == RecvOutcome::kRetry) continue;
    if (outcome == RecvOutcome::kStop) return status;
    body_have_ += static_cast<size_t>(got);
  }
  *result = Result::kFrame;
  return Status::ok();
}

std::string FrameReader::take_body() {
  std::string body;
  body.swap(body_);
  body_have_ = 0;
  header_have_ = 0;
  declared_ = 0;
  return body;
}

}  // namespace hvdc::bootstrap
