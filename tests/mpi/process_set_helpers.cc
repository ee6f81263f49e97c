// The helpers shared by the process-set tests (see process_set_helpers.h).
#include "process_set_helpers.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace hvdc_test {

SetView view_of(int32_t id, Ranks members) {
  std::sort(members.begin(), members.end());
  SetView v;
  v.id = id;
  v.members = members;
  for (int k = 0; k < v.size(); ++k) {
    if (members[k] == hvd_rank()) v.index = k;
  }
  return v;
}

std::string set_text(int32_t id) {
  return "process set " + std::to_string(id);
}

std::string list_text(const Ranks& r) {
  std::string out = "[";
  for (size_t i = 0; i < r.size(); ++i) out += (i ? ", " : "") + std::to_string(r[i]);
  return out + "]";
}

Ranks iota_ranks(int32_t first, int32_t last) {  // [first, last]
  Ranks out;
  for (int32_t r = first; r <= last; ++r) out.push_back(r);
  return out;
}

hvd_op_args_t args_for(int32_t set) {
  hvd_op_args_t args;
  hvd_op_args_init(&args, sizeof(args));
  args.process_set = set;
  return args;
}

// Takes the handle by pointer: it is read only after the submitting call has written it.
hvd_status_t wait_free(hvd_status_t s, const hvd_handle_t* h) {
  if (s == HVD_SUCCESS) s = hvd_wait(*h);
  if (*h != 0) hvd_handle_free(*h);
  return s;
}

// Polls a handle for up to `seconds`; false if the op has not ended by then (the handle is then
// left alone: freeing it would wait).
bool wait_deadline(hvd_handle_t h, double seconds, hvd_status_t* status) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    int32_t done = 0;
    const hvd_status_t s = hvd_test(h, &done);
    if (done || s < 0) {
      *status = s;
      return true;
    }
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// `s` is what a submitting call returned and *h its handle output (set to kSentinelHandle before
// the call). The call must have failed at once with `want`, left *h alone and named `needle` in
// its message. A call that was enqueued instead is neither waited for nor freed: its peers may
// never submit it.
bool expect_rejected(hvd_status_t s, const hvd_handle_t* h, hvd_status_t want,
                     const std::string& needle, const std::string& what, std::string* why) {
  const std::string message = hvd_last_error_message();
  std::string problem;
  if (s != want) {
    problem =
        std::string("returned ") + hvd_status_string(s) + ", expected " + hvd_status_string(want);
  } else if (message.empty() || message.find(needle) == std::string::npos) {
    problem = "message does not name '" + needle + "'";
  } else if (*h != kSentinelHandle) {
    problem = "the handle was written";
  }
  if (problem.empty()) return true;
  if (why->empty()) *why = what + ": " + problem + " (message: '" + message + "')";
  return false;
}

// The same for calls without a handle. An empty needle asks only for a non-empty message.
bool expect_status(hvd_status_t s, hvd_status_t want, const std::string& needle,
                   const std::string& what, std::string* why) {
  const hvd_handle_t unused = kSentinelHandle;
  return expect_rejected(s, &unused, want, needle, what, why);
}

// ---- Queries --------------------------------------------------------------------------------

Ranks query_ids(hvd_status_t* status) {
  int32_t count = -1;
  *status = hvd_process_set_ids(nullptr, 0, &count);
  if (*status != HVD_SUCCESS || count < 0) return {};
  Ranks ids(count, kSentinel);
  *status = hvd_process_set_ids(ids.data(), count, &count);
  if (*status != HVD_SUCCESS || count != static_cast<int32_t>(ids.size())) return {};
  return ids;
}

Ranks query_ranks(int32_t id, hvd_status_t* status) {
  int32_t count = -1;
  *status = hvd_process_set_ranks(id, nullptr, 0, &count);
  if (*status != HVD_SUCCESS || count < 0) return {};
  Ranks ranks(count + 1, kSentinel);  // one spare entry: capacity may exceed the size
  int32_t again = -1;
  *status = hvd_process_set_ranks(id, ranks.data(), count + 1, &again);
  if (*status != HVD_SUCCESS || again != count || ranks[count] != kSentinel) return {};
  ranks.pop_back();
  return ranks;
}

