// Framing and per-connection authentication for the rendezvous store.
//
// A connection opens with the server's fixed-size greeting (magic, version, whether it wants
// MACs, a fresh random nonce). After that every message in either direction is a frame:
//
//   u32 length (little-endian) | payload | MAC (32 bytes, only when the job has a secret)
//
// MAC = HMAC-SHA256(session key, direction || sequence number || payload), with
// session key = HMAC-SHA256(secret, "hvdc-store-v1" || server nonce || client nonce).
// Both nonces make every connection's key fresh, so frames recorded on one connection are worth
// nothing on another, even toward a client (whose nonce an impostor cannot choose). The
// direction byte stops a frame from being reflected back to its sender, and the sequence
// number, counted by both ends and never sent, stops replay, reordering and dropping within a
// connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/sha256.h"
#include "common/status.h"

namespace hvdc::bootstrap {

using common::Status;

// Limits. A frame's declared length is checked against them before anything is allocated.
constexpr uint32_t kStoreMaxKeyBytes = 256;
constexpr uint32_t kStoreMaxValueBytes = 16u << 20;
constexpr uint32_t kStoreMaxKeysPerGet = 65536;
constexpr uint32_t kStoreMaxFrameBytes = 32u << 20;
// Until a peer has proved that it knows the secret it may send only its hello, so its frames
// are tiny: a stranger cannot make the store hold more than this per connection.
constexpr uint32_t kStoreMaxHelloFrameBytes = 256;
constexpr size_t kStoreNonceBytes = 32;
constexpr size_t kStoreMacBytes = common::kSha256Bytes;

struct ServerHello {
  bool authenticated = false;  // the store checks MACs (it has a secret)
  uint8_t nonce[kStoreNonceBytes] = {};
};
// magic "HVDCSTOR", u32 version, u8 flags, nonce
constexpr size_t kServerHelloBytes = 8 + 4 + 1 + kStoreNonceBytes;
std::string encode_server_hello(const ServerHello& hello);
Status decode_server_hello(const std::string& bytes, ServerHello* out);

// Seals outgoing and opens incoming frames of one connection, for one end of it.
class FrameChannel {
 public:
  // An empty secret gives an unauthenticated channel: frames carry no MAC at all.
  void start(const std::string& secret, const uint8_t* server_nonce, const uint8_t* client_nonce,
             bool is_server);
  bool authenticated() const { return mac_ != nullptr; }
  size_t mac_bytes() const { return authenticated() ? kStoreMacBytes : 0; }
  // The complete frame: length, payload, MAC.
  std::string seal(const std::string& payload);
  // Checks and strips the MAC of a received frame body; false when the body is too short or the
  // MAC does not match (then the connection must be dropped: its sequence is lost).
  bool open(std::string* body);
  // Sequence number of the next frame expected from the peer (for log messages).
  uint64_t received() const { return recv_seq_; }

 private:
  common::Sha256Digest compute(uint8_t direction, uint64_t sequence, const char* data, size_t n);

  std::unique_ptr<common::HmacSha256> mac_;
  uint8_t send_direction_ = 0;
  uint8_t recv_direction_ = 0;
  uint64_t send_seq_ = 0;
  uint64_t recv_seq_ = 0;
};

// Reads one frame at a time from a non-blocking socket. The declared length is checked against
// the limit before anything is reserved, and the buffer then grows only as bytes actually
// arrive (never past the declared length), so a peer that announces a large frame and sends
// little costs little. Never reads past the end of the current frame.
class FrameReader {
 public:
  enum class Result { kFrame, kPending, kClosed };

  explicit FrameReader(uint32_t limit) : limit_(limit) {}
  void set_limit(uint32_t limit) { limit_ = limit; }
  // kFrame: take_body() holds the frame. kPending: the socket has no more data now. kClosed: the
  // peer ended (or reset) the stream (mid_frame() says whether it cut a frame short). An error for
  // a frame over the limit or a failed recv.
  Status read(int fd, Result* result);
  std::string take_body();
  bool mid_frame() const { return header_have_ > 0; }
  // The largest frame buffer this reader ever held, in bytes: the test hook behind "no
  // allocation beyond the length limit".
  size_t largest_buffer() const { return largest_; }

 private:
  Status receive_body(int fd, Result* result);
  void grow(size_t needed);

  uint32_t limit_;
  uint8_t header_[4] = {};
  size_t header_have_ = 0;
  uint32_t declared_ = 0;
  std::string body_;
  size_t body_have_ = 0;
  size_t largest_ = 0;
};

}  // namespace hvdc::bootstrap
