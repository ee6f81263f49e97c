// Fuzz test of the rendezvous store, built with AddressSanitizer and UBSan (tests/fuzz/
// meson.build compiles the store's sources straight into this executable with those flags).
//
// It starts a store with a secret and throws 10,000 cases at it over real sockets from several
// threads at once, each on its own connection (some held open while others run): random bytes,
// random frame headers, valid hellos and requests that are truncated, mutated, sealed with the
// wrong secret or replayed from another connection, authenticated frames whose payload is
// garbage, oversized declared lengths, and valid requests cut off by a reset. After each case
// the store must close the connection (or answer and then close when the case ends it). Then a
// valid client must find the values set before the fuzzing and still set and get.
//
// "No allocation beyond the length limit" is checked three ways:
//  - by structure: FrameReader (frame.cc) compares a frame's declared length with the limit
//    before it reserves anything and then grows its buffer only as bytes arrive; the decoders
//    (protocol.cc, over common/wire.h) check every count and length against the remaining bytes
//    and the store's limits before they allocate;
//  - by the store's own counters: the largest frame buffer held for a connection that had not
//    authenticated must stay within kStoreMaxHelloFrameBytes, and after authentication within
//    what the fuzzer really sent (64 KiB), although it announces frames of up to 4 GiB;
//  - by ASan: the meson test runs with max_allocation_size_mb=32 (the frame limit), so any single
//    allocation larger than that anywhere in the process aborts the test.
//
// Usage: store_fuzz [seed] [cases]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/tcp/frame.h"
#include "bootstrap/tcp/protocol.h"
#include "bootstrap/tcp/store.h"
#include "common/log.h"

namespace {

namespace bs = hvdc::bootstrap;
using Rng = std::mt19937_64;

const char kSecret[] = "fuzz-job-secret";
constexpr int kWorkers = 8;
constexpr int kCheckKeys = 10;
constexpr size_t kMaxLingering = 32;

enum Kind {
  kRandomBytes,
  kRandomHeader,
  kTruncatedHello,
  kMutatedHello,
  kWrongSecretHello,
  kReplayedHello,
  kTruncatedRequest,
  kMutatedRequest,
  kAuthenticatedGarbage,
  kOversizedFrame,
  kValidThenReset,
  kLingering,
  kKindCount
};
const char* const kKindNames[kKindCount] = {
    "random bytes",     "random header",   "truncated hello",   "mutated hello",
    "wrong secret",     "replayed hello",  "truncated request", "mutated request",
    "garbage with MAC", "oversized frame", "valid then reset",  "held open"};

std::atomic<int> g_failures{0};
std::atomic<int> g_kind_counts[kKindCount];

#define FUZZ_CHECK(cond, ...)                                   \
  do {                                                          \
    if (!(cond)) {                                              \
      std::fprintf(stderr, "store_fuzz: check failed: " #cond); \
      std::fprintf(stderr, ": " __VA_ARGS__);                   \
      std::fprintf(stderr, "\n");                               \
      g_failures.fetch_add(1);                                  \
    }                                                           \
  } while (0)

// Counts the store's warnings instead of printing 10,000 of them; keeps a few to show.
struct LogTally {
  std::mutex mutex;
  uint64_t refused = 0;
  uint64_t other = 0;
  std::vector<std::string> samples;
  static void on_log(void* self, int32_t level, const char* message) {
    auto* tally = static_cast<LogTally*>(self);
    std::lock_guard<std::mutex> lock(tally->mutex);
    const bool refusal = std::strstr(message, "refused") != nullptr;
    (refusal ? tally->refused : tally->other) += level >= hvdc::common::kWarning ? 1 : 0;
    if (tally->samples.size() < 6) tally->samples.push_back(message);
  }
};

std::string random_bytes(Rng& rng, size_t n) {
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng() & 0xFF);
  return out;
}

size_t pick(Rng& rng, size_t n) {
  return n == 0 ? 0 : static_cast<size_t>(rng() % n);
}

std::string le32(uint32_t v) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  return out;
}

