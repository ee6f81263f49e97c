// Helpers shared by the process-set tests (test_process_sets.cc, test_process_set_collectives.cc,
// test_process_sets_static.cc): a set as one rank sees it, checks of the set queries and of calls
// that must fail at once, and batches of allreduces over several sets checked against the
// expected sums.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness.h"

namespace hvdc_test {

using Ranks = std::vector<int32_t>;

constexpr hvd_handle_t kSentinelHandle = 0x5e75;
constexpr int32_t kSentinel = -777;
constexpr int32_t kUnknownId = 999999;

// A set as this rank sees it.
struct SetView {
  int32_t id = -1;
  Ranks members;   // ascending global ranks
  int index = -1;  // this rank's rank in the set, -1 if not a member
  int size() const { return static_cast<int>(members.size()); }
  bool member() const { return index >= 0; }
};

// Set `id` with `members` (in any order).
SetView view_of(int32_t id, Ranks members);
std::string set_text(int32_t id);               // "process set <id>"
std::string list_text(const Ranks& r);          // "[a, b, ...]"
Ranks iota_ranks(int32_t first, int32_t last);  // [first, last]
hvd_op_args_t args_for(int32_t set);

// Waits for and frees the handle of a submitting call that returned `s`.
hvd_status_t wait_free(hvd_status_t s, const hvd_handle_t* h);
// Polls a handle for up to `seconds`; false if the op has not ended by then.
bool wait_deadline(hvd_handle_t h, double seconds, hvd_status_t* status);
// A submitting call failed at once with `want`, left *h (kSentinelHandle) alone and named
// `needle` in its message; otherwise false, with the first problem in *why.
bool expect_rejected(hvd_status_t s, const hvd_handle_t* h, hvd_status_t want,
                     const std::string& needle, const std::string& what, std::string* why);
// The same for calls without a handle. An empty needle asks only for a non-empty message.
bool expect_status(hvd_status_t s, hvd_status_t want, const std::string& needle,
                   const std::string& what, std::string* why);
// Every collective type on set `id` fails at the call with HVD_ERR_INVALID_ARGUMENT naming
// `needle`.
bool rejected_everywhere(int32_t id, const std::string& needle, const std::string& prefix,
                         std::string* why);

// ---- Queries --------------------------------------------------------------------------------

Ranks query_ids(hvd_status_t* status);
Ranks query_ranks(int32_t id, hvd_status_t* status);
// Every query of set v on this rank agrees with v.
bool check_queries(const SetView& v, std::string* why);
// Every query of a set that does not exist fails naming the id and writes nothing.
bool check_unknown_queries(int32_t id, std::string* why);
bool ids_are(const Ranks& want, std::string* why);

// ---- Allreduce batches ----------------------------------------------------------------------

// Rank g's element i of an allreduce with `salt`: small integers, so sums are exact in float32.
float input_value(int g, size_t i, int salt);
bool close_to(double got, double want);

struct ReduceOp {
  std::string name;
  SetView set;
  size_t count = 0;
  int32_t reduce = HVD_OP_SUM;
  int salt = 0;
  std::vector<float> buf;
  std::vector<int64_t> shape;
  hvd_handle_t handle = 0;
};

// Appends an allreduce of `set` if this rank is one of its members.
void add_op(std::vector<ReduceOp>* ops, const SetView& set, const std::string& name, size_t count,
            int32_t reduce, int salt);
hvd_status_t submit(ReduceOp* op);
bool check(const ReduceOp& op, std::string* why);
// Submits every op in an order shuffled by `seed`, waits for all, checks every result.
bool run_ops(std::vector<ReduceOp>* ops, unsigned seed, std::string* why);
bool run_one(const SetView& set, const std::string& name, size_t count, int32_t reduce, int salt,
             std::string* why);

// ---- Case groups (test_process_set_collectives.cc) ------------------------------------------

// Every collective on set v with set-relative semantics; non-members record passes.
void test_set_collectives(Results& results, const SetView& v, const std::string& label);
// Every collective on set v fails at the call on a non-member.
void test_non_member(Results& results, const SetView& v, const std::string& label);

}  // namespace hvdc_test
