// The rendezvous store over real sockets on 127.0.0.1 (port 0): StoreBootstrap with threads as
// ranks, authentication (wrong, missing and unexpected secrets), the unauthenticated warning,
// connect timeouts, collective timeouts naming the missing ranks, and oversized frames.
#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/tcp/frame.h"
#include "bootstrap/tcp/protocol.h"
#include "bootstrap/tcp/store.h"
#include "common/log.h"

namespace {

using hvdc::bootstrap::Bootstrap;
using hvdc::bootstrap::StoreBootstrap;
using hvdc::bootstrap::StoreClient;
using hvdc::bootstrap::StoreClientOptions;
using hvdc::bootstrap::StoreOptions;
using hvdc::bootstrap::StoreServer;
using hvdc::bootstrap::StoreServerOptions;
using hvdc::common::Status;
namespace bs = hvdc::bootstrap;

// Collects log lines through hvdc's log callback for the lifetime of the object.
class LogCapture {
 public:
  LogCapture() { hvdc::common::set_log_callback(&LogCapture::on_log, this); }
  ~LogCapture() { hvdc::common::set_log_callback(nullptr, nullptr); }
  size_t count(const std::string& needle) {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t n = 0;
    for (const std::string& line : lines_) n += line.find(needle) != std::string::npos ? 1 : 0;
    return n;
  }
  std::string all() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string out;
    for (const std::string& line : lines_) out += line + "\n";
    return out;
  }

 private:
  static void on_log(void* self, int32_t, const char* message) {
    auto* capture = static_cast<LogCapture*>(self);
    std::lock_guard<std::mutex> lock(capture->mutex_);
    capture->lines_.push_back(message);
  }
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

// Runs body(rank, bootstrap) on `size` threads and then finalize(); rank 0 is created first so
// that the others learn its ephemeral port. Returns one status per rank (the first failure).
template <typename Body>
std::vector<Status> run_ranks(int size, StoreOptions options, Body body) {
  options.size = size;
  options.rank = 0;
  options.port = 0;
  std::unique_ptr<StoreBootstrap> root;
  Status st = StoreBootstrap::create(options, &root);
  if (!st.is_ok()) return {st};
  options.port = root->port();
  std::vector<Status> results(size);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank, options]() mutable {
      std::unique_ptr<StoreBootstrap> mine;
      if (rank == 0) {
        mine = std::move(root);
      } else {
        options.rank = rank;
        results[rank] = StoreBootstrap::create(options, &mine);
        if (!results[rank].is_ok()) return;
      }
      results[rank] = body(rank, *mine);
      Status fin = mine->finalize();
      if (results[rank].is_ok()) results[rank] = fin;
    });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

void expect_all_ok(const std::vector<Status>& results) {
  for (size_t r = 0; r < results.size(); ++r) {
    EXPECT_TRUE(results[r].is_ok()) << "rank " << r << ": " << results[r].message();
  }
}

// Four ranks, many rounds of every collective with rank- and round-dependent data.
Status collectives(int rank, Bootstrap& bootstrap) {
  const int size = bootstrap.size();
  for (int round = 0; round < 30; ++round) {
    const size_t bytes = static_cast<size_t>(round % 5) * 13;  // includes 0 bytes
    std::string mine(bytes, '\0');
    for (size_t i = 0; i < bytes; ++i) mine[i] = static_cast<char>(rank * 31 + round * 7 + i);
    std::string all(bytes * size, '\x7f');
    HVDC_RETURN_IF_ERROR(bootstrap.allgather(mine.data(), bytes, all.data()));
    for (int r = 0; r < size; ++r) {
      for (size_t i = 0; i < bytes; ++i) {
        if (all[r * bytes + i] != static_cast<char>(r * 31 + round * 7 + i)) {
          return Status(HVD_ERR_INTERNAL, "allgather: wrong byte from rank " + std::to_string(r));
        }
      }
    }
    const int root = round % size;
    uint64_t value = rank == root ? 1000u + round : 0;
    HVDC_RETURN_IF_ERROR(bootstrap.broadcast(&value, sizeof(value), root));
    if (value != 1000u + round) return Status(HVD_ERR_INTERNAL, "broadcast: wrong value");
    HVDC_RETURN_IF_ERROR(bootstrap.barrier());
  }
  return Status::ok();
}

