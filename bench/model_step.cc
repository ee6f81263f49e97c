// hvdc_model_step: the gradient allreduces of one training step of a real model (ResNet-50 or
// BERT-base), submitted in backward order the way a framework would as gradients become ready.
// hvdc, in several engine configurations, runs beside three Open MPI variants on the same
// per-tensor buffers in the same run, so each ratio compares like with like. Run under mpirun:
//   mpirun -np 2 --bind-to none build/bench/hvdc_model_step --model resnet50 --steps 20
// Step time is the slowest rank's; the table gives the median and minimum over timed steps and
// the median's ratio to the best MPI variant's median.
#include <hvdc.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "model_step_limit.h"
#include "model_step_options.h"

namespace {

using hvdc_model_step::Model;
using hvdc_model_step::Options;
using hvdc_model_step::Result;
using hvdc_model_step::StagedLimit;

// One input and one output view per tensor: the storage a variant reduces. Results are written
// out of place so the inputs keep their known values across steps and variants.
struct Views {
  std::vector<float*> in, out;
  std::vector<hvd_tensor_t> descs;  // hvdc's view of in[i]
};

// Heap buffers, one per tensor, allocated once and shared by every variant but hvdc-shared, so
// they all pay the same page and cache placement. hvdc-shared has the framework's other
// layout: every gradient a slice of one flat buffer, here from hvd_mem_alloc (docs/memory.md).
struct Buffers {
  std::vector<std::vector<float>> heap_in, heap_out;
  Views heap, shared;
  void* shared_in = nullptr;
  void* shared_out = nullptr;
  std::vector<float> packed;          // mpi-packed's contiguous buffer (only if that variant runs)
  std::vector<hvd_handle_t> handles;  // one per tensor, in submission (backward) order
  std::vector<MPI_Request> requests;
};

// The engine knobs each hvdc variant sets before hvd_init; "on" leaves the library default.
// shared: the variant reduces Buffers::shared instead of Buffers::heap.
struct HvdcConfig {
  const char* variant;
  bool fusion, cache, shared;
};
const HvdcConfig kHvdcConfigs[] = {{"hvdc", true, true, false},
                                   {"hvdc-shared", true, true, true},
                                   {"hvdc-nofusion", false, true, false},
                                   {"hvdc-nocache", true, false, false},
                                   {"hvdc-nofusion-nocache", false, false, false}};

// limit-staged groups the tensors as hvdc's default fusion threshold does (2 MiB).
constexpr size_t kLimitFusionBytes = size_t{2} << 20;

int g_rank = 0;

[[noreturn]] void fail(const char* what, hvd_status_t s) {
  std::fprintf(stderr, "hvdc_model_step rank %d: %s: %s (%s)\n", g_rank, what, hvd_status_string(s),
               hvd_last_error_message());
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return, but it is not declared noreturn
}

void add_view(const Model& m, size_t i, float* in, float* out, Views* v) {
  const auto& shape = m.tensors[i].shape;
  v->in.push_back(in);
  v->out.push_back(out);
  v->descs.push_back(
      {in, HVD_FLOAT32, static_cast<int32_t>(shape.size()), shape.data(), {HVD_DEVICE_CPU, 0}});
}

// Each tensor starts on a 64-byte boundary of the flat buffers, as a framework's allocator
// would place it.
size_t padded_elements(size_t elements) {
  return (elements + 15) / 16 * 16;
}

void allocate_shared(const Model& m, int rank, Buffers* b) {
  size_t total = 0;
  for (const auto& t : m.tensors) total += padded_elements(t.elements);
  hvd_status_t s = hvd_mem_alloc(total * sizeof(float), &b->shared_in);
  if (s == HVD_SUCCESS) s = hvd_mem_alloc(total * sizeof(float), &b->shared_out);
  if (s != HVD_SUCCESS) fail("hvd_mem_alloc", s);
  float* in = static_cast<float*>(b->shared_in);
  float* out = static_cast<float*>(b->shared_out);
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    std::fill(in, in + m.tensors[i].elements, static_cast<float>(rank + 1));
    add_view(m, i, in, out, &b->shared);
    in += padded_elements(m.tensors[i].elements);
    out += padded_elements(m.tensors[i].elements);
  }
}

bool runs(const Options& o, const char* variant) {
  return std::find(o.variants.begin(), o.variants.end(), variant) != o.variants.end();
}

