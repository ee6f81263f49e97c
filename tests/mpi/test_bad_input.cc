// Mode "bad-input": bad input on some ranks while the others pass good input. A local mistake
// (bad tensor, name, args, handle pointer, unknown process set) fails at once on the rank that
// made it, enqueues nothing, and leaves the peers waiting only until that rank submits the good
// op under the same name; a mistake only the ranks together can see (metadata that differs
// between ranks) fails that tensor on every rank. Either way the job goes on with valid
// collectives. The unit suite (tests/unit/test_bad_input*.cc) has the single-process matrix.
#include <chrono>
#include <cmath>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "process_set_helpers.h"
#include "suites.h"

namespace hvdc_test {

namespace {

// Submits an input (good or bad) of this case's op; `o` holds the output buffer.
struct OpCase;
using Submit = std::function<hvd_status_t(OpCase& o, const hvd_tensor_t*, const char*,
                                          const hvd_op_args_t*, hvd_handle_t*)>;

// One collective: this rank's good input, how to submit any input, and how to check the
// finished op on this rank.
struct OpCase {
  std::string label;
  bool takes_tensor = true;
  std::vector<float> in, out;
  std::vector<int64_t> shape;
  Submit submit;
  std::function<bool(hvd_handle_t, const OpCase&, std::string*)> check;
};

hvd_status_t submit_good(OpCase& o, const std::string& name, hvd_handle_t* h) {
  hvd_tensor_t t = make_tensor(o.in.data(), HVD_FLOAT32, o.shape);
  return o.submit(o, &t, name.c_str(), nullptr, h);
}

float triangle(int n) {  // 1 + 2 + ... + n: the sum of every rank's (rank + 1)
  return static_cast<float>(n * (n + 1) / 2);
}

bool all_equal(const std::vector<float>& v, float want, std::string* why) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != want) {
      *why = "element " + std::to_string(i) + " is " + std::to_string(v[i]) + ", want " +
             std::to_string(want);
      return false;
    }
  }
  return true;
}

// The library-owned output of an allgather or alltoall must have `rows` rows.
bool output_rows_are(hvd_handle_t h, int64_t rows, std::string* why) {
  hvd_tensor_t out = {};
  const hvd_status_t s = hvd_handle_output(h, &out);
  if (s != HVD_SUCCESS) {
    *why = "hvd_handle_output: " + status_text(s);
    return false;
  }
  if (out.ndim < 1 || out.shape[0] != rows) {
    *why = "the output does not have " + std::to_string(rows) + " rows";
    return false;
  }
  return true;
}

OpCase make_case(const char* label, size_t count, size_t out_count) {
  OpCase o;
  o.label = label;
  o.in.assign(count, static_cast<float>(hvd_rank() + 1));
  o.out.assign(out_count, 0.0f);
  o.shape = {static_cast<int64_t>(count)};
  return o;
}

