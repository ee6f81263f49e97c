// The timeline mode (run by check_timeline.py, which sets HVDC_TIMELINE and parses the files):
// negotiated and cached allreduces, an allgather, a broadcast, a fused group of small tensors,
// then hvd_timeline_start to a second file (HVDC_TEST_TIMELINE2) and hvd_timeline_stop.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "suites.h"

namespace hvdc_test {

namespace {

hvd_status_t run_one(const std::string& name, int kind, size_t count) {
  std::vector<float> buf(count, 1.0f);
  int64_t shape[1] = {static_cast<int64_t>(count)};
  hvd_tensor_t t = {buf.data(), HVD_FLOAT32, 1, shape, {HVD_DEVICE_CPU, 0}};
  hvd_handle_t h = 0;
  hvd_status_t s = kind == 0
                       ? hvd_allreduce_async(&t, buf.data(), HVD_OP_SUM, name.c_str(), nullptr, &h)
                   : kind == 1 ? hvd_allgather_async(&t, name.c_str(), nullptr, &h)
                               : hvd_broadcast_async(&t, buf.data(), 0, name.c_str(), nullptr, &h);
  if (s == HVD_SUCCESS) s = hvd_wait(h);
  if (h != 0) hvd_handle_free(h);
  return s;
}

// Eight small tensors that become ready together (the last rank submits late, all at once), so
// they are fused and packed into one buffer.
hvd_status_t run_fused_group() {
  if (hvd_rank() == hvd_size() - 1) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::vector<std::vector<float>> bufs(8, std::vector<float>(100, 1.0f));
  std::vector<hvd_handle_t> handles(8, 0);
  int64_t shape[1] = {100};
  for (int k = 0; k < 8; ++k) {
    hvd_tensor_t t = {bufs[k].data(), HVD_FLOAT32, 1, shape, {HVD_DEVICE_CPU, 0}};
    const std::string name = "tl.f." + std::to_string(k);
    hvd_status_t s =
        hvd_allreduce_async(&t, bufs[k].data(), HVD_OP_SUM, name.c_str(), nullptr, &handles[k]);
    if (s != HVD_SUCCESS) return s;
  }
  hvd_status_t s = hvd_wait_all(handles.data(), handles.size());
  for (hvd_handle_t h : handles) hvd_handle_free(h);
  return s;
}

}  // namespace

int run_timeline_suite() {
  if (hvd_init() != HVD_SUCCESS) {
    std::fprintf(stderr, "hvd_init failed: %s\n", hvd_last_error_message());
    return 1;
  }
  hvd_status_t s = HVD_SUCCESS;
  for (int step = 0; step < 3 && s == HVD_SUCCESS; ++step) s = run_one("tl.a", 0, 1000);
  if (s == HVD_SUCCESS) s = run_one("tl.g", 1, 10);
  if (s == HVD_SUCCESS) s = run_one("tl.b", 2, 10);
  if (s == HVD_SUCCESS) s = run_fused_group();
  const char* second = std::getenv("HVDC_TEST_TIMELINE2");
  if (s == HVD_SUCCESS && second != nullptr) s = hvd_timeline_start(second);
  if (s == HVD_SUCCESS) s = run_one("tl.second", 0, 10);
  if (s == HVD_SUCCESS) s = hvd_timeline_stop();
  if (s != HVD_SUCCESS) std::fprintf(stderr, "rank %d: %s\n", hvd_rank(), status_text(s).c_str());
  const hvd_status_t down = hvd_shutdown();
  return s == HVD_SUCCESS && down == HVD_SUCCESS ? 0 : 1;
}

}  // namespace hvdc_test
