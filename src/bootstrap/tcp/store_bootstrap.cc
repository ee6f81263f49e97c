// Bootstrap collectives as store operations. Each rank publishes its piece under a key named by
// the collective and its call number, then waits for the pieces it needs. Each key is erased
// once every rank that needs it has read it, so the store stays small over a long job.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "bootstrap/tcp/frame.h"
#include "bootstrap/tcp/store.h"
#include "common/log.h"

namespace hvdc::bootstrap {

using common::make_error;
using common::strfmt;

namespace {

using Clock = std::chrono::steady_clock;

// Room left in a reply frame for its header, kind, count and MAC.
constexpr size_t kReplyOverhead = 64 + kStoreMacBytes;

std::string join_ranks(const std::vector<int>& ranks) {
  std::string out;
  const size_t shown = std::min<size_t>(ranks.size(), 16);
  for (size_t i = 0; i < shown; ++i) out += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  if (shown < ranks.size()) out += strfmt(" and %zu more", ranks.size() - shown);
  return out;
}

std::vector<int> all_but(int size, int skip) {
  std::vector<int> ranks;
  for (int r = 0; r < size; ++r) {
    if (r != skip) ranks.push_back(r);
  }
  return ranks;
}

}  // namespace

Status StoreBootstrap::create(const StoreOptions& options, std::unique_ptr<StoreBootstrap>* out) {
  if (options.size < 1 || options.rank < 0 || options.rank >= options.size) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "store bootstrap: rank %d of size %d", options.rank,
                      options.size);
  }
  if (options.port < 0 || options.port > 65535 || (options.port == 0 && options.rank != 0)) {
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "store bootstrap: rank %d cannot use port %d (1-65535; 0 only on rank 0)",
                      options.rank, options.port);
  }
  if (!(options.timeout_seconds > 0)) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "store bootstrap: timeout of %g s",
                      options.timeout_seconds);
  }
  std::unique_ptr<StoreBootstrap> bootstrap(new StoreBootstrap(options));
  HVDC_RETURN_IF_ERROR(bootstrap->start());
  *out = std::move(bootstrap);
  return Status::ok();
}

StoreBootstrap::~StoreBootstrap() {
  // Without finalize (an error path): no waiting for the others.
  client_.reset();
  if (server_ != nullptr) server_->stop();
}

Status StoreBootstrap::start() {
  if (options_.size == 1) return Status::ok();  // nobody to exchange with
  StoreClientOptions client;
  client.host = options_.master_addr;
  client.port = options_.port;
  client.secret = options_.secret;
  client.rank = options_.rank;
  client.timeout_seconds = options_.timeout_seconds;
  if (options_.rank == 0) {
    StoreServerOptions server;
    server.master_addr = options_.master_addr;
    server.iface = options_.iface;
    server.port = options_.port;
    server.secret = options_.secret;
    server.expected_size = options_.size;
    HVDC_RETURN_IF_ERROR(StoreServer::start(server, &server_));
    client.host = server_->connect_host();
    client.port = server_->port();
  }
  return StoreClient::connect(client, &client_);
}

int StoreBootstrap::port() const {
  return server_ != nullptr ? server_->port() : options_.port;
}

Status StoreBootstrap::check_usable(const char* what) const {
  if (finalized_) {
    return make_error(HVD_ERR_INVALID_USAGE, "store bootstrap: %s after finalize", what);
  }
  return Status::ok();
}

std::vector<std::string> StoreBootstrap::keys_for(const char* what, const std::vector<int>& ranks,
                                                  bool numbered) const {
  std::vector<std::string> keys;
  keys.reserve(ranks.size());
  const unsigned long long call = sequence_;
  for (int r : ranks) {
    keys.push_back(numbered ? strfmt("%s/%llu/%d", what, call, r) : strfmt("%s/%d", what, r));
  }
  return keys;
}

Status StoreBootstrap::gather(const char* what, const std::vector<int>& ranks,
                              const std::vector<std::string>& keys, size_t value_bytes,
                              bool check_size, std::vector<std::string>* values) {
  using std::chrono::duration;
  const auto start = Clock::now();
  const size_t per_batch = std::clamp<size_t>(
      (kStoreMaxFrameBytes - kReplyOverhead) / (value_bytes + 4), 1, kStoreMaxKeysPerGet);
  values->clear();
  for (size_t first = 0; first < keys.size(); first += per_batch) {
    const size_t count = std::min(per_batch, keys.size() - first);
    const std::vector<std::string> batch(keys.begin() + first, keys.begin() + first + count);
    const double left = options_.timeout_seconds - duration<double>(Clock::now() - start).count();
    std::vector<std::string> got;
    std::vector<uint32_t> missing;
    Status st = client_->get(batch, std::max(left, 0.001), &got, &missing);
    if (!st.is_ok() && !missing.empty()) {
      std::vector<int> absent;
      for (uint32_t index : missing) absent.push_back(ranks[first + index]);
      return make_error(HVD_ERR_BOOTSTRAP,
                        "rank %d: %s #%llu timed out after %.1f s waiting for rank%s %s at the "
                        "rendezvous store %s",
                        options_.rank, what, static_cast<unsigned long long>(sequence_),
                        duration<double>(Clock::now() - start).count(),
                        absent.size() == 1 ? "" : "s", join_ranks(absent).c_str(),
                        client_->endpoint().c_str());
    }
    if (!st.is_ok())
      return st.with_context(strfmt("%s #%llu", what, (unsigned long long)sequence_));
    for (size_t i = 0; i < count; ++i) {
      if (check_size && got[i].size() != value_bytes) {
        return make_error(
            HVD_ERR_BOOTSTRAP,
            "rank %d: %s #%llu: rank %d contributed %zu bytes, this rank expected %zu",
            options_.rank, what, static_cast<unsigned long long>(sequence_), ranks[first + i],
            got[i].size(), value_bytes);
      }
      values->push_back(std::move(got[i]));
    }
  }
  return Status::ok();
}