// Allreduce, allgather, broadcast (root: the last rank), alltoall, reducescatter, grouped
// allreduce and barrier, each with a check of its result.
std::vector<OpCase> op_cases() {
  const int n = hvd_size(), me = hvd_rank();
  std::vector<OpCase> ops;
  ops.push_back(make_case("allreduce", 4, 4));
  ops.back().submit = [](OpCase& o, auto* t, auto* name, auto* a, auto* h) {
    return hvd_allreduce_async(t, o.out.data(), HVD_OP_SUM, name, a, h);
  };
  ops.back().check = [n](hvd_handle_t, const OpCase& o, std::string* why) {
    return all_equal(o.out, triangle(n), why);
  };
  ops.push_back(make_case("grouped", 4, 4));
  ops.back().submit = [](OpCase& o, auto* t, auto* name, auto* a, auto* h) {
    void* outs[1] = {o.out.data()};
    const char* names[1] = {name};
    return hvd_grouped_allreduce_async(t, outs, 1, HVD_OP_SUM, names, a, h);
  };
  ops.back().check = ops.front().check;
  ops.push_back(make_case("allgather", me + 1, 0));  // rank r gives r + 1 rows
  ops.back().submit = [](OpCase&, auto* t, auto* name, auto* a, auto* h) {
    return hvd_allgather_async(t, name, a, h);
  };
  ops.back().check = [n](hvd_handle_t h, const OpCase&, std::string* why) {
    return output_rows_are(h, static_cast<int64_t>(triangle(n)), why);
  };
  ops.push_back(make_case("broadcast", 4, 4));
  ops.back().submit = [n](OpCase& o, auto* t, auto* name, auto* a, auto* h) {
    return hvd_broadcast_async(t, o.out.data(), n - 1, name, a, h);
  };
  ops.back().check = [n](hvd_handle_t, const OpCase& o, std::string* why) {
    return all_equal(o.out, static_cast<float>(n), why);
  };
  ops.push_back(make_case("alltoall", n, 0));
  ops.back().submit = [](OpCase&, auto* t, auto* name, auto* a, auto* h) {
    return hvd_alltoall_async(t, nullptr, name, a, h);
  };
  ops.back().check = [n](hvd_handle_t h, const OpCase&, std::string* why) {
    return output_rows_are(h, n, why);
  };
  ops.push_back(make_case("reducescatter", n, 1));
  ops.back().submit = [](OpCase& o, auto* t, auto* name, auto* a, auto* h) {
    return hvd_reducescatter_async(t, o.out.data(), HVD_OP_SUM, name, a, h);
  };
  ops.back().check = ops.front().check;
  ops.push_back(make_case("barrier", 0, 0));
  ops.back().takes_tensor = false;
  ops.back().submit = [](OpCase&, auto*, auto* name, auto* a, auto* h) {
    return hvd_barrier_async(name, a, h);
  };
  ops.back().check = [](hvd_handle_t, const OpCase&, std::string*) { return true; };
  return ops;
}

// One bad variant of a good submission, and what its message must name.
struct Variant {
  const char* needle;
  std::function<hvd_status_t(OpCase&, const char* name, hvd_handle_t*)> submit;
};

std::vector<Variant> variants(bool takes_tensor) {
  static const int64_t negative[1] = {-4}, huge[2] = {int64_t{1} << 40, int64_t{1} << 40};
  // `edit` turns the good tensor into a bad one.
  auto bad_tensor = [](std::function<void(hvd_tensor_t*)> edit) {
    return [edit](OpCase& o, const char* name, hvd_handle_t* h) {
      hvd_tensor_t t = make_tensor(o.in.data(), HVD_FLOAT32, o.shape);
      edit(&t);
      return o.submit(o, &t, name, nullptr, h);
    };
  };
  auto bad_args = [](std::function<void(hvd_op_args_t*)> edit) {
    return [edit](OpCase& o, const char* name, hvd_handle_t* h) {
      hvd_tensor_t t = make_tensor(o.in.data(), HVD_FLOAT32, o.shape);
      hvd_op_args_t args;
      hvd_op_args_init(&args, sizeof(args));
      edit(&args);
      return o.submit(o, &t, name, &args, h);
    };
  };
  auto bad_name = [](const char* bad) {
    return [bad](OpCase& o, const char*, hvd_handle_t* h) {
      hvd_tensor_t t = make_tensor(o.in.data(), HVD_FLOAT32, o.shape);
      return o.submit(o, &t, bad, nullptr, h);
    };
  };
  std::vector<Variant> out = {
      {"name is empty", bad_name("")},
      {"UTF-8", bad_name("grad\xED\xA0\x80")},
      {"args->process_set", bad_args([](hvd_op_args_t* a) { a->process_set = kUnknownId; })},
      {"args->struct_size", bad_args([](hvd_op_args_t* a) { a->struct_size = 0; })},
      {"args->prescale_factor", bad_args([](hvd_op_args_t* a) { a->prescale_factor = NAN; })},
      {"handle is NULL",
       [](OpCase& o, const char* name, hvd_handle_t*) {
         hvd_tensor_t t = make_tensor(o.in.data(), HVD_FLOAT32, o.shape);
         return o.submit(o, &t, name, nullptr, nullptr);
       }},
  };
  if (!takes_tensor) return out;
  out.push_back({"NULL", [](OpCase& o, const char* name, hvd_handle_t* h) {
                   return o.submit(o, nullptr, name, nullptr, h);
                 }});
  out.push_back({"->dtype 99", bad_tensor([](hvd_tensor_t* t) { t->dtype = 99; })});
  out.push_back({"->ndim 33", bad_tensor([](hvd_tensor_t* t) { t->ndim = 33; })});
  out.push_back({"->shape[0] is negative", bad_tensor([](hvd_tensor_t* t) {
                   t->ndim = 1;
                   t->shape = negative;
                 })});
  out.push_back({"overflow", bad_tensor([](hvd_tensor_t* t) {
                   t->ndim = 2;
                   t->shape = huge;
                 })});
  out.push_back({"->device.type 5", bad_tensor([](hvd_tensor_t* t) { t->device.type = 5; })});
  out.push_back({"->data is NULL", bad_tensor([](hvd_tensor_t* t) { t->data = nullptr; })});
  return out;
}

