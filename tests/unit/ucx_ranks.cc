#include "ucx_ranks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <numeric>
#include <thread>

#include "bootstrap/bootstrap.h"
#include "bootstrap/inprocess.h"
#include "transport/ucx/ucx_transport.h"

namespace ucx_ranks {
namespace {

using hvdc::bootstrap::Bootstrap;
using hvdc::common::make_error;
using hvdc::common::Status;
using hvdc::ops::cpu::Comm;
using hvdc::transport::Transport;
using Clock = std::chrono::steady_clock;

Status connect(Bootstrap& boot, std::unique_ptr<Transport>* transport) {
  hvdc::transport::UcxOptions options;
  options.rank = boot.rank();
  options.size = boot.size();
  auto exchange = [&boot](const std::string& mine, std::vector<std::string>* all) {
    return hvdc::bootstrap::allgather_strings(boot, mine, all);
  };
  return hvdc::transport::create_ucx_transport(options, exchange, transport);
}

// Connects, runs body, then closes the way Engine::shutdown does: every rank must be past its
// last send (barrier) before endpoints close, and past the close before the transport goes.
// A failing rank raises `failed`, which makes the others' waits fail instead of hang.
Status run_rank(Bootstrap& boot, const RankBody& body, std::atomic<bool>& failed,
                Clock::time_point deadline) {
  std::unique_ptr<Transport> transport;
  if (boot.size() > 1) HVDC_RETURN_IF_ERROR(connect(boot, &transport));
  std::vector<char> scratch;
  Comm comm;
  comm.transport = transport.get();
  comm.members.resize(boot.size());
  std::iota(comm.members.begin(), comm.members.end(), 0);
  comm.index = boot.rank();
  comm.seq = 1;
  comm.scratch = &scratch;
  comm.interrupt = [&failed, deadline]() -> Status {
    if (failed.load()) return make_error(HVD_ERR_ABORTED, "another rank failed");
    if (Clock::now() > deadline) return make_error(HVD_ERR_TIMEOUT, "test deadline passed");
    return Status::ok();
  };
  Status status = body(comm);
  if (!status.is_ok()) failed.store(true);
  Status closed = boot.barrier();
  if (transport) {
    if (closed.is_ok()) closed = transport->close();
    Status again = boot.barrier();
    if (closed.is_ok()) closed = again;
  }
  return status.is_ok() ? closed : status;
}

}  // namespace

void run_ranks(int n, const RankBody& body) {
  auto group = hvdc::bootstrap::InProcessGroup::create(n);
  std::atomic<bool> failed{false};
  const Clock::time_point deadline = Clock::now() + kDeadline;
  std::vector<Status> status(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      std::unique_ptr<Bootstrap> boot = group->member(r);
      status[r] = run_rank(*boot, body, failed, deadline);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(status[r].is_ok()) << "rank " << r << " of " << n << ": " << status[r].message();
  }
}

std::string first_difference(const Bytes& got, const Bytes& want) {
  if (got.size() != want.size()) {
    return "size " + std::to_string(got.size()) + ", want " + std::to_string(want.size());
  }
  // memcmp first: the usual answer is "equal", and the AddressSanitizer build runs the test
  // programs at -O0, where std::mismatch's iterators are calls per byte.
  if (got.empty() || std::memcmp(got.data(), want.data(), got.size()) == 0) return "";
  auto it = std::mismatch(got.begin(), got.end(), want.begin());
  return "byte " + std::to_string(it.first - got.begin()) + " is " + std::to_string(*it.first) +
         ", want " + std::to_string(*it.second);
}

}  // namespace ucx_ranks