// 1 to 4 random edits: bit flips, byte overwrites, insertions, deletions.
std::string mutate(std::string bytes, Rng& rng) {
  const int edits = 1 + static_cast<int>(pick(rng, 4));
  for (int e = 0; e < edits; ++e) {
    const size_t at = pick(rng, bytes.size());
    switch (pick(rng, 4)) {
      case 0:
        if (!bytes.empty()) bytes[at] ^= static_cast<char>(1u << pick(rng, 8));
        break;
      case 1:
        if (!bytes.empty()) bytes[at] = static_cast<char>(rng() & 0xFF);
        break;
      case 2:
        bytes.insert(at, 1, static_cast<char>(rng() & 0xFF));
        break;
      default:
        if (!bytes.empty()) bytes.erase(at, 1);
        break;
    }
  }
  return bytes;
}

// A raw connection to the store.
class Peer {
 public:
  explicit Peer(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    timeval tv{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~Peer() { close_abortively(); }
  bool connected() const { return connected_; }

  bool read_greeting(bs::ServerHello* hello) {
    std::string greeting(bs::kServerHelloBytes, '\0');
    if (::recv(fd_, &greeting[0], greeting.size(), MSG_WAITALL) !=
        static_cast<ssize_t>(greeting.size())) {
      return false;
    }
    return bs::decode_server_hello(greeting, hello).is_ok();
  }
  // The store may already have closed: a failed send is part of the game.
  void send_bytes(const std::string& bytes) {
    if (!bytes.empty()) (void)::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  }
  // Reads the hello's answer (ok frame with MAC); false if the store refused.
  bool read_ok_reply() {
    char reply[4 + 1 + bs::kStoreMacBytes];
    return ::recv(fd_, reply, sizeof(reply), MSG_WAITALL) == static_cast<ssize_t>(sizeof(reply));
  }
  // Ends this side and waits for the store to close its side: true when it did within 5 s.
  bool finish() {
    ::shutdown(fd_, SHUT_WR);
    char buf[4096];
    for (;;) {
      const ssize_t got = ::recv(fd_, buf, sizeof(buf), 0);
      if (got == 0 || (got < 0 && (errno == ECONNRESET || errno == EPIPE))) return true;
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return false;
    }
  }
  // A reset instead of an orderly close: no TIME_WAIT left behind on 10,000 ports, and the
  // store sees ECONNRESET as well as end-of-stream.
  void close_abortively() {
    if (fd_ < 0) return;
    linger hard{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard));
    ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

std::string hello_payload(Rng& rng, std::string* nonce) {
  bs::StoreRequest hello;
  hello.op = bs::StoreOp::kHello;
  hello.rank = static_cast<int32_t>(pick(rng, 64));
  hello.client_nonce = random_bytes(rng, bs::kStoreNonceBytes);
  *nonce = hello.client_nonce;
  return bs::encode_request(hello);
}

// A valid hello frame for this connection's greeting, sealed with `secret`.
std::string hello_frame(const bs::ServerHello& greeting, const std::string& secret, Rng& rng,
                        bs::FrameChannel* channel) {
  std::string nonce;
  const std::string payload = hello_payload(rng, &nonce);
  channel->start(secret, greeting.nonce, reinterpret_cast<const uint8_t*>(nonce.data()), false);
  return channel->seal(payload);
}

std::string valid_request(Rng& rng) {
  bs::StoreRequest request;
  if (pick(rng, 2) == 0) {
    request.op = bs::StoreOp::kSet;
    request.key = "fuzz/" + std::to_string(pick(rng, 50));
    request.value = random_bytes(rng, pick(rng, 200));
    request.reads = static_cast<uint32_t>(pick(rng, 3));
  } else {
    request.op = bs::StoreOp::kGet;
    const size_t n = 1 + pick(rng, 4);
    for (size_t i = 0; i < n; ++i) request.keys.push_back("fuzz/" + std::to_string(pick(rng, 60)));
    request.timeout_ms = static_cast<int64_t>(1 + pick(rng, 30));
  }
  return bs::encode_request(request);
}

// Payloads that pass the MAC and must then survive the decoder.
std::string garbage_payload(Rng& rng) {
  switch (pick(rng, 3)) {
    case 0:
      return random_bytes(rng, pick(rng, 600));
    case 1:
      return std::string(1, static_cast<char>(1 + pick(rng, 3))) + random_bytes(rng, pick(rng, 80));
    default: {
      std::string payload = valid_request(rng);  // with a count or length made huge
      const size_t at = 1 + pick(rng, payload.size() > 1 ? payload.size() - 1 : 1);
      const std::string huge = le32(static_cast<uint32_t>(rng()));
      payload.replace(std::min(at, payload.size()), 4, huge);
      return payload;
    }
  }
}

uint32_t random_length(Rng& rng) {
  switch (pick(rng, 4)) {
    case 0:
      return static_cast<uint32_t>(pick(rng, 300));
    case 1:
      return bs::kStoreMaxHelloFrameBytes + static_cast<uint32_t>(pick(rng, 3)) - 1;
    case 2:
      return bs::kStoreMaxFrameBytes + static_cast<uint32_t>(pick(rng, 3)) - 1;
    default:
      return static_cast<uint32_t>(rng());
  }
}

// Connects and authenticates properly; false (a failure) if the store refused a valid hello.
bool authenticate(Peer& peer, const bs::ServerHello& greeting, Rng& rng,
                  bs::FrameChannel* channel) {
  peer.send_bytes(hello_frame(greeting, kSecret, rng, channel));
  return peer.read_ok_reply();
}

std::string authenticated_case(Kind kind, Rng& rng, bs::FrameChannel* channel) {
  switch (kind) {
    case kTruncatedRequest: {
      const std::string frame = channel->seal(valid_request(rng));
      return frame.substr(0, pick(rng, frame.size()));
    }
    case kMutatedRequest:
      return mutate(channel->seal(valid_request(rng)), rng);
    case kAuthenticatedGarbage:
      return channel->seal(garbage_payload(rng));
    case kOversizedFrame:
      // Over the limit, or within it but never sent in full.
      return le32(pick(rng, 2) == 0
                      ? bs::kStoreMaxFrameBytes + 1 + static_cast<uint32_t>(pick(rng, 1u << 30))
                      : (1u << 20) + static_cast<uint32_t>(pick(rng, 24u << 20))) +
             random_bytes(rng, pick(rng, 2000));
    default:
      return channel->seal(valid_request(rng));
  }
}

// One case on its own connection. Returns the peer when it should stay open for a while.
std::unique_ptr<Peer> run_case(int port, Kind kind, Rng& rng, std::string* replay) {
  auto peer = std::make_unique<Peer>(port);
  FUZZ_CHECK(peer->connected(), "connect failed: %s", std::strerror(errno));
  if (!peer->connected()) return nullptr;
  if (kind == kRandomBytes) {
    peer->send_bytes(random_bytes(rng, pick(rng, 400)));
    FUZZ_CHECK(peer->finish(), "store kept a connection open after random bytes");
    return nullptr;
  }
  bs::ServerHello greeting;
  FUZZ_CHECK(peer->read_greeting(&greeting), "no greeting");
  bs::FrameChannel channel;
  std::string bytes;
  switch (kind) {
    case kRandomHeader:
      bytes = le32(random_length(rng)) + random_bytes(rng, pick(rng, 300));
      break;
    case kTruncatedHello:
      bytes = hello_frame(greeting, kSecret, rng, &channel);
      bytes.resize(pick(rng, bytes.size()));
      break;
    case kMutatedHello:
      bytes = mutate(hello_frame(greeting, kSecret, rng, &channel), rng);
      break;
    case kWrongSecretHello:
      bytes = hello_frame(greeting, pick(rng, 2) == 0 ? "" : "another-secret", rng, &channel);
      break;
    case kReplayedHello:
      bytes = replay->empty() ? hello_frame(greeting, "x", rng, &channel) : *replay;
      *replay = hello_frame(greeting, kSecret, rng, &channel);  // for the next connection
      break;
    case kLingering:
      peer->send_bytes(hello_frame(greeting, kSecret, rng, &channel).substr(0, 10));
      return peer;
    default: {
      FUZZ_CHECK(authenticate(*peer, greeting, rng, &channel), "valid hello refused");
      bytes = authenticated_case(kind, rng, &channel);
      if (kind == kValidThenReset) {
        peer->send_bytes(bytes);
        return nullptr;  // reset, possibly while its get waits
      }
    }
  }
  peer->send_bytes(bytes);
  FUZZ_CHECK(peer->finish(), "store kept a connection open (case: %s)", kKindNames[kind]);
  return nullptr;
}

void worker(int port, uint64_t seed, int cases) {
  Rng rng(seed);
  std::string replay;
  std::vector<std::unique_ptr<Peer>> lingering;
  for (int i = 0; i < cases; ++i) {
    const Kind kind = static_cast<Kind>(pick(rng, kKindCount));
    g_kind_counts[kind].fetch_add(1);
    std::unique_ptr<Peer> held = run_case(port, kind, rng, &replay);
    if (held != nullptr) lingering.push_back(std::move(held));
    if (lingering.size() > kMaxLingering) lingering.erase(lingering.begin());
  }
}

bool check_store_serves(int port) {
  bs::StoreClientOptions options;
  options.port = port;
  options.secret = kSecret;
  options.rank = 0;
  options.timeout_seconds = 10;
  std::unique_ptr<bs::StoreClient> a, b;
  hvdc::common::Status st = bs::StoreClient::connect(options, &a);
  if (st.is_ok()) st = bs::StoreClient::connect(options, &b);
  FUZZ_CHECK(st.is_ok(), "%s", st.message().c_str());
  if (!st.is_ok()) return false;
  std::vector<std::string> keys, values;
  for (int i = 0; i < kCheckKeys; ++i) keys.push_back("check/before/" + std::to_string(i));
  st = a->get(keys, 5, &values);
  FUZZ_CHECK(st.is_ok(), "%s", st.message().c_str());
  for (int i = 0; st.is_ok() && i < kCheckKeys; ++i) {
    FUZZ_CHECK(values[i] == "value " + std::to_string(i), "key %d changed", i);
  }
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    FUZZ_CHECK(b->set("check/after", "still serving", 1).is_ok(), "set after fuzzing");
  });
  st = a->get({"check/after"}, 10, &values);
  late.join();
  FUZZ_CHECK(st.is_ok() && values.front() == "still serving", "%s", st.message().c_str());
  return st.is_ok();
}

// The values check_store_serves expects to find untouched after the fuzzing.
void preload(int port) {
  bs::StoreClientOptions options;
  options.port = port;
  options.secret = kSecret;
  std::unique_ptr<bs::StoreClient> client;
  hvdc::common::Status st = bs::StoreClient::connect(options, &client);
  for (int i = 0; st.is_ok() && i < kCheckKeys; ++i) {
    st = client->set("check/before/" + std::to_string(i), "value " + std::to_string(i));
  }
  FUZZ_CHECK(st.is_ok(), "%s", st.message().c_str());
}

void report(uint64_t seed, int cases, const bs::StoreServerStats& stats, LogTally& tally) {
  std::printf(
      "store_fuzz: seed %llu, %d cases, %llu connections accepted, %llu refused, %llu "
      "requests served\n",
      static_cast<unsigned long long>(seed), cases, static_cast<unsigned long long>(stats.accepted),
      static_cast<unsigned long long>(stats.refused),
      static_cast<unsigned long long>(stats.served));
  for (int k = 0; k < kKindCount; ++k) {
    std::printf("  %-18s %d\n", kKindNames[k], g_kind_counts[k].load());
  }
  std::printf("  largest buffer before authentication %zu B, after %zu B\n",
              stats.largest_hello_buffer, stats.largest_frame_buffer);
  std::printf("  warnings: %llu refusals, %llu others; e.g.\n",
              static_cast<unsigned long long>(tally.refused),
              static_cast<unsigned long long>(tally.other));
  for (const std::string& line : tally.samples) std::printf("    %s\n", line.c_str());
}

// The store logs at most 10 refusals per 10 s window and then one line counting the rest.
constexpr uint64_t kRefusalLinesPerWindow = 11;
constexpr double kRefusalLogWindowSeconds = 10;
// With no expected size the store lets this many connections wait to authenticate.
constexpr size_t kMaxUnauthenticated = 64;

void check_counters(int cases, const bs::StoreServerStats& stats, LogTally& tally, double seconds) {
  FUZZ_CHECK(stats.accepted >= static_cast<uint64_t>(cases), "only %llu connections",
             static_cast<unsigned long long>(stats.accepted));
  FUZZ_CHECK(stats.refused > static_cast<uint64_t>(cases) / 2, "few refusals");
  // Refusals are logged, but rate-limited: thousands of strangers must not flood the log.
  const uint64_t windows = static_cast<uint64_t>(seconds / kRefusalLogWindowSeconds) + 1;
  FUZZ_CHECK(tally.refused >= std::min<uint64_t>(stats.refused, 10) &&
                 tally.refused <= std::min(stats.refused, windows * kRefusalLinesPerWindow),
             "refusals logged %llu, counted %llu in %.1f s",
             static_cast<unsigned long long>(tally.refused),
             static_cast<unsigned long long>(stats.refused), seconds);
  // Held-open connections (8 workers x 32) exceed the cap, so the oldest were dropped.
  FUZZ_CHECK(stats.peak_unauthenticated <= kMaxUnauthenticated, "%zu waited to authenticate",
             stats.peak_unauthenticated);
  FUZZ_CHECK(stats.largest_hello_buffer <= bs::kStoreMaxHelloFrameBytes, "%zu B before auth",
             stats.largest_hello_buffer);
  FUZZ_CHECK(stats.largest_frame_buffer <= 64 * 1024, "%zu B after auth",
             stats.largest_frame_buffer);
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t seed = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 20240611;
  const int cases = argc > 2 ? std::atoi(argv[2]) : 10000;
  LogTally tally;
  hvdc::common::set_log_callback(&LogTally::on_log, &tally);
  bs::StoreServerOptions options;
  options.secret = kSecret;
  std::unique_ptr<bs::StoreServer> server;
  hvdc::common::Status st = bs::StoreServer::start(options, &server);
  if (!st.is_ok()) {
    std::fprintf(stderr, "store_fuzz: %s\n", st.message().c_str());
    return 1;
  }
  const int port = server->port();
  const auto start = std::chrono::steady_clock::now();
  preload(port);

  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    const int share = cases / kWorkers + (w < cases % kWorkers ? 1 : 0);
    workers.emplace_back(worker, port, seed + static_cast<uint64_t>(w), share);
  }
  for (std::thread& t : workers) t.join();

  check_store_serves(port);
  const bs::StoreServerStats stats = server->stats();
  server->stop();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  hvdc::common::set_log_callback(nullptr, nullptr);
  report(seed, cases, stats, tally);
  check_counters(cases, stats, tally, seconds);
  if (g_failures.load() != 0) {
    std::fprintf(stderr, "store_fuzz: %d checks failed\n", g_failures.load());
    return 1;
  }
  std::printf("store_fuzz: passed\n");
  return 0;
}
