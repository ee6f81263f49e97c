// hvd_join, as in Horovod's test_horovod_join_allreduce: each rank in turn joins first while the
// others run an averaged allreduce (cached by earlier steps, or negotiated), which then holds
// value * (size - 1) / size; the others then join, and every rank gets the same last rank. While
// a rank has joined, an allgather fails on every rank that submitted it.
#include <vector>

#include "harness.h"
#include "suites.h"

namespace hvdc_test {

namespace {

hvd_status_t average_ones(const char* name, std::vector<float>* buf) {
  return allreduce_constant(name, HVD_OP_AVERAGE, 1000, 1.0f, buf);
}

void join_round(Results& results, int joiner, const char* name) {
  const int n = hvd_size();
  std::string why;
  bool ok = true;
  if (hvd_rank() != joiner) {
    std::vector<float> buf;
    const hvd_status_t s = average_ones(name, &buf);
    const float want = static_cast<float>(n - 1) / static_cast<float>(n);
    ok = s == HVD_SUCCESS && buf[0] == want && buf[999] == want;
    why = status_text(s) + ", got " + std::to_string(buf.empty() ? -1.0f : buf[0]);
  }
  int32_t last = -1;
  const hvd_status_t s = hvd_join(&last);
  if (s != HVD_SUCCESS) why = "join: " + status_text(s), ok = false;
  const bool same = all_min(last, "join.last.min") == all_max(last, "join.last.max");
  const bool plausible = last >= 0 && last < n && (n == 1 || last != joiner);
  record(results, std::string("join.") + name + ".joiner" + std::to_string(joiner), ok, why);
  record(results, std::string("join.") + name + ".last_rank" + std::to_string(joiner),
         same && plausible, "last joined rank " + std::to_string(last));
}

}  // namespace

void test_join(Results& results) {
  std::vector<float> buf;
  for (int step = 0; step < 2; ++step) average_ones("join.cached", &buf);  // cache it
  for (int joiner = 0; joiner < hvd_size(); ++joiner) {
    join_round(results, joiner, "join.cached");
    join_round(results, joiner, ("join.fresh" + std::to_string(joiner)).c_str());
  }
  if (hvd_size() < 2) return;
  // An allgather cannot run with a joined rank: it fails where it was submitted.
  bool ok = true;
  std::string why;
  if (hvd_rank() != 0) {
    float x[2] = {1, 2};
    int64_t shape[1] = {2};
    hvd_tensor_t t = {x, HVD_FLOAT32, 1, shape, {HVD_DEVICE_CPU, 0}};
    hvd_handle_t h = 0;
    hvd_status_t s = hvd_allgather_async(&t, "join.gather", nullptr, &h);
    if (s == HVD_SUCCESS) s = hvd_wait(h);
    if (h != 0) hvd_handle_free(h);
    ok = s == HVD_ERR_INVALID_USAGE;
    why = status_text(s);
  }
  int32_t last = -1;
  const hvd_status_t s = hvd_join(&last);
  record(results, "join.allgather_fails_with_joined_rank", ok && s == HVD_SUCCESS, why);
  std::vector<float> after;
  const hvd_status_t s2 = average_ones("join.after", &after);
  record(results, "join.next_op_works", s2 == HVD_SUCCESS && after[0] == 1.0f, status_text(s2));
}

}  // namespace hvdc_test