// Inputs are rank + 1 so the float32 SUM is exactly n(n+1)/2 and any wrong element shows.
void allocate(const Options& o, const Model& m, int rank, Buffers* b) {
  const size_t count = m.tensors.size();
  b->heap_in.reserve(count);
  b->heap_out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    b->heap_in.emplace_back(m.tensors[i].elements, static_cast<float>(rank + 1));
    b->heap_out.emplace_back(m.tensors[i].elements, 0.0f);
    add_view(m, i, b->heap_in.back().data(), b->heap_out.back().data(), &b->heap);
  }
  if (runs(o, "hvdc-shared")) allocate_shared(m, rank, b);
  b->handles.assign(count, 0);
  b->requests.assign(count, MPI_REQUEST_NULL);
  if (runs(o, "mpi-packed")) b->packed.resize(m.total_elements);
}

void release(Buffers* b) {
  hvd_mem_free(b->shared_in);
  hvd_mem_free(b->shared_out);
}

// Inputs are checked too: an allreduce that scribbles on its input would otherwise surface as
// a wrong result in whichever variant runs next.
long count_wrong(const Model& m, const Views& v, int rank, int n) {
  const float sum = n * (n + 1) / 2.0f, mine = static_cast<float>(rank + 1);
  long wrong = 0;
  for (size_t i = 0; i < v.out.size(); ++i) {
    for (size_t e = 0; e < m.tensors[i].elements; ++e) {
      wrong += v.out[i][e] != sum;
      wrong += v.in[i][e] != mine;
    }
  }
  return wrong;
}

// Every tensor under its own name, last layer first, then one wait for all: a framework's
// backward pass, where the engine is free to negotiate, fuse and overlap.
void hvdc_step(const Model& m, const Views& v, Buffers& b) {
  const size_t count = m.tensors.size();
  for (size_t k = 0; k < count; ++k) {
    const size_t i = count - 1 - k;
    hvd_status_t s = hvd_allreduce_async(&v.descs[i], v.out[i], HVD_OP_SUM,
                                         m.tensors[i].name.c_str(), nullptr, &b.handles[k]);
    if (s != HVD_SUCCESS) fail("hvd_allreduce_async", s);
  }
  hvd_status_t s = hvd_wait_all(b.handles.data(), count);
  if (s != HVD_SUCCESS) fail("hvd_wait_all", s);
  for (hvd_handle_t h : b.handles) hvd_handle_free(h);
}