// Every query of set v on this rank agrees with v.
bool check_queries(const SetView& v, std::string* why) {
  int32_t rank = kSentinel, size = kSentinel, included = kSentinel;
  hvd_status_t s = hvd_process_set_rank(v.id, &rank);
  if (s != HVD_SUCCESS || rank != v.index) {
    *why = "rank: " + status_text(s) + ", got " + std::to_string(rank);
    return false;
  }
  s = hvd_process_set_size(v.id, &size);
  if (s != HVD_SUCCESS || size != v.size()) {
    *why = "size: " + status_text(s) + ", got " + std::to_string(size);
    return false;
  }
  s = hvd_process_set_included(v.id, &included);
  if (s != HVD_SUCCESS || included != (v.member() ? 1 : 0)) {
    *why = "included: " + status_text(s) + ", got " + std::to_string(included);
    return false;
  }
  const Ranks ranks = query_ranks(v.id, &s);
  if (s != HVD_SUCCESS || ranks != v.members) {
    *why = "ranks: " + status_text(s) + ", got " + list_text(ranks) + ", expected " +
           list_text(v.members);
    return false;
  }
  return true;
}

// Every query of a set that does not exist fails with HVD_ERR_INVALID_ARGUMENT naming the id,
// and writes nothing.
bool check_unknown_queries(int32_t id, std::string* why) {
  const std::string needle = std::to_string(id);
  int32_t out = kSentinel, count = kSentinel;
  int32_t buf[8] = {kSentinel};
  bool ok = expect_status(hvd_process_set_rank(id, &out), HVD_ERR_INVALID_ARGUMENT, needle,
                          "rank of " + set_text(id), why);
  ok &= expect_status(hvd_process_set_size(id, &out), HVD_ERR_INVALID_ARGUMENT, needle,
                      "size of " + set_text(id), why);
  ok &= expect_status(hvd_process_set_included(id, &out), HVD_ERR_INVALID_ARGUMENT, needle,
                      "included of " + set_text(id), why);
  ok &= expect_status(hvd_process_set_ranks(id, buf, 8, &count), HVD_ERR_INVALID_ARGUMENT, needle,
                      "ranks of " + set_text(id), why);
  ok &= expect_status(hvd_process_set_ranks(id, nullptr, 0, &count), HVD_ERR_INVALID_ARGUMENT,
                      needle, "ranks(NULL) of " + set_text(id), why);
  if (ok && (out != kSentinel || count != kSentinel || buf[0] != kSentinel)) {
    *why = "a failed query wrote its output";
    ok = false;
  }
  return ok;
}

bool ids_are(const Ranks& want, std::string* why) {
  hvd_status_t s = HVD_SUCCESS;
  const Ranks ids = query_ids(&s);
  if (s == HVD_SUCCESS && ids == want) return true;
  *why = "ids: " + status_text(s) + ", got " + list_text(ids) + ", expected " + list_text(want);
  return false;
}

// ---- Allreduce batches ----------------------------------------------------------------------

// Rank g's element i of an allreduce with `salt`: small integers, so sums are exact in float32.
float input_value(int g, size_t i, int salt) {
  return static_cast<float>(1 + g + static_cast<int>((i * 7 + static_cast<size_t>(salt)) % 13));
}

bool close_to(double got, double want) {
  return std::fabs(got - want) <= 1e-5 * std::max(1.0, std::fabs(want));
}

// Appends an allreduce of `set` if this rank is one of its members.
void add_op(std::vector<ReduceOp>* ops, const SetView& set, const std::string& name, size_t count,
            int32_t reduce, int salt) {
  if (!set.member()) return;
  ReduceOp op;
  op.name = name;
  op.set = set;
  op.count = count;
  op.reduce = reduce;
  op.salt = salt;
  ops->push_back(std::move(op));
}

hvd_status_t submit(ReduceOp* op) {
  op->buf.resize(op->count);
  for (size_t i = 0; i < op->count; ++i) op->buf[i] = input_value(hvd_rank(), i, op->salt);
  op->shape = {static_cast<int64_t>(op->count)};
  hvd_tensor_t t = make_tensor(op->buf.data(), HVD_FLOAT32, op->shape);
  const hvd_op_args_t args = args_for(op->set.id);
  op->handle = 0;
  return hvd_allreduce_async(&t, op->buf.data(), op->reduce, op->name.c_str(), &args, &op->handle);
}