// Every rank waits for its op for at most 30 s (a hang fails the case instead of the job), checks
// it, and frees it.
bool finish_op(hvd_status_t s, hvd_handle_t h, OpCase& o, std::string* why) {
  if (s != HVD_SUCCESS) {
    *why = "the good submission failed: " + status_text(s);
    return false;
  }
  hvd_status_t done = HVD_SUCCESS;
  if (!wait_deadline(h, 30, &done)) {
    *why = "the good op did not complete within 30 s";
    return false;
  }
  bool ok = done == HVD_SUCCESS;
  if (!ok) *why = "the good op failed: " + status_text(hvd_wait(h));
  ok = ok && o.check(h, o, why);
  hvd_handle_free(h);
  return ok;
}

// Rank `bad_rank` tries every bad variant of the op first (each must fail at once, naming the
// argument, and write no handle) while the others have submitted the good op already; then it
// submits the good op under the same name and everyone's op completes.
void bad_then_good(Results& results, OpCase& o, int bad_rank) {
  const std::string name = "bi." + o.label + ".r" + std::to_string(bad_rank);
  std::string why;
  bool ok = true;
  hvd_handle_t good = 0;
  hvd_status_t s = HVD_SUCCESS;
  if (hvd_rank() != bad_rank) s = submit_good(o, name, &good);
  if (hvd_rank() == bad_rank) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the peers are waiting now
    for (const Variant& v : variants(o.takes_tensor)) {
      hvd_handle_t h = kSentinelHandle;
      ok &= expect_rejected(v.submit(o, name.c_str(), &h), &h, HVD_ERR_INVALID_ARGUMENT, v.needle,
                            o.label + " " + v.needle, &why);
    }
    s = submit_good(o, name, &good);
  }
  ok = finish_op(s, good, o, &why) && ok;
  record(results, name + ".bad_fails_locally_peers_complete", ok, why);
}

// ---- Metadata that differs between ranks ------------------------------------------------

// The last rank submits `odd`, the others the usual op, under one name. No rank can tell alone,
// so the coordinator fails the tensor on every rank with HVD_ERR_MISMATCH naming it.
struct Mismatch {
  const char* label;
  std::function<hvd_status_t(bool odd, const std::string& name, std::vector<float>& buf,
                             hvd_handle_t* h)>
      submit;
};

