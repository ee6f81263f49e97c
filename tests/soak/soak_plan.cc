// The soak plan: which ops run, in which sets, with which dtypes, shapes and names. Everything
// is drawn from one generator seeded by --seed, in the same sequence on every rank, so the ranks
// agree on the plan without exchanging it.
#include <algorithm>
#include <cmath>

#include "../mpi/reference.h"
#include "soak.h"

namespace soak {

namespace {

constexpr int64_t kMaxBytes = int64_t{1} << 20;  // 1 MiB of data per tensor and rank
constexpr int kNamePool = 64;              // pool names repeat, so the response cache sees hits
constexpr int kMaxDynamicSets = 3;         // live sets created at run time, beside the static ones
constexpr double kEventChance = 1.0 / 32;  // a set create or destroy before a batch

bool same_members(std::vector<int> a, std::vector<int> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

std::string list_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

const char* kind_label(Kind kind) {
  switch (kind) {
    case Kind::kAllreduce:
      return "allreduce";
    case Kind::kGrouped:
      return "grouped_allreduce";
    case Kind::kAllgather:
      return "allgather";
    case Kind::kBroadcast:
      return "broadcast";
    case Kind::kAlltoall:
      return "alltoall";
    case Kind::kReducescatter:
      return "reducescatter";
    default:
      return "barrier";
  }
}

Plan::Plan(uint64_t seed, int size, int batch_max)
    : rng_{mix(seed ^ 0x50a4ull)}, seed_(seed), size_(size), batch_max_(batch_max) {
  slots_.push_back({{}, true, true});
  for (int r = 0; r < size; ++r) slots_[0].members.push_back(r);
  // Overlapping sets, a pair that skips a rank and a singleton, where the job is big enough;
  // a set of every rank would be set 0 again, which create refuses.
  const std::vector<std::vector<int>> wanted = {{0, 1}, {1, 2, 3}, {0, 2}, {size - 1}};
  for (const std::vector<int>& members : wanted) {
    const bool fits =
        std::all_of(members.begin(), members.end(), [size](int r) { return r >= 0 && r < size; });
    if (!fits || static_cast<int>(members.size()) >= size) continue;
    const bool known = std::any_of(slots_.begin(), slots_.end(),
                                   [&](const Slot& s) { return same_members(s.members, members); });
    if (!known) slots_.push_back({members, true, true});
  }
  static_slots_ = static_cast<int>(slots_.size()) - 1;
}

std::vector<SetEvent> Plan::static_sets() const {
  std::vector<SetEvent> out;
  for (size_t i = 1; i < slots_.size(); ++i)
    out.push_back({true, static_cast<int>(i), slots_[i].members});
  return out;
}

Batch Plan::next(uint64_t remaining) {
  Batch batch;
  batch.number = batches_++;
  maybe_event(&batch);
  const uint64_t count = std::min<uint64_t>(remaining, 1 + rng_.below(batch_max_));
  std::vector<std::string> used_names;  // "slot:name" within the batch: names are unique per set
  for (uint64_t i = 0; i < count; ++i) batch.ops.push_back(draw_op(batch.number, &used_names));
  return batch;
}

// Creates a set of random members (given in a random order) or destroys a dynamic one.
void Plan::maybe_event(Batch* batch) {
  if (size_ < 2 || !rng_.chance(kEventChance)) return;
  std::vector<int> dynamic;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].live && !slots_[i].is_static) dynamic.push_back(static_cast<int>(i));
  }
  const bool create =
      static_cast<int>(dynamic.size()) < kMaxDynamicSets && (dynamic.empty() || rng_.chance(0.6));
  if (!create) {
    const int slot = dynamic[rng_.below(dynamic.size())];
    slots_[slot].live = false;
    batch->events.push_back({false, slot, slots_[slot].members});
    return;
  }
  for (int attempt = 0; attempt < 10; ++attempt) {
    std::vector<int> members;
    for (int r = 0; r < size_; ++r) {
      if (rng_.chance(0.5)) members.push_back(r);
    }
    if (members.empty() || static_cast<int>(members.size()) == size_) continue;
    const bool known = std::any_of(slots_.begin(), slots_.end(), [&](const Slot& s) {
      return s.live && same_members(s.members, members);
    });
    if (known) continue;
    std::vector<int> given = members;
    for (size_t i = given.size(); i > 1; --i) std::swap(given[i - 1], given[rng_.below(i)]);
    slots_.push_back({members, true, false});
    batch->events.push_back({true, static_cast<int>(slots_.size() - 1), given});
    return;
  }
}

