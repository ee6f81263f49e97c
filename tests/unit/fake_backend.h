// A backend that finishes its collectives only when the test says so, as a backend on a device
// stream would: each start() is logged with its arguments and a switch that finishes it.
#pragma once

#include <memory>
#include <vector>

#include "ops/backend.h"

namespace hvdc_test {

using hvdc::common::Status;
using hvdc::ops::Backend;
using hvdc::ops::CollectiveArgs;
using hvdc::ops::PendingCollective;

// What the fake backend saw of one start(), and the switch that finishes it.
struct Started {
  CollectiveArgs args;
  bool done = false;
  Status result;
};

class FakePending : public PendingCollective {
 public:
  explicit FakePending(Started* started) : started_(started) {}
  bool poll(Status* status) override {
    if (!started_->done) return false;
    *status = started_->result;
    return true;
  }

 private:
  Started* started_;
};

class FakeBackend : public Backend {
 public:
  explicit FakeBackend(std::vector<std::unique_ptr<Started>>* log) : log_(log) {}
  Status start(const CollectiveArgs& op, std::unique_ptr<PendingCollective>* pending) override {
    log_->push_back(std::make_unique<Started>());
    log_->back()->args = op;
    *pending = std::make_unique<FakePending>(log_->back().get());
    return Status::ok();
  }

 private:
  std::vector<std::unique_ptr<Started>>* log_;
};

}  // namespace hvdc_test
