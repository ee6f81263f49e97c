// run_static_sets_suite checks the sets that HVDC_PROCESS_SETS (or, with HVDC_TEST_SETS_CONFIG,
// the config key HVD_CFG_PROCESS_SETS) creates at hvd_init: their ids and queries, an allreduce
// in each at once, non-members rejected, a static set created again, the first created set's id,
// and a static set destroyed.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "harness.h"
#include "process_set_helpers.h"
#include "suites.h"

namespace hvdc_test {

namespace {

// The test's own reading of a spec like "2,0;1,3": each set sorted.
std::vector<Ranks> parse_spec(const std::string& spec) {
  std::vector<Ranks> out;
  if (spec.find_first_not_of(" \t") == std::string::npos) return out;
  size_t start = 0;
  for (;;) {
    const size_t end = spec.find(';', start);
    const std::string group = spec.substr(start, end == std::string::npos ? end : end - start);
    Ranks ranks;
    size_t at = 0;
    for (;;) {
      const size_t comma = group.find(',', at);
      ranks.push_back(static_cast<int32_t>(std::strtol(
          group.substr(at, comma == std::string::npos ? comma : comma - at).c_str(), nullptr, 10)));
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    std::sort(ranks.begin(), ranks.end());
    out.push_back(ranks);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

}  // namespace

int run_static_sets_suite() {
  const char* config_spec = std::getenv("HVDC_TEST_SETS_CONFIG");
  const char* env_spec = std::getenv("HVDC_PROCESS_SETS");
  std::string spec;
  hvd_status_t s = HVD_SUCCESS;
  if (config_spec != nullptr) {
    // The config key overrides the environment variable.
    hvd_config_t* cfg = nullptr;
    s = hvd_config_create(&cfg);
    if (s == HVD_SUCCESS) s = hvd_config_set_str(cfg, HVD_CFG_PROCESS_SETS, config_spec);
    if (s == HVD_SUCCESS) s = hvd_init_with_config(cfg);
    hvd_config_destroy(cfg);
    spec = config_spec;
  } else {
    s = hvd_init();
    spec = env_spec != nullptr ? env_spec : "";
  }
  if (s != HVD_SUCCESS) {
    std::fprintf(stderr, "hvd_init failed: %s\n", hvd_last_error_message());
    return 1;
  }
  Results results;
  const int n = hvd_size();
  const std::vector<Ranks> expected = parse_spec(spec);
  const int32_t k = static_cast<int32_t>(expected.size());
  const SetView all = view_of(0, iota_ranks(0, n - 1));
  std::vector<SetView> sets;
  for (int32_t i = 0; i < k; ++i) sets.push_back(view_of(i + 1, expected[i]));

  std::string why;
  record(results, "sets_static.ids", ids_are(iota_ranks(0, k), &why), why);
  for (const SetView& v : sets) {
    why.clear();
    record(results, "sets_static.set" + std::to_string(v.id) + ".queries", check_queries(v, &why),
           why);
  }

  // An allreduce in every set and in set 0 at once, under one name, in a per-rank order.
  std::vector<ReduceOp> ops;
  for (const SetView& v : sets) {
    add_op(&ops, v, "static.reduce", 1000 + v.id, HVD_OP_SUM, v.id);
    add_op(&ops, v, "static.average." + std::to_string(v.id), 77, HVD_OP_AVERAGE, 10 + v.id);
  }
  add_op(&ops, all, "static.reduce", 500, HVD_OP_SUM, 0);
  why.clear();
  record(results, "sets_static.allreduce_in_each_set", run_ops(&ops, 13u * hvd_rank() + 5u, &why),
         why);

  for (const SetView& v : sets) {
    why.clear();
    const bool ok = v.member() || rejected_everywhere(v.id, set_text(v.id),
                                                      "static.nm" + std::to_string(v.id), &why);
    record(results, "sets_static.set" + std::to_string(v.id) + ".non_member_rejected", ok, why);
  }

  if (k > 0) {
    Ranks again = expected[0];
    std::reverse(again.begin(), again.end());
    int32_t id = kSentinel;
    why.clear();
    const bool ok = expect_status(hvd_process_set_create(again.data(), sets[0].size(), &id),
                                  HVD_ERR_INVALID_ARGUMENT, "", "create a static set again", &why);
    record(results, "sets_static.create_existing_fails", ok, why);
  }

  // The first created set takes the id after the static ones: the first subset (by bitmask) that
  // is neither every rank nor a static set.
  Ranks fresh;
  for (uint32_t mask = 1; fresh.empty() && n < 31 && mask + 1 < (1u << n); ++mask) {
    Ranks r;
    for (int b = 0; b < n; ++b) {
      if (mask & (1u << b)) r.push_back(b);
    }
    if (std::find(expected.begin(), expected.end(), r) == expected.end()) fresh = r;
  }
  if (!fresh.empty()) {
    int32_t id = kSentinel;
    s = hvd_process_set_create(fresh.data(), static_cast<int32_t>(fresh.size()), &id);
    why = status_text(s) + ", id " + std::to_string(id);
    bool ok = s == HVD_SUCCESS && id == k + 1;
    record(results, "sets_static.first_created_id_follows_static", ok, why);
    if (s == HVD_SUCCESS) {
      const SetView v = view_of(id, fresh);
      why.clear();
      ok = !v.member() || run_one(v, "static.created", 64, HVD_OP_SUM, 99, &why);
      record(results, "sets_static.created_set_works", ok, why);
      s = hvd_process_set_destroy(id);
      record(results, "sets_static.destroy_created", s == HVD_SUCCESS, status_text(s));
    }
  }

  // A static set can be destroyed like any other; the rest keep working.
  if (k > 0) {
    s = hvd_process_set_destroy(1);
    why = status_text(s);
    bool ok = s == HVD_SUCCESS;
    Ranks rest = {0};
    for (int32_t i = 2; i <= k; ++i) rest.push_back(i);
    ok = ok && ids_are(rest, &why);
    record(results, "sets_static.destroy_static_set", ok, why);
    std::vector<ReduceOp> more;
    for (size_t i = 1; i < sets.size(); ++i)
      add_op(&more, sets[i], "static.after", 32, HVD_OP_SUM, 7);
    why.clear();
    record(results, "sets_static.others_work_after_destroy", run_ops(&more, hvd_rank(), &why), why);
  }

  const int rc = finish(results, "sets-static");
  return hvd_shutdown() == HVD_SUCCESS ? rc : 1;
}

}  // namespace hvdc_test