int Plan::pick_set() {
  if (rng_.chance(0.5)) return 0;
  std::vector<int> live;
  for (size_t i = 1; i < slots_.size(); ++i) {
    if (slots_[i].live) live.push_back(static_cast<int>(i));
  }
  return live.empty() ? 0 : live[rng_.below(live.size())];
}

// Most ops repeat one of kNamePool templates: the same name, set and metadata every time (new
// data), as a training loop's gradients do, so the response cache hits. The others are drawn
// afresh, with a fresh name, an automatic one, or a template's name with other metadata (the
// cache's stale path).
Op Plan::draw_op(uint64_t batch, std::vector<std::string>* used_names) {
  Op op;
  op.index = next_index_++;
  op.batch = batch;
  op.seed = mix(seed_ ^ mix(op.index));
  if (rng_.chance(0.6)) {
    const uint64_t k = rng_.below(kNamePool);
    const Rng saved = rng_;
    rng_ = Rng{mix(seed_ ^ mix(k ^ 0x7e3a7e3aull))};  // the template's own draws
    const bool global = static_slots_ == 0 || rng_.chance(0.5);
    draw_body(&op, global ? 0 : 1 + static_cast<int>(rng_.below(static_slots_)));
    rng_ = saved;
    for (size_t p = 0; p < op.parts.size(); ++p) {
      op.parts[p].name =
          unique_name(op, "soak.t" + std::to_string(k) + "." + std::to_string(p), used_names);
    }
    return op;
  }
  draw_body(&op, pick_set());
  const double r = rng_.unit();
  op.auto_named = r < 0.3;
  for (size_t p = 0; p < op.parts.size() && !op.auto_named; ++p) {
    std::string name = "soak.f" + std::to_string(op.index) + "." + std::to_string(p);
    if (r < 0.5) name = "soak.t" + std::to_string(rng_.below(kNamePool)) + "." + std::to_string(p);
    if (rng_.chance(0.05)) name += std::string(1 + rng_.below(200), 'x');
    op.parts[p].name = unique_name(op, name, used_names);
  }
  return op;
}

void Plan::draw_body(Op* op, int slot) {
  op->set_slot = slot;
  op->members = slots_[slot].members;
  op->callback = rng_.chance(0.2);
  const uint64_t k = rng_.below(100);
  op->parts.resize(1);
  if (k < 30) {
    op->kind = Kind::kAllreduce;
    draw_allreduce(op);
  } else if (k < 38) {
    op->kind = Kind::kGrouped;
    draw_grouped(op);
  } else if (k < 53) {
    op->kind = Kind::kAllgather;
    draw_allgather(op);
  } else if (k < 67) {
    op->kind = Kind::kBroadcast;
    op->parts[0].dtype = draw_dtype(true);
    op->parts[0].shape = draw_shape(draw_elements(op->parts[0].dtype, kMaxBytes), true);
    op->root = static_cast<int>(rng_.below(op->members.size()));
    op->in_place = rng_.chance(0.3);
  } else if (k < 79) {
    op->kind = Kind::kAlltoall;
    draw_alltoall(op);
  } else if (k < 93) {
    op->kind = Kind::kReducescatter;
    draw_reducescatter(op);
  } else {
    op->kind = Kind::kBarrier;
  }
}

