// Mode "hierarchical": host allreduces across hosts (src/ops/cpu/allreduce/hierarchical.cc). The
// ranks pretend to run on HVDC_TEST_HOSTS hosts (main.cc's pretend_hosts()): exact sums and
// averages at the sizes where the chunks across hosts are shortest, in place and out of place,
// fused, in a process set; and rank 0's timeline says whether the hierarchical phases ran, which
// they must exactly where every host has the same number of ranks (two at least) and
// HVDC_HIERARCHICAL_ALLREDUCE is not 0.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"
#include "suites.h"

namespace hvdc_test {
namespace {

// Element i of rank r's input: small integers, so every sum is exact in float32.
float input_value(int r, size_t i) {
  return static_cast<float>((r + 1) * (i % 5) + (i % 3));
}

bool check(const std::vector<float>& out, int32_t op, std::string* detail) {
  const int n = hvd_size();
  for (size_t i = 0; i < out.size(); ++i) {
    float want = 0;
    for (int r = 0; r < n; ++r) want += input_value(r, i);
    if (op == HVD_OP_AVERAGE) want /= static_cast<float>(n);
    if (out[i] != want) {
      *detail = "element " + std::to_string(i) + " of " + std::to_string(out.size()) + ": " +
                std::to_string(out[i]) + ", want " + std::to_string(want);
      return false;
    }
  }
  return true;
}

// One float32 allreduce of `count` elements; in place or out of place.
bool allreduce_case(size_t count, int32_t op, bool in_place, std::string* detail) {
  std::vector<float> in(count), out(count, -1.0f);
  for (size_t i = 0; i < count; ++i) in[i] = input_value(hvd_rank(), i);
  float* dst = in_place ? in.data() : out.data();
  const std::vector<int64_t> shape = {static_cast<int64_t>(count)};
  hvd_tensor_t t = make_tensor(in.data(), HVD_FLOAT32, shape);
  hvd_handle_t h = 0;
  const std::string name = "hier." + std::to_string(count) + (in_place ? ".in" : ".out");
  hvd_status_t s = hvd_allreduce_async(&t, dst, op, name.c_str(), nullptr, &h);
  if (s == HVD_SUCCESS) s = hvd_wait(h);
  hvd_handle_free(h);
  if (s != HVD_SUCCESS) {
    *detail = status_text(s);
    return false;
  }
  return check(in_place ? in : out, op, detail);
}

void test_sizes(Results& results) {
  const size_t n = static_cast<size_t>(hvd_size());
  // Past the direct algorithm's 64 KiB; n * k elements and their neighbours, where the chunks
  // across hosts hold one element or a few, and sizes no member count divides.
  const size_t base = (64 << 10) / sizeof(float) + 1;
  for (size_t count : std::vector<size_t>{base, base + n - 1, base + n, (256u << 10) + 3, 999983}) {
    for (int32_t op : {HVD_OP_SUM, HVD_OP_AVERAGE}) {
      for (bool in_place : {true, false}) {
        std::string detail;
        const bool ok = allreduce_case(count, op, in_place, &detail);
        record(results,
               "hierarchical.count-" + std::to_string(count) +
                   (op == HVD_OP_SUM ? ".sum" : ".average") + (in_place ? ".in" : ".out"),
               ok, detail);
      }
    }
  }
}

// Three tensors fused into one op (each past 64 KiB together, not alone).
void test_fused(Results& results) {
  const size_t counts[3] = {7000, 9001, 11003};
  std::vector<std::vector<float>> bufs(3);
  std::vector<std::vector<int64_t>> shapes(3);
  std::vector<hvd_handle_t> handles(3, 0);
  bool ok = true;
  std::string detail;
  for (int k = 0; k < 3 && ok; ++k) {
    bufs[k].resize(counts[k]);
    for (size_t i = 0; i < counts[k]; ++i) bufs[k][i] = input_value(hvd_rank(), i);
    shapes[k] = {static_cast<int64_t>(counts[k])};
    hvd_tensor_t t = make_tensor(bufs[k].data(), HVD_FLOAT32, shapes[k]);
    const std::string name = "hier.fused." + std::to_string(k);
    ok = hvd_allreduce_async(&t, bufs[k].data(), HVD_OP_SUM, name.c_str(), nullptr, &handles[k]) ==
         HVD_SUCCESS;
  }
  ok = ok && hvd_wait_all(handles.data(), handles.size()) == HVD_SUCCESS;
  for (int k = 0; k < 3 && ok; ++k) ok = check(bufs[k], HVD_OP_SUM, &detail);
  for (hvd_handle_t h : handles) hvd_handle_free(h);
  record(results, "hierarchical.fused", ok, detail);
}

// Whether rank 0's timeline of one 1 MiB allreduce shows the hierarchical phases.
bool timeline_shows_phases(std::string* detail) {
  const std::string path = "hierarchical-timeline-" + std::to_string(hvd_size()) + ".json";
  if (hvd_timeline_start(path.c_str()) != HVD_SUCCESS) {
    *detail = "hvd_timeline_start failed";
    return false;
  }
  std::string ignored;
  const bool ran = allreduce_case(1 << 18, HVD_OP_SUM, true, &ignored);
  if (hvd_timeline_stop() != HVD_SUCCESS || !ran) {
    *detail = "the timed allreduce failed: " + ignored;
    return false;
  }
  if (hvd_rank() != 0) return false;  // only rank 0 writes it (and the ranks share a folder)
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  std::remove(path.c_str());
  const std::string s = text.str();
  return s.find("LOCAL_REDUCESCATTER") != std::string::npos &&
         s.find("CROSS_ALLREDUCE") != std::string::npos &&
         s.find("LOCAL_ALLGATHER") != std::string::npos;
}

bool hierarchical_expected() {
  const char* hosts = std::getenv("HVDC_TEST_HOSTS");
  const char* setting = std::getenv("HVDC_HIERARCHICAL_ALLREDUCE");
  const int h = hosts != nullptr ? std::atoi(hosts) : 1;
  const int n = hvd_size();
  const bool uniform = h >= 2 && n % h == 0 && n / h >= 2;
  return uniform && !(setting != nullptr && std::string(setting) == "0");
}

void test_phases(Results& results) {
  std::string detail;
  const bool shown = timeline_shows_phases(&detail);
  const bool expected = hierarchical_expected();
  bool ok = true;
  if (hvd_rank() == 0 && detail.empty() && shown != expected) {
    detail = std::string("the timeline ") + (shown ? "shows" : "lacks") +
             " LOCAL_REDUCESCATTER, CROSS_ALLREDUCE and LOCAL_ALLGATHER; expected them " +
             (expected ? "" : "not ") + "to run";
  }
  ok = detail.empty();
  record(results, expected ? "hierarchical.phases-ran" : "hierarchical.phases-absent", ok, detail);
}

// The even ranks' set: with blocks of two ranks per host, one rank a host (no hierarchy).
void test_process_set(Results& results) {
  std::vector<int32_t> evens;
  for (int r = 0; r < hvd_size(); r += 2) evens.push_back(r);
  int32_t id = 0;
  bool ok =
      hvd_process_set_create(evens.data(), static_cast<int32_t>(evens.size()), &id) == HVD_SUCCESS;
  std::string detail = ok ? "" : "hvd_process_set_create failed";
  if (ok && hvd_rank() % 2 == 0) {
    const size_t count = (256u << 10) + 3;
    std::vector<float> buf(count);
    for (size_t i = 0; i < count; ++i) buf[i] = static_cast<float>(hvd_rank() + (i % 3));
    const std::vector<int64_t> shape = {static_cast<int64_t>(count)};
    hvd_tensor_t t = make_tensor(buf.data(), HVD_FLOAT32, shape);
    hvd_op_args_t args;
    hvd_op_args_init(&args, sizeof args);
    args.process_set = id;
    hvd_handle_t h = 0;
    ok = hvd_allreduce_async(&t, buf.data(), HVD_OP_SUM, "hier.set", &args, &h) == HVD_SUCCESS &&
         hvd_wait(h) == HVD_SUCCESS;
    hvd_handle_free(h);
    for (size_t i = 0; i < count && ok; ++i) {
      float want = 0;
      for (int32_t r : evens) want += static_cast<float>(r + (i % 3));
      ok = buf[i] == want;
      if (!ok) detail = "element " + std::to_string(i) + ": " + std::to_string(buf[i]);
    }
  }
  if (id != 0 && hvd_process_set_destroy(id) != HVD_SUCCESS) {
    ok = false;
    detail = "hvd_process_set_destroy failed";
  }
  record(results, "hierarchical.process-set", ok, detail);
}

}  // namespace

int run_hierarchical_suite() {
  if (hvd_init() != HVD_SUCCESS) {
    std::fprintf(stderr, "hvd_init failed: %s\n", hvd_last_error_message());
    return 1;
  }
  Results results;
  test_sizes(results);
  test_fused(results);
  test_phases(results);
  test_process_set(results);
  test_sizes(results);  // again, on the cached path
  const int rc = finish(results, "hierarchical");
  return hvd_shutdown() == HVD_SUCCESS ? rc : 1;
}

}  // namespace hvdc_test