// Entries of a /proc/self directory: open descriptors or threads.
size_t count_entries(const char* path) {
  size_t n = 0;
  if (DIR* dir = opendir(path)) {
    while (readdir(dir) != nullptr) ++n;
    closedir(dir);
  }
  return n;
}

TEST(StoreBootstrap, FourRanksRepeatedCollectivesWithSecret) {
  LogCapture log;
  StoreOptions options;
  options.secret = "job-secret-1234";
  options.timeout_seconds = 60;
  // The first run also lets runtimes start their lazy threads (TSan has one) before counting.
  expect_all_ok(run_ranks(4, options, collectives));
  const size_t fds_before = count_entries("/proc/self/fd");
  const size_t threads_before = count_entries("/proc/self/task");
  for (int repeat = 0; repeat < 2; ++repeat) expect_all_ok(run_ranks(4, options, collectives));
  EXPECT_EQ(log.count("warning"), 0u) << log.all();
  // finalize leaves no store thread and no socket behind.
  EXPECT_EQ(count_entries("/proc/self/fd"), fds_before);
  EXPECT_EQ(count_entries("/proc/self/task"), threads_before);
}

TEST(StoreBootstrap, NoSecretWorksAndWarnsOnce) {
  LogCapture log;
  StoreOptions options;
  options.timeout_seconds = 60;
  expect_all_ok(run_ranks(4, options, collectives));
  EXPECT_EQ(log.count("unauthenticated"), 1u) << log.all();
  EXPECT_EQ(log.count("set HVDC_SECRET"), 1u) << log.all();
}

TEST(StoreBootstrap, BarrierHoldsEveryoneUntilTheLastArrives) {
  std::atomic<int> arrived{0};
  StoreOptions options;
  options.secret = "s";
  options.timeout_seconds = 60;
  auto body = [&](int rank, Bootstrap& bootstrap) -> Status {
    if (rank == 2) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    arrived.fetch_add(1);
    HVDC_RETURN_IF_ERROR(bootstrap.barrier());
    if (arrived.load() != 3) return Status(HVD_ERR_INTERNAL, "left the barrier early");
    return Status::ok();
  };
  expect_all_ok(run_ranks(3, options, body));
}

TEST(StoreBootstrap, SingleRankNeedsNoStore) {
  StoreOptions options;
  std::unique_ptr<Bootstrap> bootstrap;
  ASSERT_TRUE(bs::make_store_bootstrap(options, &bootstrap).is_ok());
  int in = 5, out = 0;
  ASSERT_TRUE(bootstrap->allgather(&in, sizeof(in), &out).is_ok());
  EXPECT_EQ(out, 5);
  EXPECT_TRUE(bootstrap->barrier().is_ok());
  EXPECT_TRUE(bootstrap->finalize().is_ok());
  EXPECT_EQ(bootstrap->barrier().code(), HVD_ERR_INVALID_USAGE);
}

TEST(StoreBootstrap, RejectsBadOptions) {
  std::unique_ptr<StoreBootstrap> bootstrap;
  StoreOptions options;
  options.size = 2;
  options.rank = 1;
  options.port = 0;  // only rank 0 may ask for an ephemeral port
  EXPECT_EQ(StoreBootstrap::create(options, &bootstrap).code(), HVD_ERR_INVALID_ARGUMENT);
  options.rank = 2;
  options.port = 1234;
  EXPECT_EQ(StoreBootstrap::create(options, &bootstrap).code(), HVD_ERR_INVALID_ARGUMENT);
}