void Plan::draw_allreduce(Op* op) {
  static const int32_t kOps[] = {HVD_OP_AVERAGE, HVD_OP_SUM, HVD_OP_MIN, HVD_OP_MAX,
                                 HVD_OP_PRODUCT};
  Part& part = op->parts[0];
  part.dtype = draw_dtype(true);
  op->reduce_op = kOps[rng_.below(5)];
  if (part.dtype == HVD_BOOL && op->reduce_op == HVD_OP_AVERAGE) op->reduce_op = HVD_OP_SUM;
  part.shape = draw_shape(draw_elements(part.dtype, kMaxBytes), true);
  op->in_place = rng_.chance(0.25);
  const bool sums = op->reduce_op == HVD_OP_SUM || op->reduce_op == HVD_OP_AVERAGE;
  if (hvdc_test::is_float(part.dtype) && sums && rng_.chance(0.3)) {
    static const double kFactors[] = {0.25, 0.5, 1.0, 2.0};  // powers of two keep sums exact
    op->prescale = kFactors[rng_.below(4)];
    op->postscale = kFactors[rng_.below(4)];
  }
}

// Members of one reduce op and one set, each with its own dtype and size (1 MiB in all).
void Plan::draw_grouped(Op* op) {
  static const int32_t kOps[] = {HVD_OP_AVERAGE, HVD_OP_SUM, HVD_OP_MIN, HVD_OP_MAX,
                                 HVD_OP_PRODUCT};
  op->reduce_op = kOps[rng_.below(5)];
  const size_t count = 1 + rng_.below(8);
  op->parts.resize(count);
  for (Part& part : op->parts) {
    part.dtype = draw_dtype(op->reduce_op != HVD_OP_AVERAGE);
    part.shape = draw_shape(draw_elements(part.dtype, kMaxBytes / count), false);
  }
}

void Plan::draw_allgather(Op* op) {
  Part& part = op->parts[0];
  part.dtype = draw_dtype(true);
  part.shape = draw_shape(draw_elements(part.dtype, kMaxBytes), false);
  const int64_t base = std::max<int64_t>(part.shape[0], 1);
  for (size_t k = 0; k < op->members.size(); ++k) {
    op->rows.push_back(rng_.chance(0.1) ? 0 : 1 + static_cast<int64_t>(rng_.below(base)));
  }
  op->custom_alloc = rng_.chance(0.5);
}

// Each rank sends its own number of rows; the splits are a random cut of them (zeros included),
// or an even split (NULL) where every rank's rows divide by the set's size.
void Plan::draw_alltoall(Op* op) {
  Part& part = op->parts[0];
  part.dtype = draw_dtype(true);
  part.shape = draw_shape(draw_elements(part.dtype, kMaxBytes), false);
  const int64_t m = static_cast<int64_t>(op->members.size());
  const bool even = rng_.chance(0.2);
  for (int64_t src = 0; src < m; ++src) {
    int64_t rows = static_cast<int64_t>(rng_.below(part.shape[0] + 1));
    if (even) rows -= rows % m;
    op->rows.push_back(rows);
    if (even) continue;
    std::vector<int64_t> cuts = {0, rows};
    for (int64_t d = 1; d < m; ++d) cuts.push_back(static_cast<int64_t>(rng_.below(rows + 1)));
    std::sort(cuts.begin(), cuts.end());
    for (int64_t d = 0; d < m; ++d)
      op->splits.push_back(static_cast<int32_t>(cuts[d + 1] - cuts[d]));
  }
  op->custom_alloc = rng_.chance(0.5);
}

void Plan::draw_reducescatter(Op* op) {
  Part& part = op->parts[0];
  part.dtype = draw_dtype(false);
  op->reduce_op = rng_.chance(0.5) ? HVD_OP_SUM : HVD_OP_AVERAGE;
  part.shape = draw_shape(draw_elements(part.dtype, kMaxBytes), false);
  if (hvdc_test::is_float(part.dtype) && rng_.chance(0.3)) {
    static const double kFactors[] = {0.25, 0.5, 1.0, 2.0};
    op->prescale = kFactors[rng_.below(4)];
    op->postscale = kFactors[rng_.below(4)];
  }
}

