// The engine's own features through the public API: fusion, the response cache (warm steps
// that never reach the coordinator, metadata changes), and many named tensors submitted in a
// different random order on every rank. The same cases run with fusion and the cache on and
// off (meson runs this mode under each setting; HVDC_FUSION_THRESHOLD and HVDC_CACHE_CAPACITY
// tell the cases what to expect).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "harness.h"
#include "reference.h"
#include "suites.h"

namespace hvdc_test {

namespace {

struct Tensor {
  std::string name;
  size_t count;
  Case c;
};

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoll(v, nullptr, 10) : fallback;
}

bool fusion_on() {
  return env_int("HVDC_FUSION_THRESHOLD", 1) != 0;
}
bool cache_on() {
  return env_int("HVDC_CACHE_CAPACITY", 1) != 0;
}

hvd_stats_t stats_now() {
  hvd_stats_t s = {};
  s.struct_size = sizeof(s);
  hvd_stats_get(&s);
  return s;
}

// Submits every tensor in `order`, waits for all, checks every result.
bool run_batch(const std::vector<Tensor>& tensors, const std::vector<size_t>& order,
               std::string* detail) {
  std::vector<std::vector<char>> bufs(tensors.size());
  std::vector<std::vector<int64_t>> shapes(tensors.size());
  std::vector<hvd_handle_t> handles;
  for (size_t k : order) {
    const Tensor& t = tensors[k];
    bufs[k].resize(t.count * dtype_bytes(t.c.dtype) + 1);
    fill_input(bufs[k].data(), t.count, t.c, hvd_rank());
    shapes[k] = {static_cast<int64_t>(t.count)};
    hvd_tensor_t desc = make_tensor(bufs[k].data(), t.c.dtype, shapes[k]);
    hvd_handle_t h = 0;
    hvd_status_t s =
        hvd_allreduce_async(&desc, bufs[k].data(), t.c.op, t.name.c_str(), nullptr, &h);
    if (s != HVD_SUCCESS) {
      *detail = "submit " + t.name + ": " + status_text(s);
      hvd_wait_all(handles.data(), handles.size());
      for (hvd_handle_t x : handles) hvd_handle_free(x);
      return false;
    }
    handles.push_back(h);
  }
  hvd_status_t s = hvd_wait_all(handles.data(), handles.size());
  for (hvd_handle_t h : handles) hvd_handle_free(h);
  if (s != HVD_SUCCESS) {
    *detail = "wait_all: " + status_text(s);
    return false;
  }
  for (size_t k = 0; k < tensors.size(); ++k) {
    if (!check_allreduce(bufs[k].data(), tensors[k].count, tensors[k].c, hvd_size(), detail)) {
      *detail = tensors[k].name + ": " + *detail;
      return false;
    }
  }
  return true;
}

std::vector<size_t> shuffled(size_t n, unsigned seed) {
  std::vector<size_t> order(n);
  for (size_t k = 0; k < n; ++k) order[k] = k;
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  return order;
}

// 200 tensors of random sizes (the same on every rank), mostly small, some beyond the ring's
// threshold, in float32 sum, float32 average, int32 sum and bfloat16 max so that fusable and
// unfusable tensors interleave.
std::vector<Tensor> random_tensors(const std::string& prefix) {
  const Case cases[] = {{HVD_FLOAT32, HVD_OP_SUM},
                        {HVD_FLOAT32, HVD_OP_AVERAGE},
                        {HVD_INT32, HVD_OP_SUM},
                        {HVD_BFLOAT16, HVD_OP_MAX}};
  std::mt19937 rng(20261122);
  std::vector<Tensor> out;
  for (int k = 0; k < 200; ++k) {
    const size_t count = rng() % 8 == 0 ? rng() % 300000 : rng() % 3000;
    out.push_back({prefix + std::to_string(k), count, cases[rng() % 4]});
  }
  return out;
}

// ResNet-50's 161 gradient names from bench/data, each capped at 4096 elements so that 100
// steps stay quick at np 4 on two cores (the cache keys on names and metadata, not on size).
std::vector<Tensor> resnet_tensors() {
  std::ifstream in(HVDC_TEST_DATA_DIR "/resnet50_params.txt");
  std::vector<Tensor> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, shape;
    size_t count = 0;
    fields >> name >> shape >> count;
    out.push_back({name, std::min<size_t>(count, 4096), {HVD_FLOAT32, HVD_OP_SUM}});
  }
  std::reverse(out.begin(), out.end());  // gradients are ready in backward order
  return out;
}

}  // namespace