TEST(StoreBootstrap, TimeoutNamesTheMissingRank) {
  StoreOptions options;
  options.secret = "s";
  options.timeout_seconds = 0.5;
  std::atomic<bool> rank0_done{false};
  std::string message;
  auto body = [&](int rank, Bootstrap& bootstrap) -> Status {
    if (rank == 0) {
      int in = 1;
      int out[2];
      Status st = bootstrap.allgather(&in, sizeof(in), out);
      message = st.message();
      rank0_done.store(true);
      return st.is_ok() ? Status(HVD_ERR_INTERNAL, "allgather should time out") : Status::ok();
    }
    while (!rank0_done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return Status::ok();
  };
  options.timeout_seconds = 0.5;
  // Ranks created, then rank 1 never joins the allgather; finalize still works afterwards.
  std::vector<Status> results = run_ranks(2, options, body);
  expect_all_ok(results);
  EXPECT_TRUE(contains(message, "allgather")) << message;
  EXPECT_TRUE(contains(message, "waiting for rank 1")) << message;
  EXPECT_TRUE(contains(message, "rank 0")) << message;
}

TEST(StoreBootstrap, MismatchedBroadcastSizesAreErrors) {
  StoreOptions options;
  options.secret = "s";
  options.timeout_seconds = 30;
  std::string message;
  auto body = [&](int rank, Bootstrap& bootstrap) -> Status {
    char buf[8] = {};
    Status st = bootstrap.broadcast(buf, rank == 0 ? 8 : 4, 0);
    if (rank == 1) message = st.message();
    return Status::ok();
  };
  expect_all_ok(run_ranks(2, options, body));
  EXPECT_TRUE(contains(message, "rank 0 contributed 8 bytes, this rank expected 4")) << message;
}

struct Server {
  std::unique_ptr<StoreServer> server;
  explicit Server(const std::string& secret) {
    StoreServerOptions options;
    options.secret = secret;
    Status st = StoreServer::start(options, &server);
    EXPECT_TRUE(st.is_ok()) << st.message();
  }
  Status connect(const std::string& secret, int rank, std::unique_ptr<StoreClient>* out) const {
    StoreClientOptions options;
    options.port = server->port();
    options.secret = secret;
    options.rank = rank;
    options.timeout_seconds = 10;
    return StoreClient::connect(options, out);
  }
};

TEST(StoreServer, WrongSecretIsRefusedAndLoggedWhileOthersWork) {
  LogCapture log;
  Server server("right");
  std::unique_ptr<StoreClient> good, bad;
  ASSERT_TRUE(server.connect("right", 0, &good).is_ok());
  ASSERT_TRUE(good->set("k", "v").is_ok());

  Status st = server.connect("wrong", 1, &bad);
  EXPECT_EQ(st.code(), HVD_ERR_BOOTSTRAP);
  EXPECT_TRUE(contains(st.message(), "HVDC_SECRET")) << st.message();
  st = server.connect("", 2, &bad);
  EXPECT_EQ(st.code(), HVD_ERR_BOOTSTRAP);
  EXPECT_TRUE(contains(st.message(), "requires HVDC_SECRET")) << st.message();

  std::vector<std::string> values;
  ASSERT_TRUE(good->get({"k"}, 5, &values).is_ok());
  EXPECT_EQ(values, std::vector<std::string>{"v"});
  // The refusals reach the log (the store thread logs them asynchronously), naming the peer.
  for (int i = 0; i < 500 && log.count("refused") < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(log.count("refused peer 127.0.0.1:"), 2u) << log.all();
  EXPECT_EQ(server.server->stats().refused, 2u);
}

TEST(StoreServer, ClientWithSecretRefusesAnUnauthenticatedStore) {
  LogCapture log;
  Server server("");
  EXPECT_EQ(log.count("unauthenticated"), 1u) << log.all();
  std::unique_ptr<StoreClient> client;
  Status st = server.connect("mine", 0, &client);
  EXPECT_EQ(st.code(), HVD_ERR_BOOTSTRAP);
  EXPECT_TRUE(contains(st.message(), "does not authenticate")) << st.message();
}

TEST(StoreServer, GetWaitsForSetAndTimesOutNamingKeys) {
  Server server("s");
  std::unique_ptr<StoreClient> a, b;
  ASSERT_TRUE(server.connect("s", 0, &a).is_ok());
  ASSERT_TRUE(server.connect("s", 1, &b).is_ok());
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_TRUE(b->set("late", "value", 1).is_ok());
  });
  std::vector<std::string> values;
  Status st = a->get({"late"}, 10, &values);
  setter.join();
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(values, std::vector<std::string>{"value"});

  std::vector<uint32_t> missing;
  ASSERT_TRUE(b->set("present", "p").is_ok());
  st = a->get({"present", "absent", "late"}, 0.2, &values, &missing);  // "late" was read once
  EXPECT_EQ(st.code(), HVD_ERR_BOOTSTRAP);
  EXPECT_TRUE(contains(st.message(), "timed out after 0.2 s")) << st.message();
  EXPECT_EQ(missing, (std::vector<uint32_t>{1, 2}));
  ASSERT_TRUE(a->get({"present"}, 5, &values).is_ok());  // the connection still works
}