void mpi_allreduce_step(const Model& m, const Views& v) {
  for (size_t i = m.tensors.size(); i-- > 0;) {
    MPI_Allreduce(v.in[i], v.out[i], static_cast<int>(m.tensors[i].elements), MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
  }
}

void mpi_iallreduce_step(const Model& m, const Views& v, Buffers& b) {
  const size_t count = m.tensors.size();
  for (size_t k = 0; k < count; ++k) {
    const size_t i = count - 1 - k;
    MPI_Iallreduce(v.in[i], v.out[i], static_cast<int>(m.tensors[i].elements), MPI_FLOAT, MPI_SUM,
                   MPI_COMM_WORLD, &b.requests[k]);
  }
  MPI_Waitall(static_cast<int>(count), b.requests.data(), MPI_STATUSES_IGNORE);
}

// Fusion done by hand: the two copies are timed because a framework would pay them too.
void mpi_packed_step(const Model& m, const Views& v, Buffers& b) {
  size_t offset = 0;
  for (size_t i = m.tensors.size(); i-- > 0;) {
    std::memcpy(b.packed.data() + offset, v.in[i], m.tensors[i].elements * sizeof(float));
    offset += m.tensors[i].elements;
  }
  MPI_Allreduce(MPI_IN_PLACE, b.packed.data(), static_cast<int>(offset), MPI_FLOAT, MPI_SUM,
                MPI_COMM_WORLD);
  offset = 0;
  for (size_t i = m.tensors.size(); i-- > 0;) {
    std::memcpy(v.out[i], b.packed.data() + offset, m.tensors[i].elements * sizeof(float));
    offset += m.tensors[i].elements;
  }
}

void summarize(std::vector<double> slowest, Result* r) {
  r->steps_ms = slowest;
  std::sort(slowest.begin(), slowest.end());
  const size_t s = slowest.size();
  r->median_ms = s % 2 ? slowest[s / 2] : (slowest[s / 2 - 1] + slowest[s / 2]) / 2;
  r->min_ms = slowest.front();
}

// Warm-up, then each timed step behind a barrier so all ranks start it together. The per-rank
// times are combined once after the loop so no extra collective runs between steps.
template <typename Step>
Result run_variant(const Options& o, const std::string& name, const Model& m, const Views& v,
                   int rank, int n, Step step) {
  // Stale results from the previous variant must not pass this one's check.
  for (size_t i = 0; i < v.out.size(); ++i)
    std::fill(v.out[i], v.out[i] + m.tensors[i].elements, 0.0f);
  for (int i = 0; i < o.warmup; ++i) step();
  std::vector<double> local(o.steps), slowest(o.steps);
  for (int i = 0; i < o.steps; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    step();
    local[i] = (MPI_Wtime() - start) * 1e3;
  }
  MPI_Allreduce(local.data(), slowest.data(), o.steps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  Result r;
  r.variant = name;
  summarize(slowest, &r);
  long wrong = o.check ? count_wrong(m, v, rank, n) : 0;
  MPI_Allreduce(&wrong, &r.wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  return r;
}

// hvdc reads its knobs at hvd_init, so each configuration gets a fresh engine; the MPI the
// benchmark initialised stays up across the re-inits.
void set_knob(const char* name, bool on) {
  if (on) {
    unsetenv(name);
  } else {
    setenv(name, "0", 1);
  }
}

Result run_hvdc(const Options& o, const HvdcConfig& c, const Model& m, Buffers& b, int rank,
                int n) {
  set_knob("HVDC_FUSION_THRESHOLD", c.fusion);
  set_knob("HVDC_CACHE_CAPACITY", c.cache);
  hvd_status_t s = hvd_init();
  if (s != HVD_SUCCESS) fail("hvd_init", s);
  if (hvd_rank() != rank || hvd_size() != n) {
    std::fprintf(stderr, "hvdc_model_step: hvdc rank %d of %d, MPI rank %d of %d\n", hvd_rank(),
                 hvd_size(), rank, n);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const Views& v = c.shared ? b.shared : b.heap;
  Result r = run_variant(o, c.variant, m, v, rank, n, [&] { hvdc_step(m, v, b); });
  s = hvd_shutdown();
  if (s != HVD_SUCCESS) fail("hvd_shutdown", s);
  return r;
}

Result run_named(const Options& o, const std::string& name, const Model& m, Buffers& b, int rank,
                 int n) {
  for (const HvdcConfig& c : kHvdcConfigs) {
    if (name == c.variant) return run_hvdc(o, c, m, b, rank, n);
  }
  if (name == "limit-staged") {
    StagedLimit limit;
    std::string error;
    if (!limit.open(m, kLimitFusionBytes, &error)) {
      if (rank == 0) std::fprintf(stderr, "hvdc_model_step: %s\n", error.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return run_variant(o, name, m, b.heap, rank, n, [&] { limit.step(b.heap.in, b.heap.out); });
  }
  if (name == "mpi-allreduce") {
    return run_variant(o, name, m, b.heap, rank, n, [&] { mpi_allreduce_step(m, b.heap); });
  }
  if (name == "mpi-iallreduce") {
    return run_variant(o, name, m, b.heap, rank, n, [&] { mpi_iallreduce_step(m, b.heap, b); });
  }
  return run_variant(o, name, m, b.heap, rank, n, [&] { mpi_packed_step(m, b.heap, b); });
}

}  // namespace

int main(int argc, char** argv) {
  // MPI first: hvdc then reuses it (and leaves it up at hvd_shutdown), which is what lets the
  // benchmark re-initialise hvdc per configuration. We finalize it.
  MPI_Init(&argc, &argv);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  g_rank = rank;
  Options o;
  if (!hvdc_model_step::parse(argc, argv, rank == 0, &o)) {
    MPI_Finalize();
    return 2;
  }
  Model m;
  std::string error;
  if (!hvdc_model_step::load_model(o, &m, &error)) {
    // Every rank reads the same file, so every rank fails here together.
    if (rank == 0) std::fprintf(stderr, "hvdc_model_step: %s\n", error.c_str());
    MPI_Finalize();
    return 1;
  }
  Buffers b;
  allocate(o, m, rank, &b);
  std::vector<Result> results;
  long wrong = 0;
  for (const std::string& v : o.variants) {
    results.push_back(run_named(o, v, m, b, rank, n));
    wrong += results.back().wrong;
  }
  release(&b);
  if (rank == 0) hvdc_model_step::report(o, m, n, results);
  if (rank == 0 && wrong != 0) {
    std::fprintf(stderr, "hvdc_model_step: FAILED: %ld wrong elements\n", wrong);
  }
  MPI_Finalize();
  return wrong == 0 ? 0 : 1;  // a wrong result fails the run, whatever the speed
}
