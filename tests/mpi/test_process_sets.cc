// Process sets through the public API: set 0 and the queries; creating and destroying sets
// (collective over every rank; bad input fails at the call, an existing member list and
// mismatched member lists fail on every rank; ids only grow); every collective inside a set with
// set-relative semantics (average divisor, broadcast root, allgather order, alltoall splits,
// reducescatter rows); non-members and unknown ids rejected at the call, naming the set; named
// ops of several sets and of set 0 in flight at once, submitted in a different order on every
// rank, with names shared between sets; a mismatch inside a set; hvd_join beside a set; and a
// destroy that fails an op still pending in the set.
//
// Every case records on every rank, members or not, in the same order (record agrees through
// set 0). Sets per job size: np 1 only has set 0; np 2 uses singleton sets; np >= 3 uses
// P = {0, 2} and the overlapping A = {0 .. n-2}, B = {1 .. n-1}.
//
// The collectives inside a set and the non-member checks are in test_process_set_collectives.cc;
// the shared helpers in process_set_helpers.{h,cc}; the static sets in test_process_sets_static.cc.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "harness.h"
#include "process_set_helpers.h"
#include "suites.h"

namespace hvdc_test {

namespace {

// ---- The cases ------------------------------------------------------------------------------

void test_set0(Results& results, Ranks* initial_ids) {
  const int n = hvd_size();
  std::string why;
  const SetView all = view_of(0, iota_ranks(0, n - 1));
  bool ok = check_queries(all, &why);
  hvd_status_t s = HVD_SUCCESS;
  *initial_ids = query_ids(&s);
  if (ok && (s != HVD_SUCCESS || initial_ids->empty() || (*initial_ids)[0] != 0 ||
             !std::is_sorted(initial_ids->begin(), initial_ids->end()))) {
    why = "ids: " + status_text(s) + ", got " + list_text(*initial_ids);
    ok = false;
  }
  record(results, "sets.set0_queries", ok, why);

  // Set 0 named explicitly in the args is the default.
  why.clear();
  record(results, "sets.set0_explicit_args",
         run_one(all, "ps.set0.explicit", 100, HVD_OP_AVERAGE, 5, &why), why);
}

void test_query_errors(Results& results) {
  const int n = hvd_size();
  std::string why;
  bool ok = check_unknown_queries(kUnknownId, &why);
  ok &= check_unknown_queries(-1, &why);
  int32_t buf[64];
  int32_t count = kSentinel;
  // Output pointers.
  ok &= expect_status(hvd_process_set_rank(0, nullptr), HVD_ERR_INVALID_ARGUMENT, "", "rank NULL",
                      &why);
  ok &= expect_status(hvd_process_set_size(0, nullptr), HVD_ERR_INVALID_ARGUMENT, "", "size NULL",
                      &why);
  ok &= expect_status(hvd_process_set_included(0, nullptr), HVD_ERR_INVALID_ARGUMENT, "",
                      "included NULL", &why);
  ok &= expect_status(hvd_process_set_ranks(0, buf, 64, nullptr), HVD_ERR_INVALID_ARGUMENT, "count",
                      "ranks count NULL", &why);
  ok &= expect_status(hvd_process_set_ids(buf, 64, nullptr), HVD_ERR_INVALID_ARGUMENT, "count",
                      "ids count NULL", &why);
  // Capacities: too small, negative, or a NULL array with a capacity.
  ok &= expect_status(hvd_process_set_ranks(0, buf, n - 1, &count), HVD_ERR_INVALID_ARGUMENT,
                      "capacity", "ranks capacity size - 1", &why);
  ok &= expect_status(hvd_process_set_ranks(0, buf, -1, &count), HVD_ERR_INVALID_ARGUMENT,
                      "capacity", "ranks capacity -1", &why);
  ok &= expect_status(hvd_process_set_ranks(0, nullptr, 64, &count), HVD_ERR_INVALID_ARGUMENT,
                      "ranks", "ranks NULL with capacity", &why);
  ok &= expect_status(hvd_process_set_ids(buf, 0, &count), HVD_ERR_INVALID_ARGUMENT, "capacity",
                      "ids capacity 0", &why);
  ok &= expect_status(hvd_process_set_ids(nullptr, 64, &count), HVD_ERR_INVALID_ARGUMENT, "ids",
                      "ids NULL with capacity", &why);
  if (ok && count != kSentinel) why = "a failed query wrote *count", ok = false;
  record(results, "sets.query_errors", ok, why);
}

// Collectives naming a set that does not exist fail at the call, naming it.
void test_unknown_set_ops(Results& results) {
  std::string why;
  bool ok = rejected_everywhere(kUnknownId, set_text(kUnknownId), "ps.unknown", &why);
  ok &= rejected_everywhere(-1, "-1", "ps.negative", &why);
  record(results, "sets.unknown_id_rejected_at_call", ok, why);
}

// Bad arguments fail at the call on the calling rank alone and enqueue nothing; every rank
// tries them here independently.
void test_create_bad_input(Results& results) {
  const int n = hvd_size();
  std::string why;
  int32_t id = kSentinel;
  const int32_t one[1] = {0};
  bool ok = expect_status(hvd_process_set_create(nullptr, 1, &id), HVD_ERR_INVALID_ARGUMENT,
                          "ranks", "ranks NULL", &why);
  ok &= expect_status(hvd_process_set_create(one, 1, nullptr), HVD_ERR_INVALID_ARGUMENT, "id",
                      "id NULL", &why);
  for (int32_t count : {0, -1}) {
    const hvd_status_t s = hvd_process_set_create(one, count, &id);
    const std::string message = hvd_last_error_message();
    if (s != HVD_ERR_INVALID_ARGUMENT || (message.find("count") == std::string::npos &&
                                          message.find("ranks") == std::string::npos)) {
      if (why.empty()) why = "count " + std::to_string(count) + ": " + message;
      ok = false;
    }
  }
  const int32_t outside[2] = {0, n};
  ok &= expect_status(hvd_process_set_create(outside, 2, &id), HVD_ERR_INVALID_ARGUMENT,
                      std::to_string(n), "rank = size", &why);
  const int32_t negative[1] = {-1};
  ok &= expect_status(hvd_process_set_create(negative, 1, &id), HVD_ERR_INVALID_ARGUMENT, "-1",
                      "rank -1", &why);
  const int32_t twice[3] = {0, 0, 0};
  ok &= expect_status(hvd_process_set_create(twice, n > 1 ? 2 : 3, &id), HVD_ERR_INVALID_ARGUMENT,
                      "ranks", "duplicate ranks", &why);
  if (n > 1) {
    const int32_t twice_unsorted[3] = {n - 1, 0, n - 1};
    ok &= expect_status(hvd_process_set_create(twice_unsorted, 3, &id), HVD_ERR_INVALID_ARGUMENT,
                        "ranks", "duplicate unsorted ranks", &why);
  }
  if (ok && id != kSentinel) why = "a failed create wrote *id", ok = false;
  record(results, "sets.create_bad_input_fails_locally", ok, why);
}

void test_destroy_bad(Results& results) {
  std::string why;
  bool ok =
      expect_status(hvd_process_set_destroy(0), HVD_ERR_INVALID_ARGUMENT, "", "destroy 0", &why);
  ok &= expect_status(hvd_process_set_destroy(kUnknownId), HVD_ERR_INVALID_ARGUMENT,
                      std::to_string(kUnknownId), "destroy unknown", &why);
  ok &= expect_status(hvd_process_set_destroy(-1), HVD_ERR_INVALID_ARGUMENT, "-1", "destroy -1",
                      &why);
  record(results, "sets.destroy_bad_id_fails_locally", ok, why);
}

// Every rank names every rank (in reverse): that is set 0, so it fails on every rank.
void test_create_all_ranks(Results& results) {
  const int n = hvd_size();
  Ranks all = iota_ranks(0, n - 1);
  std::reverse(all.begin(), all.end());
  int32_t id = kSentinel;
  std::string why;
  bool ok = expect_status(hvd_process_set_create(all.data(), n, &id), HVD_ERR_INVALID_ARGUMENT, "",
                          "create every rank", &why);
  if (ok && id != kSentinel) why = "a failed create wrote *id", ok = false;
  record(results, "sets.create_of_every_rank_is_set0", ok, why);
}

// Each rank names only itself: the lists differ, so the create fails on every rank and nothing
// is created. (Only set 0 exists here, so no rank's list matches an existing set.)
void test_create_mismatch(Results& results, const Ranks& ids_before) {
  const int32_t mine[1] = {hvd_rank()};
  int32_t id = kSentinel;
  std::string why;
  bool ok = expect_status(hvd_process_set_create(mine, 1, &id), HVD_ERR_MISMATCH, "",
                          "create with different lists", &why);
  if (ok && id != kSentinel) why = "a failed create wrote *id", ok = false;
  ok = ok && ids_are(ids_before, &why);
  record(results, "sets.create_mismatch_fails_everywhere", ok, why);
}

// Creates `ranks` (each rank may pass them in its own order); *out describes it. Records
// "sets.<label>.create" with the id's and the queries' checks.
bool create_checked(Results& results, const std::string& label, const Ranks& ranks, int32_t* max_id,
                    SetView* out) {
  int32_t id = kSentinel;
  const hvd_status_t s =
      hvd_process_set_create(ranks.data(), static_cast<int32_t>(ranks.size()), &id);
  std::string why = s == HVD_SUCCESS ? "" : status_text(s);
  bool ok = s == HVD_SUCCESS;
  if (ok && id <= *max_id) {
    why = "id " + std::to_string(id) + " is not above every earlier id (" +
          std::to_string(*max_id) + ")";
    ok = false;
  }
  // Every rank got the same id.
  const int64_t lo = all_min(ok ? id : -1, "ps.create.idmin." + label);
  const int64_t hi = all_max(ok ? id : -1, "ps.create.idmax." + label);
  if (ok && lo != hi) why = "ranks got different ids", ok = false;
  *out = view_of(ok ? id : -1, ranks);
  if (ok) ok = check_queries(*out, &why);
  if (ok) {
    hvd_status_t qs = HVD_SUCCESS;
    const Ranks ids = query_ids(&qs);
    if (qs != HVD_SUCCESS || ids.empty() || ids.back() != id ||
        !std::is_sorted(ids.begin(), ids.end()) || ids[0] != 0) {
      why = "ids after create: " + list_text(ids);
      ok = false;
    }
  }
  if (ok) *max_id = id;
  record(results, "sets." + label + ".create", ok, why);
  return all_min(ok ? 1 : 0, "ps.create.ok." + label) == 1;
}

bool destroy_checked(Results& results, const std::string& label, const SetView& v) {
  const hvd_status_t s = hvd_process_set_destroy(v.id);
  std::string why = s == HVD_SUCCESS ? "" : status_text(s);
  bool ok = s == HVD_SUCCESS && check_unknown_queries(v.id, &why);
  if (ok) ok = rejected_everywhere(v.id, set_text(v.id), "ps.gone." + label, &why);
  record(results, "sets." + label + ".destroy", ok, why);
  return ok;
}

// The same ranks again (in another order) fail on every rank: that set exists.
void test_create_duplicate(Results& results, const SetView& v, const Ranks& ids_before) {
  Ranks ranks = v.members;
  std::reverse(ranks.begin(), ranks.end());
  int32_t id = kSentinel;
  std::string why;
  bool ok = expect_status(hvd_process_set_create(ranks.data(), v.size(), &id),
                          HVD_ERR_INVALID_ARGUMENT, "", "create an existing set", &why);
  if (ok && id != kSentinel) why = "a failed create wrote *id", ok = false;
  ok = ok && ids_are(ids_before, &why);
  record(results, "sets.create_existing_set_fails_everywhere", ok, why);
}

// Members submit named set allreduces and global allreduces (one name used in both) in an order
// of their own; non-members submit the global ones.
void test_interleaved(Results& results, const SetView& set, const SetView& all) {
  std::vector<ReduceOp> ops;
  for (int k = 0; k < 6; ++k) {
    add_op(&ops, set, "ps.mix.set." + std::to_string(k), 10 + 300 * k,
           k % 2 ? HVD_OP_AVERAGE : HVD_OP_SUM, 10 + k);
    add_op(&ops, all, "ps.mix.all." + std::to_string(k), 20 + 250 * k,
           k % 2 ? HVD_OP_SUM : HVD_OP_AVERAGE, 20 + k);
  }
  add_op(&ops, set, "ps.mix.same", 64, HVD_OP_SUM, 30);
  add_op(&ops, all, "ps.mix.same", 96, HVD_OP_SUM, 31);
  std::string why;
  const bool ok = run_ops(&ops, 1000 + 17 * hvd_rank(), &why);
  record(results, "sets.interleaved_with_set0_ops", ok, why);
}

// One name in flight in the set and in set 0 at once, with different shapes; and a name already
// in flight in the set fails with HVD_ERR_DUPLICATE_NAME.
void test_same_name(Results& results, const SetView& set, const SetView& all) {
  std::vector<ReduceOp> ops;
  add_op(&ops, set, "ps.same", 10, HVD_OP_SUM, 50);
  add_op(&ops, all, "ps.same", 20, HVD_OP_SUM, 51);
  std::string why;
  bool ok = run_ops(&ops, 0, &why);
  record(results, "sets.same_name_in_set_and_set0", ok, why);

  why.clear();
  ok = true;
  if (set.member()) {
    std::vector<ReduceOp> first;
    add_op(&first, set, "ps.dup", 8, HVD_OP_SUM, 52);
    const hvd_status_t s = submit(&first[0]);
    std::vector<float> buf(8, 1.0f);
    std::vector<int64_t> shape = {8};
    hvd_tensor_t t = make_tensor(buf.data(), HVD_FLOAT32, shape);
    const hvd_op_args_t args = args_for(set.id);
    hvd_handle_t h = kSentinelHandle;
    ok = expect_rejected(hvd_allreduce_async(&t, buf.data(), HVD_OP_SUM, "ps.dup", &args, &h), &h,
                         HVD_ERR_DUPLICATE_NAME, "ps.dup", "second ps.dup in the set", &why);
    const hvd_status_t w = wait_free(s, &first[0].handle);
    if (w != HVD_SUCCESS) {
      if (ok) why = "first ps.dup: " + status_text(w);
      ok = false;
    }
    ok = ok && check(first[0], &why);
  }
  record(results, "sets.duplicate_name_in_set", ok, why);
}

// A shape and then a dtype mismatch among the set's members fail on each member; the set's next
// op works.
void test_mismatch_in_set(Results& results, const SetView& v, const std::string& label) {
  if (v.size() < 2) return;  // the same on every rank
  const std::string p = "sets." + label + ".";
  for (int variant = 0; variant < 2; ++variant) {
    bool ok = true;
    std::string why;
    if (v.member()) {
      std::vector<float> buf(8, 1.0f);
      std::vector<int64_t> shape = {variant == 0 && v.index == 0 ? 5 : 6};
      const int32_t dtype = variant == 1 && v.index == v.size() - 1 ? HVD_INT32 : HVD_FLOAT32;
      hvd_tensor_t t = make_tensor(buf.data(), dtype, shape);
      const hvd_op_args_t args = args_for(v.id);
      const std::string name = "ps." + label + ".mismatch" + std::to_string(variant);
      hvd_handle_t h = 0;
      const hvd_status_t s =
          wait_free(hvd_allreduce_async(&t, buf.data(), HVD_OP_SUM, name.c_str(), &args, &h), &h);
      ok = s == HVD_ERR_MISMATCH;
      why = status_text(s);
    }
    record(results,
           p + (variant == 0 ? "shape_mismatch" : "dtype_mismatch") + "_fails_every_member", ok,
           why);
  }
  std::string why;
  const bool ok =
      !v.member() || run_one(v, "ps." + label + ".after_mismatch", 40, HVD_OP_SUM, 60, &why);
  record(results, p + "op_after_mismatch", ok, why);
}

// n >= 3, set = {0, 2}: rank 1 joins; the others learn it has (an allreduce that rank 1 never
// submits completes, rank 1 contributing zeros); the set's members then run an allreduce and an
// allgather in the set, which a joined non-member does not concern; then everybody joins.
void test_join_beside_set(Results& results, const SetView& set) {
  const int n = hvd_size(), me = hvd_rank();
  bool ok = true;
  std::string why;
  if (me != 1) {
    std::vector<float> probe;
    const hvd_status_t s = allreduce_constant("ps.join.probe", HVD_OP_SUM, 4, 1.0f, &probe);
    if (s != HVD_SUCCESS || probe[0] != static_cast<float>(n - 1)) {
      why = "probe: " + status_text(s) + ", got " + std::to_string(probe.empty() ? -1 : probe[0]);
      ok = false;
    }
  }
  if (ok && set.member()) {
    std::vector<ReduceOp> ops;
    add_op(&ops, set, "ps.join.reduce", 100, HVD_OP_SUM, 70);
    hvd_status_t s = submit(&ops[0]);
    int32_t row[2] = {me, me};
    std::vector<int64_t> shape = {1, 2};
    hvd_tensor_t t = make_tensor(row, HVD_INT32, shape);
    const hvd_op_args_t args = args_for(set.id);
    hvd_handle_t g = 0;
    hvd_status_t gs = hvd_allgather_async(&t, "ps.join.gather", &args, &g);
    bool ended = true;
    if (s == HVD_SUCCESS) ended = wait_deadline(ops[0].handle, 30, &s);
    if (ended && gs == HVD_SUCCESS) ended = wait_deadline(g, 30, &gs);
    if (!ended) {
      why = "an op in the set did not end while a non-member had joined";
      ok = false;
    } else if (s != HVD_SUCCESS || gs != HVD_SUCCESS) {
      why = "allreduce: " + std::string(hvd_status_string(s)) +
            ", allgather: " + hvd_status_string(gs) + " (" + hvd_last_error_message() + ")";
      ok = false;
    } else {
      ok = check(ops[0], &why);
      hvd_tensor_t out = {};
      if (ok && (hvd_handle_output(g, &out) != HVD_SUCCESS || out.shape[0] != set.size())) {
        why = "allgather output";
        ok = false;
      }
      for (int r = 0; ok && r < set.size(); ++r) {
        ok = static_cast<const int32_t*>(out.data)[2 * r] == set.members[r];
        if (!ok) why = "allgather row " + std::to_string(r);
      }
    }
    if (ended) {
      hvd_handle_free(ops[0].handle);
      if (g != 0) hvd_handle_free(g);
    }
  }
  int32_t last = -1;
  const hvd_status_t js = hvd_join(&last);
  if (js != HVD_SUCCESS) {
    if (ok) why = "join: " + status_text(js);
    ok = false;
  }
  const bool same = all_min(last, "ps.join.last.min") == all_max(last, "ps.join.last.max");
  if (ok && (!same || last < 0 || last >= n || last == 1)) {
    why = "last joined rank " + std::to_string(last);
    ok = false;
  }
  record(results, "sets.join_concerns_set0_only", ok, why);
}

// n >= 3, set = {0, 2}: set rank 0 submits an op that set rank 1 never does, then every rank
// destroys the set, which fails the op with HVD_ERR_INVALID_USAGE.
void test_destroy_pending(Results& results, const SetView& set) {
  std::vector<ReduceOp> ops;
  if (set.index == 0) add_op(&ops, set, "ps.orphan", 16, HVD_OP_SUM, 80);
  hvd_status_t submitted = HVD_SUCCESS;
  if (!ops.empty()) submitted = submit(&ops[0]);
  int32_t done = 0;
  if (!ops.empty() && submitted == HVD_SUCCESS) hvd_test(ops[0].handle, &done);
  const hvd_status_t d = hvd_process_set_destroy(set.id);
  std::string why = d == HVD_SUCCESS ? "" : "destroy: " + status_text(d);
  bool ok = d == HVD_SUCCESS;
  if (!ops.empty()) {
    hvd_status_t s = HVD_SUCCESS;
    if (submitted != HVD_SUCCESS) {
      why = "submit: " + status_text(submitted);
      ok = false;
    } else if (done) {
      why = "the op ended before the destroy";
      ok = false;
    } else if (!wait_deadline(ops[0].handle, 30, &s)) {
      why = "the pending op did not end after the destroy";
      ok = false;
    } else {
      const hvd_status_t w = hvd_wait(ops[0].handle);  // ended: this only fetches the message
      if (s != HVD_ERR_INVALID_USAGE || w != HVD_ERR_INVALID_USAGE) {
        why = std::string("the pending op ended with ") + hvd_status_string(w) + " (" +
              hvd_last_error_message() + ")";
        ok = false;
      }
      hvd_handle_free(ops[0].handle);
    }
  }
  record(results, "sets.destroy_fails_pending_op", ok, why);
  why.clear();
  ok = check_unknown_queries(set.id, &why);
  record(results, "sets.destroyed_set_is_unknown", ok, why);
}

// Overlapping sets and set 0, many allreduces each (small and fusable, one large, names shared
// between sets and some not), in a per-rank order, over three steps with the same names.
void test_overlapping(Results& results, const std::vector<SetView>& sets,
                      const std::vector<std::string>& labels) {
  for (int step = 0; step < 3; ++step) {
    std::vector<ReduceOp> ops;
    for (size_t s = 0; s < sets.size(); ++s) {
      std::mt19937 rng(4242 + static_cast<unsigned>(s));
      for (int k = 0; k < 24; ++k) {
        const size_t count = 1 + rng() % 2000;
        const int32_t reduce = rng() % 3 == 0 ? HVD_OP_AVERAGE : HVD_OP_SUM;
        const std::string name = k % 2 == 0 ? "ps.ov." + std::to_string(k)
                                            : "ps.ov." + labels[s] + "." + std::to_string(k);
        add_op(&ops, sets[s], name, count, reduce, static_cast<int>(s * 100 + k + step));
      }
      add_op(&ops, sets[s], "ps.ov.large", (1u << 20) + s, HVD_OP_SUM,
             static_cast<int>(s * 100 + 50 + step));
    }
    std::string why;
    const bool ok = run_ops(&ops, 7919u * hvd_rank() + 31u * step + 1u, &why);
    record(results, "sets.overlapping_sets_random_order.step" + std::to_string(step), ok, why);
  }
}

}  // namespace

void test_process_sets(Results& results) {
  const int n = hvd_size();
  Ranks ids0;
  test_set0(results, &ids0);
  test_query_errors(results);
  test_create_bad_input(results);
  test_destroy_bad(results);
  test_unknown_set_ops(results);
  test_create_all_ranks(results);
  {
    std::string why;
    record(results, "sets.ids_unchanged_by_failed_creates", ids_are(ids0, &why), why);
  }
  if (n < 2) return;

  const SetView all = view_of(0, iota_ranks(0, n - 1));
  int32_t max_id = ids0.empty() ? 0 : ids0.back();
  if (ids0.size() == 1) test_create_mismatch(results, ids0);

  // P: {0, 2} from np 3 ({1} at np 2), each rank passing the members in an order of its own.
  Ranks p_ranks = n >= 3 ? Ranks{0, 2} : Ranks{1};
  if (hvd_rank() % 2 == 1) std::reverse(p_ranks.begin(), p_ranks.end());
  SetView p;
  if (!create_checked(results, "P", p_ranks, &max_id, &p)) return;
  Ranks ids_with_p = ids0;
  ids_with_p.push_back(p.id);
  test_non_member(results, p, "P");
  test_set_collectives(results, p, "P");
  test_interleaved(results, p, all);
  test_same_name(results, p, all);
  test_create_duplicate(results, p, ids_with_p);
  test_mismatch_in_set(results, p, "P");
  if (n >= 3) {
    test_join_beside_set(results, p);
    test_destroy_pending(results, p);
  } else {
    destroy_checked(results, "P", p);
  }
  {
    std::string why;
    record(results, "sets.ids_after_destroy", ids_are(ids0, &why), why);
  }

  // The same members again: a new id, and the set works.
  SetView p2;
  if (!create_checked(results, "P_again", p.members, &max_id, &p2)) return;
  {
    std::string why;
    const bool ok = !p2.member() || run_one(p2, "ps.again", 300, HVD_OP_AVERAGE, 90, &why);
    record(results, "sets.P_again.allreduce", ok, why);
  }
  test_non_member(results, p2, "P_again");
  destroy_checked(results, "P_again", p2);

  // Overlapping sets A = {0 .. n-2} and B = {1 .. n-1} ({0} and {1} at np 2).
  SetView a, b;
  if (!create_checked(results, "A", iota_ranks(0, n - 2), &max_id, &a)) return;
  if (!create_checked(results, "B", iota_ranks(1, n - 1), &max_id, &b)) {
    destroy_checked(results, "A", a);
    return;
  }
  {
    Ranks ids_ab = ids0;
    ids_ab.push_back(a.id);
    ids_ab.push_back(b.id);
    std::string why;
    record(results, "sets.ids_with_A_and_B", ids_are(ids_ab, &why), why);
  }
  test_non_member(results, a, "A");
  test_non_member(results, b, "B");
  test_set_collectives(results, b, "B");  // set rank = global rank - 1
  test_overlapping(results, {a, b, all}, {"A", "B", "all"});
  test_mismatch_in_set(results, b, "B");
  destroy_checked(results, "B", b);
  destroy_checked(results, "A", a);
  std::string why;
  record(results, "sets.ids_restored", ids_are(ids0, &why), why);
}

}  // namespace hvdc_test