TEST(StoreServer, ListensOnTheChosenInterface) {
  std::unique_ptr<StoreServer> server;
  StoreServerOptions options;
  options.master_addr = "192.0.2.1";  // TEST-NET-1, never a local address
  options.secret = "s";
  options.iface = "lo";
  ASSERT_TRUE(StoreServer::start(options, &server).is_ok());
  EXPECT_TRUE(contains(server->listen_address(), "127.0.0.1:")) << server->listen_address();
  server.reset();

  options.iface = "no-such-if0";
  Status st = StoreServer::start(options, &server);
  EXPECT_EQ(st.code(), HVD_ERR_BOOTSTRAP);
  EXPECT_TRUE(contains(st.message(), "HVDC_IFACE=no-such-if0")) << st.message();
  EXPECT_TRUE(contains(st.message(), "lo")) << st.message();

  // A master address that is not this host's: every interface, reached locally over loopback.
  options.iface = "";
  ASSERT_TRUE(StoreServer::start(options, &server).is_ok());
  EXPECT_TRUE(contains(server->listen_address(), "0.0.0.0:")) << server->listen_address();
  EXPECT_EQ(server->connect_host(), "127.0.0.1");

  options.master_addr = "127.0.0.1";
  ASSERT_TRUE(StoreServer::start(options, &server).is_ok());
  EXPECT_TRUE(contains(server->listen_address(), "127.0.0.1:")) << server->listen_address();
}

TEST(StoreBootstrap, WorksOverIpv6Loopback) {
  int probe = ::socket(AF_INET6, SOCK_STREAM, 0);
  sockaddr_in6 addr{};
  addr.sin6_family = AF_INET6;
  addr.sin6_addr = in6addr_loopback;
  const bool have_ipv6 =
      probe >= 0 && ::bind(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  if (probe >= 0) ::close(probe);
  if (!have_ipv6) GTEST_SKIP() << "no IPv6 loopback here";
  StoreOptions options;
  options.master_addr = "::1";
  options.secret = "s";
  options.timeout_seconds = 30;
  expect_all_ok(run_ranks(2, options, collectives));
}

TEST(StoreClient, ConnectTimeoutNamesAddressRankAndTime) {
  // A port with nothing listening: bind one, note it, close it.
  int probe = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(probe, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);
  ::close(probe);

  StoreClientOptions options;
  options.port = port;
  options.rank = 3;
  options.timeout_seconds = 0.5;
  std::unique_ptr<StoreClient> client;
  const auto start = std::chrono::steady_clock::now();
  Status st = StoreClient::connect(options, &client);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(st.code(), HVD_ERR_BOOTSTRAP);
  EXPECT_TRUE(contains(st.message(), "127.0.0.1:" + std::to_string(port))) << st.message();
  EXPECT_TRUE(contains(st.message(), "rank 3")) << st.message();
  EXPECT_TRUE(contains(st.message(), "after 0.5 s")) << st.message();
  EXPECT_GE(waited, 0.5);
  EXPECT_LT(waited, 5.0);
}

// A raw connection that has read the store's greeting.
struct RawPeer {
  int fd = -1;
  bs::ServerHello hello;
  explicit RawPeer(int port) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    std::string greeting(bs::kServerHelloBytes, '\0');
    EXPECT_EQ(::recv(fd, &greeting[0], greeting.size(), MSG_WAITALL),
              static_cast<ssize_t>(greeting.size()));
    EXPECT_TRUE(bs::decode_server_hello(greeting, &hello).is_ok());
  }
  ~RawPeer() { ::close(fd); }
  void send_bytes(const std::string& bytes) const {
    EXPECT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  // True when the store closed the connection (end of stream or reset) within 5 s.
  bool closed_by_store() const {
    char buf[256];
    for (;;) {
      const ssize_t got = ::recv(fd, buf, sizeof(buf), 0);
      if (got == 0 || (got < 0 && errno == ECONNRESET)) return true;
      if (got < 0) return false;  // timeout
    }
  }
  // Completes the handshake with the right secret; returns the channel for later frames.
  void authenticate(const std::string& secret, bs::FrameChannel* channel) const {
    bs::StoreRequest request;
    request.op = bs::StoreOp::kHello;
    request.rank = 9;
    request.client_nonce.assign(bs::kStoreNonceBytes, 'n');
    channel->start(secret, hello.nonce,
                   reinterpret_cast<const uint8_t*>(request.client_nonce.data()), false);
    send_bytes(channel->seal(bs::encode_request(request)));
    char reply[4 + 1 + bs::kStoreMacBytes];
    EXPECT_EQ(::recv(fd, reply, sizeof(reply), MSG_WAITALL), static_cast<ssize_t>(sizeof(reply)));
  }
};

std::string le32(uint32_t v) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  return out;
}