std::vector<Mismatch> mismatches() {
  const int n = hvd_size();
  auto tensor_of = [](std::vector<float>& buf, int32_t dtype, std::vector<int64_t>& shape) {
    return make_tensor(buf.data(), dtype, shape);
  };
  return {
      {"allreduce_ndim",
       [=](bool odd, const std::string& name, std::vector<float>& buf, hvd_handle_t* h) {
         std::vector<int64_t> shape = odd ? std::vector<int64_t>{2, 2} : std::vector<int64_t>{4};
         hvd_tensor_t t = tensor_of(buf, HVD_FLOAT32, shape);
         return hvd_allreduce_async(&t, buf.data(), HVD_OP_SUM, name.c_str(), nullptr, h);
       }},
      {"reducescatter_reduce_op",
       [=](bool odd, const std::string& name, std::vector<float>& buf, hvd_handle_t* h) {
         std::vector<int64_t> shape = {n};
         hvd_tensor_t t = tensor_of(buf, HVD_FLOAT32, shape);
         return hvd_reducescatter_async(&t, buf.data() + n, odd ? HVD_OP_AVERAGE : HVD_OP_SUM,
                                        name.c_str(), nullptr, h);
       }},
      {"alltoall_dtype",
       [=](bool odd, const std::string& name, std::vector<float>& buf, hvd_handle_t* h) {
         std::vector<int64_t> shape = {n};
         hvd_tensor_t t = tensor_of(buf, odd ? HVD_INT32 : HVD_FLOAT32, shape);
         return hvd_alltoall_async(&t, nullptr, name.c_str(), nullptr, h);
       }},
      {"grouped_member_dtype",
       [=](bool odd, const std::string& name, std::vector<float>& buf, hvd_handle_t* h) {
         std::vector<int64_t> shape = {2};
         hvd_tensor_t t[2] = {tensor_of(buf, HVD_FLOAT32, shape),
                              make_tensor(buf.data() + 2, odd ? HVD_INT32 : HVD_FLOAT32, shape)};
         void* outs[2] = {buf.data(), buf.data() + 2};
         const std::string second = name + ".1";
         const char* names[2] = {name.c_str(), second.c_str()};
         return hvd_grouped_allreduce_async(t, outs, 2, HVD_OP_SUM, names, nullptr, h);
       }},
      {"barrier_vs_allreduce",
       [=](bool odd, const std::string& name, std::vector<float>& buf, hvd_handle_t* h) {
         if (odd) return hvd_barrier_async(name.c_str(), nullptr, h);
         std::vector<int64_t> shape = {4};
         hvd_tensor_t t = tensor_of(buf, HVD_FLOAT32, shape);
         return hvd_allreduce_async(&t, buf.data(), HVD_OP_SUM, name.c_str(), nullptr, h);
       }},
  };
}

void test_mismatches(Results& results) {
  for (const Mismatch& m : mismatches()) {
    const std::string name = std::string("bi.mismatch.") + m.label;
    std::vector<float> buf(2 * hvd_size() + 4, 1.0f);
    hvd_handle_t h = 0;
    hvd_status_t s = m.submit(hvd_rank() == hvd_size() - 1, name, buf, &h);
    std::string why, message;
    bool ok = s == HVD_SUCCESS;
    if (!ok) why = "the submission failed at once: " + status_text(s);
    if (ok && !wait_deadline(h, 30, &s)) why = "the op did not end within 30 s", ok = false;
    if (ok) {
      s = hvd_wait(h);  // ended: this fetches its message
      message = hvd_last_error_message();
      ok = s == HVD_ERR_MISMATCH && message.find("'" + name) != std::string::npos;
      if (!ok) why = "got " + std::string(hvd_status_string(s)) + ": " + message;
      hvd_handle_free(h);
    }
    std::vector<float> after;
    s = allreduce_constant(name + ".after", HVD_OP_SUM, 4, 1.0f, &after);
    if (s != HVD_SUCCESS || after[0] != static_cast<float>(hvd_size())) {
      why += " then a valid allreduce failed: " + status_text(s);
      ok = false;
    }
    record(results, name + ".fails_on_every_rank", ok, why);
  }
}

// ---- Process sets --------------------------------------------------------------------------