void test_random_named_tensors(Results& results) {
  const std::vector<Tensor> tensors = random_tensors("random.");
  for (int pass = 0; pass < 2; ++pass) {  // the second pass finds them cached
    std::string detail;
    const bool ok = run_batch(tensors, shuffled(tensors.size(), 1000 * pass + hvd_rank()), &detail);
    record(results, "engine.random_order_200_pass" + std::to_string(pass), ok, detail);
  }
}

void test_fusion_stats(Results& results) {
  std::vector<Tensor> tensors;
  for (int k = 0; k < 64; ++k)
    tensors.push_back({"fuse." + std::to_string(k), 100u + k, {HVD_FLOAT32, HVD_OP_SUM}});
  // The last rank submits late and all at once, so the tensors become ready together.
  if (hvd_rank() == hvd_size() - 1) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const hvd_stats_t before = stats_now();
  std::string detail;
  bool ok = run_batch(tensors, shuffled(tensors.size(), hvd_rank()), &detail);
  const hvd_stats_t after = stats_now();
  const uint64_t fused = after.fused_collectives - before.fused_collectives;
  const int64_t max_fused = all_max(static_cast<int64_t>(fused), "fuse.stats");
  if (ok && fusion_on() && max_fused == 0) {
    ok = false;
    detail = "64 tensors ready together were never fused";
  } else if (ok && !fusion_on() && max_fused != 0) {
    ok = false;
    detail = "HVDC_FUSION_THRESHOLD=0 but " + std::to_string(max_fused) + " fused collectives ran";
  }
  record(results, "engine.fusion_stats", ok, detail);
}

void test_cache_warm_steps(Results& results) {
  const std::vector<Tensor> tensors = resnet_tensors();
  std::string detail;
  bool ok = tensors.size() == 161;
  if (!ok) detail = "read " + std::to_string(tensors.size()) + " ResNet-50 tensors, not 161";
  std::vector<size_t> order(tensors.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  ok = ok && run_batch(tensors, order, &detail);  // warm-up: negotiated once
  const hvd_stats_t before = stats_now();
  for (int step = 0; ok && step < 100; ++step) ok = run_batch(tensors, order, &detail);
  const hvd_stats_t after = stats_now();
  const uint64_t requests = after.coordinator_requests - before.coordinator_requests;
  const uint64_t misses = after.cache_misses - before.cache_misses;
  const uint64_t hits = after.cache_hits - before.cache_hits;
  if (ok && cache_on() && (requests != 0 || misses != 0 || hits != 16100)) {
    ok = false;
    detail = "over 100 warm steps: " + std::to_string(requests) + " coordinator requests, " +
             std::to_string(misses) + " misses, " + std::to_string(hits) +
             " hits (want 0, 0, 16100)";
  } else if (ok && !cache_on() && (hits != 0 || misses != 16100)) {
    ok = false;
    detail = "cache disabled but " + std::to_string(hits) + " hits, " + std::to_string(misses) +
             " misses";
  }
  record(results, "engine.cache_warm_steps_resnet50", ok, detail);
}

// A cached name submitted with new metadata on every rank is renegotiated; submitted with
// different metadata on one rank it fails everywhere; the next op works.
void test_cache_invalidation(Results& results) {
  const Case c{HVD_FLOAT32, HVD_OP_SUM};
  const bool last = hvd_rank() == hvd_size() - 1;
  const size_t counts[] = {10, 10, 20, 20, last && hvd_size() > 1 ? 30u : 20u, 20};
  for (size_t step = 0; step < 6; ++step) {
    std::vector<float> buf(counts[step]);
    fill_input(buf.data(), buf.size(), c, hvd_rank());
    int64_t shape[1] = {static_cast<int64_t>(buf.size())};
    hvd_tensor_t t = {buf.data(), HVD_FLOAT32, 1, shape, {HVD_DEVICE_CPU, 0}};
    hvd_handle_t h = 0;
    hvd_status_t s = hvd_allreduce_async(&t, buf.data(), HVD_OP_SUM, "cache.inv", nullptr, &h);
    if (s == HVD_SUCCESS) s = hvd_wait(h);
    hvd_handle_free(h);
    std::string detail;
    const bool mismatch_step = step == 4 && hvd_size() > 1;
    bool ok = mismatch_step ? s == HVD_ERR_MISMATCH : s == HVD_SUCCESS;
    if (!ok) detail = status_text(s);
    if (ok && !mismatch_step) ok = check_allreduce(buf.data(), buf.size(), c, hvd_size(), &detail);
    record(results, "engine.cache_invalidation_step" + std::to_string(step), ok, detail);
  }
}

}  // namespace hvdc_test
