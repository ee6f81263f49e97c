// Mode "local": allreduces among ranks of one host that read each other's buffers in place,
// through the public API. Heap buffers (cross-memory attach) and hvd_mem_alloc buffers (mapped),
// in place and out of place, mixed between ranks, misaligned, fused, at odd sizes. Results are
// exact (small integers). HVDC_TEST_REFUSE says who refuses the reads:
//   none    nobody: the ranks log once that they read in place, and never that they fall back;
//   rank1   rank 1 runs with HVDC_PEER_READS=0: every rank falls back, says so once, and the
//           results stay right;
//   ptrace  every rank makes itself non-dumpable and drops CAP_SYS_PTRACE: the kernel refuses
//           process_vm_readv and /proc/<pid>/fd, as under a strict ptrace policy;
//   differ  rank 1 sets another HVDC_LOCAL_MIN_BYTES: init fails on every rank, naming it.
// HVDC_TEST_KERNEL_READS=0 says that no heap op goes through the kernel (the stage takes them
// all, window by window): the ranks then log one in-place line instead of two.
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "harness.h"
#include "suites.h"

namespace hvdc_test {
namespace {

std::atomic<int> g_in_place_lines{0};
std::atomic<int> g_fallback_lines{0};

void count_lines(void*, int32_t, const char* message) {
  if (std::strstr(message, "read each other's") != nullptr) ++g_in_place_lines;
  if (std::strstr(message, "instead of reading each other's memory") != nullptr) {
    ++g_fallback_lines;
  }
  std::fprintf(stderr, "%s\n", message);
}

// Drops CAP_SYS_PTRACE (root has it, and it overrides the checks) and marks this process
// non-dumpable, which makes the kernel refuse other processes' reads of its memory.
bool refuse_like_a_strict_ptrace_policy(std::string* why) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return *why = "capget failed", false;
  for (__user_cap_data_struct& d : data) {
    if (CAP_SYS_PTRACE < 32) d.effective &= ~(1u << CAP_SYS_PTRACE);
  }
  if (syscall(SYS_capset, &header, data) != 0) return *why = "capset failed", false;
  if (prctl(PR_SET_DUMPABLE, 0) != 0) return *why = "prctl failed", false;
  return true;
}

// A float buffer of `count` elements `offset` floats into a heap or hvd_mem_alloc allocation.
struct Buffer {
  std::vector<float> heap;
  void* shared = nullptr;
  float* data = nullptr;
  Buffer(size_t count, bool is_shared, size_t offset) {
    if (is_shared) {
      if (hvd_mem_alloc((count + offset) * sizeof(float), &shared) != HVD_SUCCESS) return;
      data = static_cast<float*>(shared) + offset;
    } else {
      heap.resize(count + offset);
      data = heap.data() + offset;
    }
  }
  ~Buffer() { hvd_mem_free(shared); }
};

struct Layout {
  const char* name;
  bool shared_even, shared_odd;  // where even and odd ranks keep their buffers
  bool in_place;
  size_t offset;  // floats past the allocation's start
};

const Layout kLayouts[] = {
    {"heap-in-place", false, false, true, 0},
    {"heap-out", false, false, false, 0},
    {"shared-in-place", true, true, true, 0},
    {"shared-out", true, true, false, 0},
    {"mixed-out", true, false, false, 0},
    {"heap-misaligned-out", false, false, false, 3},
    {"shared-misaligned-in-place", true, true, true, 5},
};

float input_value(int rank, size_t i) {
  return static_cast<float>((rank + 1) * static_cast<int>(i % 7 + 1));
}

float expected(int32_t op, int n, size_t i) {
  const float unit = static_cast<float>(i % 7 + 1);
  if (op == HVD_OP_MAX) return n * unit;
  const float sum = n * (n + 1) / 2.0f * unit;
  return op == HVD_OP_AVERAGE ? sum / n : sum;
}

// Submits `tensors` allreduces of `count` floats each under one name prefix, then waits for all
// (they fuse when they fit the fusion threshold); "" or what went wrong.
std::string run_layout(const Layout& l, int32_t op, size_t count, int tensors,
                       const std::string& name) {
  const int rank = hvd_rank(), n = hvd_size();
  const bool shared = rank % 2 == 0 ? l.shared_even : l.shared_odd;
  std::vector<std::unique_ptr<Buffer>> in, out;
  std::vector<hvd_handle_t> handles(tensors, 0);
  for (int t = 0; t < tensors; ++t) {
    in.push_back(std::make_unique<Buffer>(count, shared, l.offset));
    out.push_back(l.in_place ? nullptr : std::make_unique<Buffer>(count, shared, l.offset));
    if (in[t]->data == nullptr)
      return "hvd_mem_alloc failed: " + std::string(hvd_last_error_message());
    for (size_t i = 0; i < count; ++i) in[t]->data[i] = input_value(rank, i + t);
    const std::vector<int64_t> shape = {static_cast<int64_t>(count)};  // read at submission
    hvd_tensor_t tensor = make_tensor(in[t]->data, HVD_FLOAT32, shape);
    float* dst = l.in_place ? in[t]->data : out[t]->data;
    const std::string tname = name + "." + std::to_string(t);
    hvd_status_t s = hvd_allreduce_async(&tensor, dst, op, tname.c_str(), nullptr, &handles[t]);
    if (s != HVD_SUCCESS) return "submit: " + status_text(s);
  }
  std::string problem;
  for (int t = 0; t < tensors; ++t) {
    hvd_status_t s = hvd_wait(handles[t]);
    hvd_handle_free(handles[t]);
    if (s != HVD_SUCCESS && problem.empty()) problem = "wait: " + status_text(s);
    const float* got = l.in_place ? in[t]->data : out[t]->data;
    for (size_t i = 0; i < count && problem.empty(); ++i) {
      if (got[i] != expected(op, n, i + t)) {
        problem = "tensor " + std::to_string(t) + " element " + std::to_string(i) + " is " +
                  std::to_string(got[i]) + ", want " + std::to_string(expected(op, n, i + t));
      }
      if (!l.in_place && in[t]->data[i] != input_value(rank, i + t)) problem = "input changed";
    }
  }
  return problem;
}

void test_layouts(Results& results) {
  // 256 KiB (the threshold the suite sets; on heap buffers staged), an odd count above 1 MiB
  // and 16 MiB (on heap buffers read through the kernel); and 5 fused tensors.
  const size_t counts[] = {65536, 262147, 4u << 20};
  const int32_t ops[] = {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MAX};
  for (const Layout& l : kLayouts) {
    for (size_t count : counts) {
      for (int32_t op : ops) {
        const std::string name =
            std::string("local.") + l.name + "." + std::to_string(count) + "." + std::to_string(op);
        const std::string problem = run_layout(l, op, count, 1, name);
        record(results, name, problem.empty(), problem);
      }
    }
    const std::string name = std::string("local.fused.") + l.name;
    const std::string problem = run_layout(l, HVD_OP_SUM, 60001, 5, name);
    record(results, name, problem.empty(), problem);
  }
}

// A rank that would choose the in-place path where its peers do not: refused at init, everywhere.
int expect_init_refused(int world_rank) {
  if (world_rank == 1) setenv("HVDC_LOCAL_MIN_BYTES", "1024", 1);  // the others: 262144
  const hvd_status_t s = hvd_init();
  const std::string message = hvd_last_error_message();
  const bool ok = s == HVD_ERR_INVALID_ARGUMENT &&
                  message.find("HVDC_LOCAL_MIN_BYTES differs across ranks") != std::string::npos;
  std::printf("%s local.settings-differ (rank %d): %s\n", ok ? "[ OK ]" : "[FAIL]", world_rank,
              message.c_str());
  if (s == HVD_SUCCESS) hvd_shutdown();
  return ok ? 0 : 1;
}

}  // namespace

