// Runs one batch of the soak on this rank: prepares each op's buffers, submits the ops in this
// rank's own order, waits for each and checks its status, its output and its callbacks.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>

#include "../mpi/reference.h"
#include "soak.h"

namespace soak {

namespace {

constexpr unsigned char kPoison = 0xA5;  // output bytes the op must overwrite

struct Run {
  const Op* op = nullptr;
  int me = 0;  // this rank's rank in the op's set
  hvd_handle_t handle = 0;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<unsigned char>> in, out;
  std::vector<unsigned char> alloc_buf;
  std::atomic<int> allocs{0};
  std::atomic<int> done{0};
};

// Runs on the engine thread.
void on_done(void* user, hvd_handle_t, hvd_status_t) {
  static_cast<Run*>(user)->done.fetch_add(1);
}
void* on_alloc(void* user, const hvd_tensor_t*, size_t bytes) {
  Run* run = static_cast<Run*>(user);
  run->allocs.fetch_add(1);
  run->alloc_buf.assign(std::max<size_t>(bytes, 1), kPoison);
  return run->alloc_buf.data();
}

std::string status_text(hvd_status_t s) {
  return std::string(hvd_status_string(s)) + ": " + hvd_last_error_message();
}

size_t width_of(const Op& op, size_t part) {
  return hvdc_test::dtype_bytes(op.parts[part].dtype);
}

// This rank's rows of a reducescatter: the first rows % m set ranks get one more.
void scatter_rows(int64_t rows, int m, int me, size_t* first, size_t* count) {
  const int64_t base = rows / m, extra = rows % m;
  *count = static_cast<size_t>(base + (me < extra ? 1 : 0));
  *first = static_cast<size_t>(me * base + std::min<int64_t>(me, extra));
}

// Inputs filled from this rank's stream; outputs poisoned. Buffers are never empty, so that a
// zero-element tensor still passes a valid pointer.
void prepare(Run* run, int rank) {
  const Op& op = *run->op;
  for (size_t p = 0; p < op.parts.size(); ++p) {
    std::vector<int64_t> shape = op.parts[p].shape;
    if (op.kind == Kind::kAllgather || op.kind == Kind::kAlltoall) shape[0] = op.rows[run->me];
    const size_t n = elements_of(shape), w = width_of(op, p);
    run->in.emplace_back(std::max<size_t>(n * w, 1));
    fill_input(op, p, rank, 0, n, run->in.back().data());
    size_t out_elems = op.in_place ? 0 : n;
    if (op.kind == Kind::kReducescatter) {
      size_t first = 0;
      scatter_rows(shape[0], static_cast<int>(op.members.size()), run->me, &first, &out_elems);
      out_elems *= row_elements(shape);
    }
    run->out.emplace_back(std::max<size_t>(out_elems * w, 1), kPoison);
    run->shapes.push_back(shape);
  }
}

hvd_tensor_t tensor_of(Run* run, size_t p) {
  return {run->in[p].data(),
          run->op->parts[p].dtype,
          static_cast<int32_t>(run->shapes[p].size()),
          run->shapes[p].data(),
          {HVD_DEVICE_CPU, 0}};
}

hvd_status_t submit_grouped(Run* run, const hvd_op_args_t& args) {
  const Op& op = *run->op;
  std::vector<hvd_tensor_t> inputs;
  std::vector<void*> outputs;
  std::vector<const char*> names;
  for (size_t p = 0; p < op.parts.size(); ++p) {
    inputs.push_back(tensor_of(run, p));
    outputs.push_back(run->out[p].data());
    names.push_back(op.parts[p].name.c_str());
  }
  return hvd_grouped_allreduce_async(inputs.data(), outputs.data(), inputs.size(), op.reduce_op,
                                     op.auto_named ? nullptr : names.data(), &args, &run->handle);
}

hvd_status_t submit(Run* run, const std::vector<int32_t>& ids) {
  const Op& op = *run->op;
  hvd_op_args_t args;
  hvd_op_args_init(&args, sizeof(args));
  args.process_set = ids[op.set_slot];
  args.prescale_factor = op.prescale;
  args.postscale_factor = op.postscale;
  if (op.callback) args.on_done = on_done, args.on_done_user_data = run;
  if (op.custom_alloc) args.alloc = on_alloc, args.alloc_user_data = run;
  const char* name = op.auto_named ? nullptr : op.parts[0].name.c_str();
  const hvd_tensor_t t = tensor_of(run, 0);
  void* out = op.in_place ? run->in[0].data() : run->out[0].data();
  const size_t m = op.members.size();
  switch (op.kind) {
    case Kind::kAllreduce:
      return hvd_allreduce_async(&t, out, op.reduce_op, name, &args, &run->handle);
    case Kind::kGrouped:
      return submit_grouped(run, args);
    case Kind::kAllgather:
      return hvd_allgather_async(&t, name, &args, &run->handle);
    case Kind::kBroadcast:
      return hvd_broadcast_async(&t, out, op.root, name, &args, &run->handle);
    case Kind::kAlltoall:
      return hvd_alltoall_async(&t, op.splits.empty() ? nullptr : &op.splits[run->me * m], name,
                                &args, &run->handle);
    case Kind::kReducescatter:
      return hvd_reducescatter_async(&t, out, op.reduce_op, name, &args, &run->handle);
    default:
      return hvd_barrier_async(name, &args, &run->handle);
  }
}

// The library's description of an allgather or alltoall output, checked against the expected
// first dimension; *data gets the elements.
bool check_output_tensor(Run* run, int64_t rows, const void** data, std::string* why) {
  const Op& op = *run->op;
  hvd_tensor_t t;
  const hvd_status_t s = hvd_handle_output(run->handle, &t);
  if (s != HVD_SUCCESS) return *why = "hvd_handle_output: " + status_text(s), false;
  std::vector<int64_t> want = run->shapes[0];
  want[0] = rows;
  std::vector<int64_t> got(t.shape, t.shape + std::max(t.ndim, 0));
  if (t.dtype != op.parts[0].dtype || got != want) {
    return *why = "output dtype " + std::to_string(t.dtype) + " ndim " + std::to_string(t.ndim) +
                  " rows " + std::to_string(got.empty() ? -1 : got[0]) + ", want rows " +
                  std::to_string(rows),
           false;
  }
  if (op.custom_alloc && (run->allocs.load() != 1 || t.data != run->alloc_buf.data())) {
    return *why = "allocator called " + std::to_string(run->allocs.load()) +
                  " times, or output not in its buffer",
           false;
  }
  *data = t.data;
  return true;
}

bool check_allgather(Run* run, std::string* why) {
  const Op& op = *run->op;
  int64_t total = 0;
  for (int64_t r : op.rows) total += r;
  const void* data = nullptr;
  if (!check_output_tensor(run, total, &data, why)) return false;
  const size_t row = row_elements(run->shapes[0]), w = width_of(op, 0);
  size_t offset = 0;
  for (size_t k = 0; k < op.members.size(); ++k) {
    const size_t n = static_cast<size_t>(op.rows[k]) * row;
    const char* at = static_cast<const char*>(data) + offset * w;
    if (n != 0 && !check_copy(op, 0, op.members[k], at, 0, n, why)) return false;
    offset += n;
  }
  return true;
}

bool check_alltoall(Run* run, std::string* why) {
  const Op& op = *run->op;
  const size_t m = op.members.size(), me = static_cast<size_t>(run->me);
  std::vector<int32_t> want(m), got(m, -1);
  for (size_t src = 0; src < m; ++src) {
    want[src] = op.splits.empty() ? static_cast<int32_t>(op.rows[src] / static_cast<int64_t>(m))
                                  : op.splits[src * m + me];
  }
  const hvd_status_t s =
      hvd_handle_received_splits(run->handle, got.data(), static_cast<int32_t>(m));
  if (s != HVD_SUCCESS || got != want) {
    return *why = "received splits wrong or unavailable: " + status_text(s), false;
  }
  int64_t total = 0;
  for (int32_t r : want) total += r;
  const void* data = nullptr;
  if (!check_output_tensor(run, total, &data, why)) return false;
  const size_t row = row_elements(run->shapes[0]), w = width_of(op, 0);
  size_t offset = 0;
  for (size_t src = 0; src < m; ++src) {
    size_t skip = 0;  // rows src sends to set ranks before this one
    for (size_t d = 0; d < me; ++d) {
      skip += static_cast<size_t>(op.splits.empty() ? want[src] : op.splits[src * m + d]);
    }
    const size_t n = static_cast<size_t>(want[src]) * row;
    const char* at = static_cast<const char*>(data) + offset * w;
    if (n != 0 && !check_copy(op, 0, op.members[src], at, skip * row, n, why)) return false;
    offset += n;
  }
  return true;
}

bool check_result(Run* run, std::string* why) {
  const Op& op = *run->op;
  if (op.callback && run->done.load() != 1) {
    return *why = "on_done fired " + std::to_string(run->done.load()) + " times", false;
  }
  const void* out0 = op.in_place ? run->in[0].data() : run->out[0].data();
  switch (op.kind) {
    case Kind::kAllreduce:
      return check_reduction(op, 0, out0, 0, elements_of(run->shapes[0]), why);
    case Kind::kGrouped:
      for (size_t p = 0; p < op.parts.size(); ++p) {
        if (!check_reduction(op, p, run->out[p].data(), 0, elements_of(run->shapes[p]), why)) {
          return *why = "member " + std::to_string(p) + ": " + *why, false;
        }
      }
      return true;
    case Kind::kBroadcast:
      return check_copy(op, 0, op.members[op.root], out0, 0, elements_of(run->shapes[0]), why);
    case Kind::kReducescatter: {
      size_t first = 0, count = 0;
      scatter_rows(run->shapes[0][0], static_cast<int>(op.members.size()), run->me, &first, &count);
      const size_t row = row_elements(run->shapes[0]);
      return check_reduction(op, 0, out0, first * row, count * row, why);
    }
    case Kind::kAllgather:
      return check_allgather(run, why);
    case Kind::kAlltoall:
      return check_alltoall(run, why);
    default:
      return true;
  }
}

// A per-rank shuffle, except that automatically named ops keep the plan's order among
// themselves: their names count per set and kind, so every member must submit them alike.
std::vector<Run*> submission_order(const std::vector<std::unique_ptr<Run>>& runs, uint64_t seed) {
  std::vector<Run*> order;
  for (const auto& r : runs) order.push_back(r.get());
  Rng rng{seed};
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  std::vector<Run*> autos;
  for (const auto& r : runs) {
    if (r->op->auto_named) autos.push_back(r.get());
  }
  size_t next = 0;
  for (Run*& slot : order) {
    if (slot->op->auto_named) slot = autos[next++];
  }
  return order;
}

// Stops every rank (their pending ops fail with HVD_ERR_ABORTED) and lets this rank's ops end
// before their buffers go away.
bool fail(const std::vector<std::unique_ptr<Run>>& runs, const Op& op, int rank,
          const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
  const std::string reason =
      "soak: rank " + std::to_string(rank) + " failed at op #" + std::to_string(op.index);
  hvd_abort(reason.c_str());
  for (const auto& r : runs) {
    if (r->handle != 0) hvd_handle_free(r->handle);
    r->handle = 0;
  }
  return false;
}

}  // namespace

bool run_batch(const std::vector<const Op*>& ops, const std::vector<int32_t>& ids, int rank,
               uint64_t order_seed, const std::string& repro) {
  std::vector<std::unique_ptr<Run>> runs;
  for (const Op* op : ops) {
    auto run = std::make_unique<Run>();
    run->op = op;
    run->me = static_cast<int>(std::find(op->members.begin(), op->members.end(), rank) -
                               op->members.begin());
    prepare(run.get(), rank);
    runs.push_back(std::move(run));
  }
  const std::string who = "FAIL rank " + std::to_string(rank) + ": ";
  const std::vector<Run*> order = submission_order(runs, order_seed);
  for (Run* run : order) {
    const hvd_status_t s = submit(run, ids);
    if (s != HVD_SUCCESS) {
      return fail(runs, *run->op, rank,
                  who + describe(*run->op, ids) + ": submit: " + status_text(s) +
                      "\n  reproduce: " + repro);
    }
  }
  for (Run* run : order) {
    const hvd_status_t s = hvd_wait(run->handle);
    std::string why;
    if (s != HVD_SUCCESS) {
      why = "status " + status_text(s);
    } else if (!check_result(run, &why)) {
      why = "wrong result: " + why;
    }
    hvd_handle_free(run->handle);
    run->handle = 0;
    if (why.empty()) continue;
    std::string line = who + describe(*run->op, ids) + ": " + why;
    if (s != HVD_ERR_ABORTED) {  // else another rank failed first and said why
      line += "\n  reproduce: " + repro + " (this op alone: --only " +
              std::to_string(run->op->index) + ")";
    }
    return fail(runs, *run->op, rank, line);
  }
  return true;
}

}  // namespace soak
