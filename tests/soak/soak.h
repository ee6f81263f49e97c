// The soak test's shared types. Every rank builds the same plan of ops from one seed
// (soak_plan.cc), fills its inputs and computes the expected outputs locally from (seed, op,
// rank) (soak_data.cc), submits the ops of a batch in its own order and checks every result
// (soak_run.cc); soak.cc drives the batches and watches memory and progress.
#pragma once

#include <hvdc.h>

#include <cstdint>
#include <string>
#include <vector>

namespace soak {

uint64_t mix(uint64_t x);  // splitmix64's finalizer: a good 64-bit hash

// A small deterministic generator, so that every rank draws the same plan on any platform.
struct Rng {
  uint64_t state;
  uint64_t next() { return mix(state += 0x9e3779b97f4a7c15ull); }
  uint64_t below(uint64_t n) { return n == 0 ? 0 : next() % n; }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  bool chance(double p) { return unit() < p; }
};

enum class Kind {
  kAllreduce,
  kGrouped,
  kAllgather,
  kBroadcast,
  kAlltoall,
  kReducescatter,
  kBarrier
};
const char* kind_label(Kind kind);

// One tensor of an op (a grouped allreduce has several, every other op one).
struct Part {
  int32_t dtype = HVD_FLOAT32;
  std::vector<int64_t> shape;  // allgather / alltoall: shape[0] is per rank, see Op::rows
  std::string name;            // "" when the op is named automatically (NULL)
};

struct Op {
  uint64_t index = 0;  // position in the run; also seeds the op's data
  uint64_t batch = 0;
  Kind kind = Kind::kBarrier;
  int set_slot = 0;          // the plan's set table; slot 0 is the global set
  std::vector<int> members;  // the set's global ranks, ascending (set rank = position)
  int32_t reduce_op = HVD_OP_SUM;
  double prescale = 1.0;
  double postscale = 1.0;
  std::vector<Part> parts;
  bool auto_named = false;
  std::vector<int64_t> rows;    // allgather / alltoall: first dimension of each set rank's input
  std::vector<int32_t> splits;  // alltoall: splits[src * m + dst]; empty: even split (NULL)
  int root = 0;                 // broadcast: set rank
  bool in_place = false;        // allreduce, broadcast
  bool custom_alloc = false;    // allgather, alltoall: output from our allocator
  bool callback = false;        // on_done must fire exactly once
  uint64_t seed = 0;            // data seed: mix(run seed, index)
};

// A collective create or destroy of a process set, run between batches by every rank.
struct SetEvent {
  bool create = true;
  int slot = 0;
  std::vector<int> members;
};

struct Batch {
  uint64_t number = 0;
  std::vector<SetEvent> events;  // before the ops
  std::vector<Op> ops;
};

// The run's plan: draws batches one after the other. Identical on every rank for one seed.
class Plan {
 public:
  Plan(uint64_t seed, int size, int batch_max);
  // The sets created once at start (slots 1 ..), each {slot, members}.
  std::vector<SetEvent> static_sets() const;
  // The next batch; its ops take indexes from next_index() on, at most `remaining` of them.
  Batch next(uint64_t remaining);
  uint64_t next_index() const { return next_index_; }
  int slot_count() const { return static_cast<int>(slots_.size()); }

 private:
  struct Slot {
    std::vector<int> members;
    bool live = false;
    bool is_static = false;
  };
  void maybe_event(Batch* batch);
  int pick_set();
  Op draw_op(uint64_t batch, std::vector<std::string>* used_names);
  void draw_allreduce(Op* op);
  void draw_grouped(Op* op);
  void draw_allgather(Op* op);
  void draw_alltoall(Op* op);
  void draw_reducescatter(Op* op);
  void draw_body(Op* op, int slot);
  std::string unique_name(const Op& op, const std::string& name,
                          std::vector<std::string>* used_names);
  int64_t draw_elements(int32_t dtype, int64_t max_bytes);
  std::vector<int64_t> draw_shape(int64_t elements, bool allow_scalar);
  int32_t draw_dtype(bool allow_bool);

  Rng rng_;
  uint64_t seed_;
  int size_;
  int batch_max_;
  uint64_t next_index_ = 0;
  uint64_t batches_ = 0;
  std::vector<Slot> slots_;
  int static_slots_ = 0;
};

// "op #12 (batch 3) allreduce sum int8 [4,5] name 'soak.n7' set 2 {1,2,3} ..."; ids maps a
// set slot to the id this rank got for it.
std::string describe(const Op& op, const std::vector<int32_t>& ids);

// ---- Data (soak_data.cc) ----------------------------------------------------------------------
size_t elements_of(const std::vector<int64_t>& shape);   // product of the dims (1 for a scalar)
size_t row_elements(const std::vector<int64_t>& shape);  // product of the dims after the first
bool is_reduction(Kind kind);
// Global rank `rank`'s input elements [begin, begin + count) of part `part` into buf.
void fill_input(const Op& op, size_t part, int rank, size_t begin, size_t count, void* buf);
// got[0 .. count) against elements [begin, begin + count) of the reduction over op.members.
bool check_reduction(const Op& op, size_t part, const void* got, size_t begin, size_t count,
                     std::string* why);
// got[0 .. count) against global rank src's input elements [begin, begin + count).
bool check_copy(const Op& op, size_t part, int src, const void* got, size_t begin, size_t count,
                std::string* why);

// ---- Running a batch (soak_run.cc) -------------------------------------------------------------
// Submits this rank's ops of a batch (already filtered to its sets) in an order of its own drawn
// from order_seed, waits for each and checks it. On the first failure prints a FAIL line and
// returns false.
bool run_batch(const std::vector<const Op*>& ops, const std::vector<int32_t>& ids, int rank,
               uint64_t order_seed, const std::string& repro);

}  // namespace soak