Status StoreBootstrap::allgather(const void* in, size_t bytes, void* out) {
  HVDC_RETURN_IF_ERROR(check_usable("allgather"));
  ++sequence_;
  if (options_.size == 1) {
    if (bytes > 0) std::memmove(out, in, bytes);
    return Status::ok();
  }
  // A copy first: in and out may overlap, and the store needs a string anyway.
  const std::string mine(static_cast<const char*>(in), bytes);
  const std::vector<int> others = all_but(options_.size, options_.rank);
  const std::string my_key = keys_for("allgather", {options_.rank}, true).front();
  HVDC_RETURN_IF_ERROR(client_->set(my_key, mine, static_cast<uint32_t>(others.size())));
  std::vector<std::string> values;
  HVDC_RETURN_IF_ERROR(
      gather("allgather", others, keys_for("allgather", others, true), bytes, true, &values));
  char* dst = static_cast<char*>(out);
  if (bytes > 0) std::memcpy(dst + options_.rank * bytes, mine.data(), bytes);
  for (size_t i = 0; i < others.size(); ++i) {
    if (bytes > 0) std::memcpy(dst + others[i] * bytes, values[i].data(), bytes);
  }
  return Status::ok();
}

Status StoreBootstrap::broadcast(void* buf, size_t bytes, int root) {
  HVDC_RETURN_IF_ERROR(check_usable("broadcast"));
  if (root < 0 || root >= options_.size) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "broadcast root %d of size %d", root,
                      options_.size);
  }
  ++sequence_;
  if (options_.size == 1) return Status::ok();
  const std::vector<int> root_only = {root};
  const std::vector<std::string> keys = keys_for("broadcast", root_only, true);
  if (options_.rank == root) {
    return client_->set(keys.front(), std::string(static_cast<const char*>(buf), bytes),
                        static_cast<uint32_t>(options_.size - 1));
  }
  std::vector<std::string> values;
  HVDC_RETURN_IF_ERROR(gather("broadcast", root_only, keys, bytes, true, &values));
  if (bytes > 0) std::memcpy(buf, values.front().data(), bytes);
  return Status::ok();
}

Status StoreBootstrap::barrier() {
  HVDC_RETURN_IF_ERROR(check_usable("barrier"));
  ++sequence_;
  if (options_.size == 1) return Status::ok();
  const std::vector<int> others = all_but(options_.size, options_.rank);
  const std::string my_key = keys_for("barrier", {options_.rank}, true).front();
  HVDC_RETURN_IF_ERROR(client_->set(my_key, std::string(), static_cast<uint32_t>(others.size())));
  std::vector<std::string> values;
  return gather("barrier", others, keys_for("barrier", others, true), 0, true, &values);
}

// After a fault: waits no longer than `seconds`, here and in finalize() together, for ranks
// that may be gone for good.
Status StoreBootstrap::barrier_within(double seconds) {
  if (seconds > 0) {
    fault_deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(seconds));
  }
  clamp_timeout_to_deadline();
  return barrier();
}

void StoreBootstrap::clamp_timeout_to_deadline() {
  if (!fault_deadline_) return;
  // A little time even past the deadline, so that ranks still there can be told we are done.
  const double left =
      std::max(0.2, std::chrono::duration<double>(*fault_deadline_ - Clock::now()).count());
  options_.timeout_seconds = std::min(options_.timeout_seconds, left);
}

Status StoreBootstrap::finalize() {
  if (finalized_) return Status::ok();
  finalized_ = true;
  if (options_.size == 1) return Status::ok();
  clamp_timeout_to_deadline();
  if (options_.rank != 0) {
    Status st =
        client_->set(keys_for("finalize", {options_.rank}, false).front(), std::string(), 1);
    client_.reset();
    return st;
  }
  // Rank 0 keeps the store up until every other rank has said it is done, so a fast rank 0
  // cannot pull it from under ranks still reading their last values.
  const std::vector<int> others = all_but(options_.size, 0);
  std::vector<std::string> values;
  Status st = gather("finalize", others, keys_for("finalize", others, false), 0, false, &values);
  if (!st.is_ok()) {
    HVDC_LOG_WARNING("stopping the rendezvous store without hearing from every rank: %s",
                     st.message().c_str());
  }
  client_.reset();
  server_->stop();
  server_.reset();
  return st;
}

Status make_store_bootstrap(const StoreOptions& options, std::unique_ptr<Bootstrap>* out) {
  std::unique_ptr<StoreBootstrap> bootstrap;
  HVDC_RETURN_IF_ERROR(StoreBootstrap::create(options, &bootstrap));
  *out = std::move(bootstrap);
  return Status::ok();
}

}  // namespace hvdc::bootstrap