// Names are unique per set among the ops in flight: a name already used in this batch and set
// gives way to a fresh one.
std::string Plan::unique_name(const Op& op, const std::string& name,
                              std::vector<std::string>* used_names) {
  std::string key = std::to_string(op.set_slot) + ":" + name;
  if (std::find(used_names->begin(), used_names->end(), key) != used_names->end()) {
    return unique_name(op, name + ".again", used_names);
  }
  used_names->push_back(key);
  return name;
}

// Log-uniform bytes in [1, max_bytes] (a few empty tensors), as whole elements.
int64_t Plan::draw_elements(int32_t dtype, int64_t max_bytes) {
  if (rng_.chance(0.03)) return 0;
  const double bytes = std::exp(rng_.unit() * std::log(static_cast<double>(max_bytes)));
  const int64_t elements =
      static_cast<int64_t>(bytes) / static_cast<int64_t>(hvdc_test::dtype_bytes(dtype));
  return std::max<int64_t>(elements, 1);
}

// A shape of about `elements` elements: a scalar, a vector, or rows of a few columns.
std::vector<int64_t> Plan::draw_shape(int64_t elements, bool allow_scalar) {
  if (allow_scalar && elements == 1 && rng_.chance(0.3)) return {};
  const uint64_t ndim = rng_.below(10);
  if (ndim < 6) return {elements};
  static const int64_t kCols[] = {1, 2, 3, 4, 5, 8, 16, 64, 100};
  if (ndim < 9) {
    const int64_t cols = std::max<int64_t>(1, std::min(elements, kCols[rng_.below(9)]));
    return {elements / cols, cols};
  }
  const int64_t a = 1 + static_cast<int64_t>(rng_.below(4)),
                b = 1 + static_cast<int64_t>(rng_.below(4));
  return {elements / (a * b), a, b};
}

int32_t Plan::draw_dtype(bool allow_bool) {
  for (;;) {
    const int32_t d = static_cast<int32_t>(rng_.below(11));
    if (d != HVD_BOOL || allow_bool) return d;
  }
}

std::string describe(const Op& op, const std::vector<int32_t>& ids) {
  std::string s = "op #" + std::to_string(op.index) + " (batch " + std::to_string(op.batch) + ") " +
                  kind_label(op.kind);
  if (is_reduction(op.kind)) s += std::string(" ") + hvdc_test::op_label(op.reduce_op);
  if (op.prescale != 1.0 || op.postscale != 1.0) {
    s += " prescale " + std::to_string(op.prescale) + " postscale " + std::to_string(op.postscale);
  }
  const int32_t id = op.set_slot < static_cast<int>(ids.size()) ? ids[op.set_slot] : -1;
  s += " set " + std::to_string(id) + " {";
  for (size_t i = 0; i < op.members.size(); ++i)
    s += (i ? "," : "") + std::to_string(op.members[i]);
  s += "}";
  for (const Part& p : op.parts) {
    if (op.kind == Kind::kBarrier) {
      s += std::string(" '") + (op.auto_named ? "(auto)" : p.name.substr(0, 40)) + "'";
      break;
    }
    s += std::string(" ") + hvdc_test::dtype_label(p.dtype) + list_text(p.shape) + " '" +
         (op.auto_named ? "(auto)" : p.name.substr(0, 40)) + "'";
  }
  if (op.kind == Kind::kAllgather || op.kind == Kind::kAlltoall) s += " rows " + list_text(op.rows);
  if (!op.splits.empty()) {
    s += " splits " + list_text(std::vector<int64_t>(op.splits.begin(), op.splits.end()));
  } else if (op.kind == Kind::kAlltoall) {
    s += " splits even";
  }
  if (op.kind == Kind::kBroadcast) s += " root " + std::to_string(op.root);
  if (op.in_place) s += " in-place";
  if (op.custom_alloc) s += " custom-alloc";
  if (op.callback) s += " callback";
  return s;
}

}  // namespace soak