// Every rank but the last creates the set of every rank but the last; the last rank first
// passes bad lists, which fail at once while the others wait in their create.
int32_t create_with_bad_rank(Results& results, const Ranks& members) {
  const int n = hvd_size(), last = n - 1;
  std::string why;
  bool ok = true;
  int32_t id = kSentinel;
  if (hvd_rank() == last) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const Ranks outside = {0, n};
    ok &= expect_status(hvd_process_set_create(outside.data(), 2, &id), HVD_ERR_INVALID_ARGUMENT,
                        "ranks[1] = " + std::to_string(n), "rank = size", &why);
    ok &= expect_status(hvd_process_set_create(members.data(), 0, &id), HVD_ERR_INVALID_ARGUMENT,
                        "count is 0", "count 0", &why);
    ok &= expect_status(hvd_process_set_create(nullptr, 1, &id), HVD_ERR_INVALID_ARGUMENT,
                        "ranks is NULL", "ranks NULL", &why);
    ok &= expect_status(hvd_process_set_create(members.data(), n + 1, &id),
                        HVD_ERR_INVALID_ARGUMENT, "count", "count > size", &why);
    ok &= id == kSentinel;
  }
  const hvd_status_t s =
      hvd_process_set_create(members.data(), static_cast<int32_t>(members.size()), &id);
  if (s != HVD_SUCCESS) why = "the good create failed: " + status_text(s), ok = false;
  record(results, "bi.sets.create_bad_on_one_rank", ok, why);
  return s == HVD_SUCCESS ? id : kUnknownId;
}

// Rank 0 first names an unknown set, the last rank (not a member) the new one: both fail at
// once. The members' allreduce on the set completes once rank 0 resubmits.
void set_ops_with_bad_ranks(Results& results, const SetView& set) {
  const int n = hvd_size(), last = n - 1;
  std::vector<float> buf(4, 1.0f);
  std::vector<int64_t> shape = {4};
  hvd_tensor_t t = make_tensor(buf.data(), HVD_FLOAT32, shape);
  std::string why;
  bool ok = true;
  hvd_handle_t h = kSentinelHandle;
  const std::string name = "bi.sets.op";
  if (hvd_rank() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const hvd_op_args_t unknown = args_for(kUnknownId);
    ok &=
        expect_rejected(hvd_allreduce_async(&t, buf.data(), HVD_OP_SUM, name.c_str(), &unknown, &h),
                        &h, HVD_ERR_INVALID_ARGUMENT, set_text(kUnknownId), "unknown id", &why);
  }
  const hvd_op_args_t args = args_for(set.id);
  if (hvd_rank() == last) {
    ok &= expect_rejected(hvd_allreduce_async(&t, buf.data(), HVD_OP_SUM, name.c_str(), &args, &h),
                          &h, HVD_ERR_INVALID_ARGUMENT, "not a member", "non-member", &why);
  } else {
    hvd_status_t s = hvd_allreduce_async(&t, buf.data(), HVD_OP_SUM, name.c_str(), &args, &h);
    if (s == HVD_SUCCESS && !wait_deadline(h, 30, &s)) {
      why = "the set's op did not complete within 30 s";
      ok = false;
    } else {
      s = wait_free(s, &h);
      ok &= s == HVD_SUCCESS && buf[0] == static_cast<float>(set.size());
      if (s != HVD_SUCCESS) why = "the set's op failed: " + status_text(s);
    }
  }
  record(results, "bi.sets.unknown_or_foreign_id_on_some_ranks", ok, why);
}

// Rank 0 first destroys sets that do not exist (failing at once); then every rank destroys
// the set, after which every use of its id fails at once on every rank.
void destroy_with_bad_rank(Results& results, int32_t id) {
  std::string why;
  bool ok = true;
  if (hvd_rank() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ok &= expect_status(hvd_process_set_destroy(kUnknownId), HVD_ERR_INVALID_ARGUMENT,
                        set_text(kUnknownId), "destroy unknown", &why);
    ok &= expect_status(hvd_process_set_destroy(0), HVD_ERR_INVALID_ARGUMENT, "id 0", "destroy 0",
                        &why);
  }
  const hvd_status_t s = hvd_process_set_destroy(id);
  if (s != HVD_SUCCESS) why = "the good destroy failed: " + status_text(s), ok = false;
  record(results, "bi.sets.destroy_bad_on_one_rank", ok, why);
  why.clear();
  ok = rejected_everywhere(id, set_text(id), "bi.sets.destroyed", &why);
  ok &= check_unknown_queries(id, &why);
  ok &= expect_status(hvd_process_set_destroy(id), HVD_ERR_INVALID_ARGUMENT, set_text(id),
                      "destroy again", &why);
  record(results, "bi.sets.destroyed_id_fails_everywhere", ok, why);
}

