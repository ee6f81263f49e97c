// The TCP rendezvous store and the bootstrap built on it (launch without MPI: hvdcrun,
// torchrun-style environments). Rank 0 hosts a small key-value store; every rank, rank 0
// included, connects to it as a client; allgather, broadcast and barrier are a few sets and
// waiting gets.
//
// With a per-job secret (HVDC_SECRET; hvdcrun always makes one) every frame in both directions
// carries an HMAC-SHA256 under a key fresh to its connection (see frame.h), so a peer without
// the secret is refused and logged and never served, and a rank knows it talks to its own job's
// store. Without a secret the store still works and logs one warning that the rendezvous is
// unauthenticated.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "common/status.h"

namespace hvdc::bootstrap {

using common::Status;

struct StoreServerOptions {
  // Decides the listen address together with iface (see choose_listen_address in socket.cc):
  // the interface HVDC_IFACE if given, else the master address if it is one of this host's,
  // else all interfaces.
  std::string master_addr = "127.0.0.1";
  std::string iface;
  int port = 0;        // 0: the kernel picks one (tests); port() tells which
  std::string secret;  // empty: unauthenticated (one warning)
  // The job's size, which bounds how many connections may wait to authenticate at once
  // (2 * expected_size + 16; 64 when 0, unknown). Beyond that the oldest waiting one is
  // dropped, so strangers cannot use up rank 0's descriptors.
  int expected_size = 0;
};

// Counters for tests and diagnostics.
struct StoreServerStats {
  uint64_t accepted = 0;  // connections accepted
  uint64_t refused = 0;   // connections dropped for a bad MAC, a malformed or oversized frame
  uint64_t served = 0;    // requests answered
  // Connections dropped because too many were waiting to authenticate, and the most that
  // ever waited at once.
  uint64_t dropped_unauthenticated = 0;
  size_t peak_unauthenticated = 0;
  // Largest frame buffer held for a connection before / after it authenticated, in bytes.
  size_t largest_hello_buffer = 0;
  size_t largest_frame_buffer = 0;
};

// The store: a thread serving every connection with poll(). Stops in stop() or the destructor.
class StoreServer {
 public:
  static Status start(const StoreServerOptions& options, std::unique_ptr<StoreServer>* out);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  int port() const;
  // The address it listens on ("10.0.0.1:29500"; "0.0.0.0:29500" for all interfaces).
  std::string listen_address() const;
  // An address this host's own clients can connect to (loopback when listening on all).
  std::string connect_host() const;
  StoreServerStats stats() const;
  // Closes every connection and joins the thread. Idempotent.
  void stop();

 private:
  class Loop;
  explicit StoreServer(std::unique_ptr<Loop> loop);
  std::unique_ptr<Loop> loop_;
};

struct StoreClientOptions {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string secret;  // must match the store's; empty only toward an unauthenticated store
  int rank = -1;       // named in errors and in the store's log
  // Bounds connecting (with retries), the handshake, and each set.
  double timeout_seconds = 300;
};

// One rank's connection to the store. One call at a time; after an I/O or protocol error every
// later call fails with that error.
class StoreClient {
 public:
  // Connects with exponential backoff until options.timeout_seconds, then authenticates.
  static Status connect(const StoreClientOptions& options, std::unique_ptr<StoreClient>* out);
  ~StoreClient();
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  // Stores value under key; reads > 0 lets the store erase it after that many deliveries.
  Status set(const std::string& key, const std::string& value, uint32_t reads = 0);
  // Waits until every key is present and returns their values in order, or fails after
  // timeout_seconds; then missing (if not null) receives the indices of the absent keys. The
  // caller keeps the reply under kStoreMaxFrameBytes (frame.h) by asking for fewer keys.
  Status get(const std::vector<std::string>& keys, double timeout_seconds,
             std::vector<std::string>* values, std::vector<uint32_t>* missing = nullptr);
  // "host:port" of the store, for messages.
  const std::string& endpoint() const;

 private:
  class Connection;
  explicit StoreClient(std::unique_ptr<Connection> connection);
  std::unique_ptr<Connection> connection_;
};

struct StoreOptions {
  int rank = 0;
  int size = 1;
  std::string master_addr = "127.0.0.1";  // HVDC_MASTER_ADDR
  int port = 0;        // HVDC_MASTER_PORT; 0 (rank 0 only, tests): the kernel picks one
  std::string secret;  // HVDC_SECRET
  std::string iface;   // HVDC_IFACE: rank 0 listens only on this interface's address
  // Bounds connecting to the store, each collective's wait for the other ranks, and rank 0's
  // wait in finalize() for the others to finish.
  double timeout_seconds = 300;
};

// The Bootstrap over the store. Rank 0 runs the server in-process and is also a client. Every
// collective uses keys named by a per-call sequence number, so ranks must call in the same
// order (as with MPI). One thread at a time.
class StoreBootstrap final : public Bootstrap {
 public:
  static Status create(const StoreOptions& options, std::unique_ptr<StoreBootstrap>* out);
  ~StoreBootstrap() override;

  const char* name() const override { return "tcp-store"; }
  int rank() const override { return options_.rank; }
  int size() const override { return options_.size; }
  Status allgather(const void* in, size_t bytes, void* out) override;
  Status broadcast(void* buf, size_t bytes, int root) override;
  Status barrier() override;
  Status barrier_within(double seconds) override;
  // Every rank reports that it is done; rank 0 stops the store only when all have (or after
  // timeout_seconds, with an error naming the ranks that never reported).
  Status finalize() override;

  // The store's port: on rank 0 the one it listens on (useful with port 0), elsewhere the
  // configured one.
  int port() const;

 private:
  explicit StoreBootstrap(const StoreOptions& options) : options_(options) {}
  Status start();
  Status check_usable(const char* what) const;
  // "allgather/<call>/<rank>" for each rank; finalize's keys carry no call number, so that ranks
  // whose calls got out of step can still finish.
  std::vector<std::string> keys_for(const char* what, const std::vector<int>& ranks,
                                    bool numbered) const;
  // Gets the keys, in batches that keep each reply under the frame limit, waiting at most
  // timeout_seconds in all; values[i] belongs to ranks[i] and must be value_bytes long (when
  // check_size). A timeout names the ranks that never arrived.
  Status gather(const char* what, const std::vector<int>& ranks,
                const std::vector<std::string>& keys, size_t value_bytes, bool check_size,
                std::vector<std::string>* values);

  StoreOptions options_;
  std::unique_ptr<StoreServer> server_;  // rank 0 only
  std::unique_ptr<StoreClient> client_;
  uint64_t sequence_ = 0;
  bool finalized_ = false;
  // Set by barrier_within: the barrier and finalize together wait no longer than this.
  std::optional<std::chrono::steady_clock::time_point> fault_deadline_;
  void clamp_timeout_to_deadline();
};

// create() as a Bootstrap.
Status make_store_bootstrap(const StoreOptions& options, std::unique_ptr<Bootstrap>* out);

}  // namespace hvdc::bootstrap
