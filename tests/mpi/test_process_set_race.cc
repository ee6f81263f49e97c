// A process set used at once after its creation. A member whose engine ran the creation first
// may submit on the set, and its request reach the set's coordinator, before the coordinator's
// engine has run the creation itself; the request must wait there for the set, not be lost
// (the op would then hang until the stall timeout). One creation in a few dozen hits that
// window, so the case creates a set and allreduces on it many times, each time without the
// rank whose turn it is (the coordinator is rank 0 or 1). An op not done within a few seconds
// counts as lost: destroying its set fails it, and the case fails.
#include <string>
#include <vector>

#include "harness.h"
#include "process_set_helpers.h"
#include "suites.h"

namespace hvdc_test {

namespace {

constexpr int kCreations = 120;
constexpr int kBatch = 20;            // the ranks agree to go on after each batch
constexpr double kLostSeconds = 5.0;  // ops take milliseconds; a lost one never ends

// Creates the set of every rank but `left_out`, allreduces on it at once, destroys it. False
// with the reason in *why if the allreduce was lost or wrong.
bool create_and_use(int iteration, int32_t left_out, std::string* why) {
  const int n = hvd_size();
  Ranks ranks;
  for (int32_t r = 0; r < n; ++r) {
    if (r != left_out) ranks.push_back(r);
  }
  int32_t id = kSentinel;
  hvd_status_t s = hvd_process_set_create(ranks.data(), static_cast<int32_t>(ranks.size()), &id);
  if (s != HVD_SUCCESS) {
    *why = "create: " + status_text(s);
    return false;
  }
  bool ok = true;
  hvd_handle_t h = 0;
  int32_t value = hvd_rank() + 1;
  if (hvd_rank() != left_out) {
    const std::string name = "ps.race." + std::to_string(iteration);
    const std::vector<int64_t> shape = {1};
    hvd_tensor_t t = make_tensor(&value, HVD_INT32, shape);
    const hvd_op_args_t args = args_for(id);
    s = hvd_allreduce_async(&t, &value, HVD_OP_SUM, name.c_str(), &args, &h);
    hvd_status_t done = HVD_SUCCESS;
    if (s != HVD_SUCCESS) {
      *why = name + ": " + status_text(s), ok = false;
    } else if (!wait_deadline(h, kLostSeconds, &done)) {
      *why = name + " in " + set_text(id) + " not done after " + std::to_string(kLostSeconds) +
             " s: lost",
      ok = false;
    } else if (done != HVD_SUCCESS) {
      *why = name + ": " + status_text(done), ok = false;
    } else if (value != n * (n + 1) / 2 - (left_out + 1)) {
      *why = name + ": got " + std::to_string(value), ok = false;
    }
  }
  s = hvd_process_set_destroy(id);  // fails a lost op, so its handle can be freed
  if (s != HVD_SUCCESS && ok) *why = "destroy: " + status_text(s), ok = false;
  if (h != 0) hvd_handle_free(h);
  return ok;
}

}  // namespace

void test_set_use_at_creation(Results& results) {
  const int n = hvd_size();
  if (n < 3) return;  // a set of two or more ranks other than set 0 needs three ranks
  std::string why;
  bool ok = true;
  for (int i = 0; i < kCreations; ++i) {
    std::string problem;
    if (!create_and_use(i, i % n, &problem)) {
      if (ok) why = problem;  // the first
      ok = false;
    }
    // Stop at the first batch that failed anywhere: each lost op costs kLostSeconds.
    if ((i + 1) % kBatch == 0 && all_min(ok ? 1 : 0, "ps.race.ok." + std::to_string(i)) == 0) {
      break;
    }
  }
  record(results, "sets.use_at_creation", ok, why);
}

}  // namespace hvdc_test