// Waits up to 30 s; a stall here means the ranks paired different automatic names.
hvd_status_t wait_within(hvd_handle_t h) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int32_t done = 0;
  hvd_status_t s = HVD_SUCCESS;
  while ((s = hvd_test(h, &done)) == HVD_SUCCESS && !done) {
    if (std::chrono::steady_clock::now() > until) return HVD_ERR_TIMEOUT;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return s;
}

// A group rejected on rank 0 alone (its second member is bad) must not use up automatic names
// there: the unnamed allreduces after it must still pair across ranks.
void test_rejected_group_keeps_auto_names(Results& results) {
  std::vector<float> a(4, 1.0f), b(4, 1.0f);
  std::string why;
  bool ok = true;
  if (hvd_rank() == 0) {
    hvd_tensor_t inputs[2] = {make_tensor(a.data(), HVD_FLOAT32, {4}),
                              make_tensor(b.data(), HVD_FLOAT32, {4})};
    int64_t shape[1] = {4};
    inputs[0].shape = inputs[1].shape = shape;
    inputs[1].dtype = -1;
    void* outputs[2] = {a.data(), b.data()};
    hvd_handle_t h = 0;
    const hvd_status_t s =
        hvd_grouped_allreduce_async(inputs, outputs, 2, HVD_OP_SUM, nullptr, nullptr, &h);
    ok &= s == HVD_ERR_INVALID_ARGUMENT;
    if (!ok) why = "the bad group was not rejected: " + status_text(s);
  }
  for (int k = 0; k < 2 && ok; ++k) {
    std::vector<float> v(4, 1.0f);
    hvd_tensor_t t = make_tensor(v.data(), HVD_FLOAT32, {4});
    int64_t shape[1] = {4};
    t.shape = shape;
    hvd_handle_t h = 0;
    hvd_status_t s = hvd_allreduce_async(&t, v.data(), HVD_OP_SUM, nullptr, nullptr, &h);
    if (s == HVD_SUCCESS) s = wait_within(h);
    ok &= s == HVD_SUCCESS && all_equal(v, static_cast<float>(hvd_size()), &why);
    if (s != HVD_SUCCESS) why = "unnamed allreduce " + std::to_string(k) + ": " + status_text(s);
    if (h != 0) hvd_handle_free(h);
  }
  record(results, "bi.grouped.rejected_group_keeps_auto_names", ok, why);
}

}  // namespace

void test_bad_input(Results& results) {
  const int n = hvd_size();
  std::vector<OpCase> ops = op_cases();
  for (int bad_rank : {0, n - 1}) {
    for (OpCase& o : ops) bad_then_good(results, o, bad_rank);
    if (n == 1) break;
  }
  if (n > 1) {
    test_rejected_group_keeps_auto_names(results);
    test_mismatches(results);
    const Ranks members = iota_ranks(0, n - 2);
    const int32_t id = create_with_bad_rank(results, members);
    set_ops_with_bad_ranks(results, view_of(id, members));
    destroy_with_bad_rank(results, id);
  }
  // The job goes on: every collective once more, then a join.
  for (OpCase& o : ops) {
    hvd_handle_t h = 0;
    std::string why;
    const hvd_status_t s = submit_good(o, "bi.final." + o.label, &h);
    record(results, "bi.final." + o.label, finish_op(s, h, o, &why), why);
  }
  int32_t last = -1;
  const hvd_status_t s = hvd_join(&last);
  record(results, "bi.final.join", s == HVD_SUCCESS && last >= 0 && last < n, status_text(s));
}

}  // namespace hvdc_test