TEST(StoreServer, OversizedFramesAreRejectedWithoutAllocating) {
  LogCapture log;
  Server server("s");
  {
    RawPeer stranger(server.server->port());
    stranger.send_bytes(le32(0xFFFFFFF0u));
    EXPECT_TRUE(stranger.closed_by_store());
  }
  {
    RawPeer stranger(server.server->port());
    stranger.send_bytes(le32(bs::kStoreMaxHelloFrameBytes + 1));
    EXPECT_TRUE(stranger.closed_by_store());
  }
  EXPECT_EQ(server.server->stats().largest_hello_buffer, 0u);  // refused on the length alone
  {
    RawPeer member(server.server->port());
    bs::FrameChannel channel;
    member.authenticate("s", &channel);
    member.send_bytes(le32(bs::kStoreMaxFrameBytes + 1));
    EXPECT_TRUE(member.closed_by_store());
  }
  {
    // Within the limit but mostly never sent: the buffer grows only with what arrives.
    RawPeer member(server.server->port());
    bs::FrameChannel channel;
    member.authenticate("s", &channel);
    member.send_bytes(le32(30u << 20) + "only a few bytes");
  }
  const bs::StoreServerStats stats = server.server->stats();
  EXPECT_LE(stats.largest_hello_buffer, bs::kStoreMaxHelloFrameBytes);  // the members' hellos
  EXPECT_LE(stats.largest_frame_buffer, 64u * 1024);
  for (int i = 0; i < 500 && log.count("exceeds the limit") < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(log.count("exceeds the limit"), 3u) << log.all();
  // Still serving.
  std::unique_ptr<StoreClient> client;
  ASSERT_TRUE(server.connect("s", 0, &client).is_ok());
  ASSERT_TRUE(client->set("k", "v").is_ok());
}

// Idle connections that never authenticate cannot use up rank 0's descriptors: beyond the cap
// the oldest is dropped, a real rank still gets in, and the refusals do not flood the log.
TEST(StoreServer, IdleStrangersAreCappedAndRanksStillJoin) {
  LogCapture log;
  std::unique_ptr<StoreServer> server;
  StoreServerOptions options;
  options.secret = "s";
  options.expected_size = 1;  // cap: 2 * 1 + 16
  ASSERT_TRUE(StoreServer::start(options, &server).is_ok());
  constexpr size_t kCap = 18;
  constexpr int kIdle = 3 * kCap;
  std::vector<int> idle;
  for (int i = 0; i < kIdle; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(server->port()));
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    idle.push_back(fd);
  }
  for (int i = 0; i < 500 && server->stats().accepted < kIdle; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::unique_ptr<StoreClient> client;
  StoreClientOptions client_options;
  client_options.port = server->port();
  client_options.secret = "s";
  client_options.rank = 0;
  client_options.timeout_seconds = 10;
  ASSERT_TRUE(StoreClient::connect(client_options, &client).is_ok());
  ASSERT_TRUE(client->set("k", "v").is_ok());
  std::vector<std::string> values;
  ASSERT_TRUE(client->get({"k"}, 5, &values).is_ok());
  EXPECT_EQ(values, std::vector<std::string>{"v"});

  const bs::StoreServerStats stats = server->stats();
  EXPECT_EQ(stats.accepted, static_cast<uint64_t>(kIdle) + 1);
  EXPECT_LE(stats.peak_unauthenticated, kCap);
  EXPECT_EQ(stats.dropped_unauthenticated, static_cast<uint64_t>(kIdle) + 1 - kCap);
  EXPECT_LE(log.count("refused"), 10u) << log.all();
  for (int fd : idle) ::close(fd);
}

}  // namespace