int run_local_reads_suite() {
  const char* refuse = std::getenv("HVDC_TEST_REFUSE");
  const std::string mode = refuse != nullptr ? refuse : "none";
  const char* rank_text = std::getenv("OMPI_COMM_WORLD_RANK");
  const int world_rank = rank_text != nullptr ? std::atoi(rank_text) : 0;
  std::string why;
  if (mode == "rank1" && world_rank == 1) setenv("HVDC_PEER_READS", "0", 1);
  if (mode == "ptrace" && !refuse_like_a_strict_ptrace_policy(&why)) {
    std::fprintf(stderr, "local: cannot set up the refusal: %s\n", why.c_str());
    return 1;
  }
  if (mode == "differ") return expect_init_refused(world_rank);
  hvd_set_log_callback(count_lines, nullptr);
  if (hvd_init() != HVD_SUCCESS) {
    std::fprintf(stderr, "hvd_init failed: %s\n", hvd_last_error_message());
    return 1;
  }
  Results results;
  test_layouts(results);
  const bool refused = mode != "none";
  // Heap (through the kernel) and mapped buffers are agreed on separately: one line for each
  // kind; where every heap op goes through the stage (HVDC_TEST_KERNEL_READS=0), only mapped.
  const char* kernel_reads = std::getenv("HVDC_TEST_KERNEL_READS");
  const int kinds = kernel_reads != nullptr && std::strcmp(kernel_reads, "0") == 0 ? 1 : 2;
  const int in_place_lines = g_in_place_lines.load(), fallback_lines = g_fallback_lines.load();
  record(results, "local.logged-once",
         refused ? fallback_lines == 1 && in_place_lines == 0
                 : fallback_lines == 0 && in_place_lines == kinds,
         "mode " + mode + ": " + std::to_string(in_place_lines) + " in-place lines, " +
             std::to_string(fallback_lines) + " fallback lines");
  const int rc = finish(results, "local");
  hvd_set_log_callback(nullptr, nullptr);
  return hvd_shutdown() == HVD_SUCCESS ? rc : 1;
}

}  // namespace hvdc_test