bool check(const ReduceOp& op, std::string* why) {
  for (size_t i = 0; i < op.count; ++i) {
    double want = 0;
    for (int32_t g : op.set.members) want += input_value(g, i, op.salt);
    if (op.reduce == HVD_OP_AVERAGE) want /= op.set.size();
    const bool ok =
        op.reduce == HVD_OP_SUM ? op.buf[i] == static_cast<float>(want) : close_to(op.buf[i], want);
    if (!ok) {
      *why = op.name + " in " + set_text(op.set.id) + ", element " + std::to_string(i) + ": got " +
             std::to_string(op.buf[i]) + ", expected " + std::to_string(want);
      return false;
    }
  }
  return true;
}

// Submits every op in an order shuffled by `seed`, waits for all, checks every result.
bool run_ops(std::vector<ReduceOp>* ops, unsigned seed, std::string* why) {
  std::vector<size_t> order(ops->size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  std::vector<hvd_handle_t> handles;
  bool ok = true;
  for (size_t k : order) {
    ReduceOp& op = (*ops)[k];
    const hvd_status_t s = submit(&op);
    if (s != HVD_SUCCESS) {
      if (ok) *why = "submit " + op.name + " in " + set_text(op.set.id) + ": " + status_text(s);
      ok = false;
      continue;  // the rest still go in: peers wait for them
    }
    handles.push_back(op.handle);
  }
  const hvd_status_t s = hvd_wait_all(handles.data(), handles.size());
  if (s != HVD_SUCCESS && ok) {
    *why = "wait_all: " + status_text(s);
    ok = false;
  }
  for (hvd_handle_t h : handles) hvd_handle_free(h);
  for (size_t k = 0; ok && k < ops->size(); ++k) ok = check((*ops)[k], why);
  return ok;
}

bool run_one(const SetView& set, const std::string& name, size_t count, int32_t reduce, int salt,
             std::string* why) {
  std::vector<ReduceOp> ops;
  add_op(&ops, set, name, count, reduce, salt);
  return run_ops(&ops, 0, why);
}

// Every collective type, called on a set this rank is not in (or an unknown one), fails at the
// call with HVD_ERR_INVALID_ARGUMENT naming `needle`.
bool rejected_everywhere(int32_t id, const std::string& needle, const std::string& prefix,
                         std::string* why) {
  const int k = std::max(4, hvd_size() * 2);
  std::vector<float> data(k, 1.0f), out(k, 0.0f);
  std::vector<int64_t> shape = {k};
  hvd_tensor_t t = make_tensor(data.data(), HVD_FLOAT32, shape);
  const hvd_op_args_t args = args_for(id);
  hvd_handle_t h = kSentinelHandle;
  const hvd_status_t want = HVD_ERR_INVALID_ARGUMENT;
  bool ok = expect_rejected(
      hvd_allreduce_async(&t, out.data(), HVD_OP_SUM, (prefix + ".ar").c_str(), &args, &h), &h,
      want, needle, "allreduce", why);
  h = kSentinelHandle;
  ok &= expect_rejected(hvd_allgather_async(&t, (prefix + ".ag").c_str(), &args, &h), &h, want,
                        needle, "allgather", why);
  h = kSentinelHandle;
  ok &= expect_rejected(hvd_broadcast_async(&t, out.data(), 0, (prefix + ".bc").c_str(), &args, &h),
                        &h, want, needle, "broadcast", why);
  h = kSentinelHandle;
  ok &= expect_rejected(hvd_alltoall_async(&t, nullptr, (prefix + ".a2a").c_str(), &args, &h), &h,
                        want, needle, "alltoall", why);
  h = kSentinelHandle;
  ok &= expect_rejected(
      hvd_reducescatter_async(&t, out.data(), HVD_OP_SUM, (prefix + ".rs").c_str(), &args, &h), &h,
      want, needle, "reducescatter", why);
  h = kSentinelHandle;
  ok &= expect_rejected(hvd_barrier_async((prefix + ".barrier").c_str(), &args, &h), &h, want,
                        needle, "barrier", why);
  h = kSentinelHandle;
  void* outs[1] = {out.data()};
  const std::string gname = prefix + ".grp";
  const char* names[1] = {gname.c_str()};
  ok &= expect_rejected(hvd_grouped_allreduce_async(&t, outs, 1, HVD_OP_SUM, names, &args, &h), &h,
                        want, needle, "grouped allreduce", why);
  return ok;
}

}  // namespace hvdc_test
