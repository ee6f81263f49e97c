// Control messages between ranks of one test thread, for testing the engine's collaborators
// without a network: each rank's FakeTransport delivers send_message() into the receiver's
// queue at once. The data path (isend, irecv, wait) is not there; tests that need it use real
// engines.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hvdc.h"
#include "transport/transport.h"

namespace hvdc_test {

using hvdc::common::Status;
using hvdc::transport::Tag;

struct FakeNetwork {
  struct Message {
    Tag tag;
    std::string bytes;
  };
  explicit FakeNetwork(int n) : inbox(n) {}
  std::vector<std::deque<Message>> inbox;  // per receiving rank, in arrival order
};

class FakeTransport : public hvdc::transport::Transport {
 public:
  FakeTransport(std::shared_ptr<FakeNetwork> net, int rank) : net_(std::move(net)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(net_->inbox.size()); }
  Status isend(int, Tag, const void*, size_t, hvdc::transport::Request*) override {
    return unsupported();
  }
  Status irecv(int, Tag, void*, size_t, hvdc::transport::Request*) override {
    return unsupported();
  }
  Status wait(hvdc::transport::Request*, size_t, const hvdc::transport::Interrupt&) override {
    return unsupported();
  }
  Status wait_flags(const hvdc::transport::FlagWait*, size_t,
                    const hvdc::transport::Interrupt&) override {
    return unsupported();
  }
  Status send_message(int peer, Tag tag, std::string_view bytes) override {
    net_->inbox[peer].push_back({tag, std::string(bytes)});
    return Status::ok();
  }
  bool poll_message(Tag want, Tag mask, Tag* got, std::string* bytes) override {
    std::deque<FakeNetwork::Message>& inbox = net_->inbox[rank_];
    for (auto it = inbox.begin(); it != inbox.end(); ++it) {
      if ((it->tag & mask) != (want & mask)) continue;
      *got = it->tag;
      *bytes = std::move(it->bytes);
      inbox.erase(it);
      return true;
    }
    return false;
  }
  Status check_peers() const override { return Status::ok(); }
  std::vector<int> waited_peers() const override { return waited; }
  void quiesce() override {}
  int progress() override { return 0; }
  void sleep(int, int) override {}
  Status close() override { return Status::ok(); }

  std::vector<int> waited;  // what waited_peers() reports: the test sets it

 private:
  static Status unsupported() {
    return Status(HVD_ERR_UNSUPPORTED, "the fake transport carries control messages only");
  }
  std::shared_ptr<FakeNetwork> net_;
  int rank_;
};

}  // namespace hvdc_test
