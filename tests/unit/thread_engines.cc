#include "thread_engines.h"

#include <thread>

#include "bootstrap/inprocess.h"

namespace hvdc_test {

using hvdc::core::Engine;
using hvdc::core::OpState;
using hvdc::core::TensorEntry;

void on_ranks(int n, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int r = 0; r < n; ++r) threads.emplace_back(fn, r);
  for (std::thread& t : threads) t.join();
}

Status ThreadEngines::start(int n, hvdc::core::EngineConfig config,
                            std::unique_ptr<ThreadEngines>* out, const PerRankConfig& per_rank) {
  auto job = std::unique_ptr<ThreadEngines>(new ThreadEngines());
  job->fabric_ = hvdc::transport::loopback::LoopbackFabric::create(n);
  config.transport_factory = job->fabric_->factory();
  auto group = hvdc::bootstrap::InProcessGroup::create(n);
  job->engines_.resize(n);
  std::vector<Status> status(n);
  on_ranks(n, [&](int r) {
    hvdc::core::EngineConfig mine = config;
    if (per_rank) per_rank(r, &mine);
    status[r] = Engine::start(group->member(r), mine, &job->engines_[r]);
  });
  for (int r = 0; r < n; ++r) {
    if (!status[r].is_ok()) return status[r].with_context("starting rank " + std::to_string(r));
  }
  *out = std::move(job);
  return Status::ok();
}

ThreadEngines::~ThreadEngines() {
  if (!engines_.empty()) shutdown();
}

std::vector<Status> ThreadEngines::shutdown() {
  const int n = size();
  std::vector<Status> status(n);
  on_ranks(n, [&](int r) {
    if (engines_[r]) status[r] = engines_[r]->shutdown();
  });
  engines_.clear();
  return status;
}

hvdc::core::Request make_request(const std::string& name, hvdc::core::OpType type, int32_t dtype,
                                 std::vector<int64_t> shape) {
  hvdc::core::Request request;
  request.name = name;
  request.op_type = type;
  request.dtype = dtype;
  request.device_type = HVD_DEVICE_CPU;
  request.shape = std::move(shape);
  return request;
}

TensorEntry make_entry(hvdc::core::Request request, const void* input, void* output) {
  TensorEntry entry;
  entry.request = std::move(request);
  entry.input = input;
  entry.output = output;
  entry.state = std::make_shared<OpState>(nullptr, nullptr);
  return entry;
}

Status submit(Engine& engine, TensorEntry entry, std::shared_ptr<OpState>* state) {
  *state = entry.state;
  return engine.enqueue(std::move(entry));
}

Status await(const std::shared_ptr<OpState>& state, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!state->done() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  if (!state->done()) {
    return Status(HVD_ERR_TIMEOUT,
                  "the test gave up waiting after " + std::to_string(limit.count()) + " ms");
  }
  return state->wait(0);
}

Status run(Engine& engine, TensorEntry entry, std::shared_ptr<OpState>* state) {
  std::shared_ptr<OpState> mine;
  HVDC_RETURN_IF_ERROR(submit(engine, std::move(entry), &mine));
  Status st = await(mine);
  if (state != nullptr) *state = mine;
  return st;
}

}  // namespace hvdc_test
