// hvdc_bench: an nccl-tests-style sweep of hvdc collectives, optionally beside Open MPI's on the
// same buffers in the same run. Run under mpirun:
//   mpirun -np 2 --bind-to none build/bench/hvdc_bench -c allreduce -b 4K -e 64M -f 4 --vs-mpi
// Columns: size (bytes per rank), time (us, slowest rank's mean), algbw and busbw (GB/s, 1e9),
// #wrong (elements off the expected value). busbw = algbw * 2(n-1)/n for allreduce,
// (n-1)/n for allgather, 1 for broadcast.
#include <hvdc.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench_options.h"

namespace {

using hvdc_bench::Options;

// A float buffer on the heap, or (--shared) from hvd_mem_alloc.
class Buffer {
 public:
  Buffer(size_t count, bool shared) : count_(count), shared_(shared) {
    if (!shared) {
      heap_.resize(count);
      data_ = heap_.data();
      return;
    }
    void* p = nullptr;
    if (hvd_mem_alloc(count * sizeof(float), &p) != HVD_SUCCESS) {
      std::fprintf(stderr, "hvd_mem_alloc: %s\n", hvd_last_error_message());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    data_ = static_cast<float*>(p);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (shared_) hvd_mem_free(data_);
  }
  float* data() { return data_; }
  size_t size() const { return count_; }
  float* begin() { return data_; }
  float* end() { return data_ + count_; }
  float operator[](size_t i) const { return data_[i]; }

 private:
  size_t count_;
  bool shared_;
  std::vector<float> heap_;
  float* data_ = nullptr;
};

// The tensors of one size (--tensors), each with its input, its output (the input itself in
// place) and its name; the ops take them in turn.
struct Tensors {
  std::vector<std::unique_ptr<Buffer>> in, out;
  std::vector<std::string> names;
  size_t next = 0;  // the tensor the next op takes
  size_t last = 0;  // the one the last op took

  Tensors(const Options& o, size_t count, size_t out_count) {
    const bool in_place = o.in_place && o.collective != "allgather";
    for (int t = 0; t < o.tensors; ++t) {
      in.push_back(std::make_unique<Buffer>(count, o.shared));
      if (!in_place) out.push_back(std::make_unique<Buffer>(out_count, o.shared));
      names.push_back(o.tensors == 1 ? o.name : o.name + "." + std::to_string(t));
    }
  }
  Buffer& input(size_t t) { return *in[t]; }
  Buffer& output(size_t t) { return out.empty() ? *in[t] : *out[t]; }
  bool in_place() const { return out.empty(); }
  size_t take() {
    last = next;
    next = (next + 1) % in.size();
    return last;
  }
  void fill_inputs(int rank);
};

struct Row {
  size_t bytes;
  double hvdc_us, mpi_us;
  long wrong;
};

double now_us() {
  return MPI_Wtime() * 1e6;
}

// Fills inputs with rank + 1 so every result is exact: sum = n(n+1)/2, gathered block r = r+1.
void fill(Buffer& v, int rank) {
  for (float& x : v) x = static_cast<float>(rank + 1);
}

void Tensors::fill_inputs(int rank) {
  for (auto& b : in) fill(*b, rank);
}

long count_wrong(const Options& o, const Buffer& out, size_t count, int n) {
  long wrong = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    float want = o.collective == "allreduce"   ? n * (n + 1) / 2.0f
                 : o.collective == "allgather" ? static_cast<float>(i / count + 1)
                                               : 1.0f;  // broadcast from rank 0
    wrong += out[i] != want;
  }
  return wrong;
}

// Gathers straight into the benchmark's buffer, as a framework would into its own tensor.
void* into_out(void* user, const hvd_tensor_t*, size_t) {
  return static_cast<Buffer*>(user)->data();
}

hvd_status_t run_hvdc(const Options& o, Buffer& in, Buffer& out, size_t count, const char* name) {
  int64_t shape[1] = {static_cast<int64_t>(count)};
  hvd_tensor_t t = {in.data(), HVD_FLOAT32, 1, shape, {HVD_DEVICE_CPU, 0}};
  hvd_handle_t h = 0;
  hvd_status_t s;
  if (o.collective == "allgather") {
    hvd_op_args_t args;
    hvd_op_args_init(&args, sizeof(args));
    args.alloc = into_out;
    args.alloc_user_data = &out;
    s = hvd_allgather_async(&t, name, &args, &h);
  } else if (o.collective == "broadcast") {
    s = hvd_broadcast_async(&t, out.data(), 0, name, nullptr, &h);
  } else {
    s = hvd_allreduce_async(&t, out.data(), HVD_OP_SUM, name, nullptr, &h);
  }
  if (s == HVD_SUCCESS) s = hvd_wait(h);
  if (h) hvd_handle_free(h);
  return s;
}

void run_mpi(const Options& o, Buffer& in, Buffer& out, size_t count) {
  const int c = static_cast<int>(count);
  if (o.collective == "allgather") {
    MPI_Allgather(in.data(), c, MPI_FLOAT, out.data(), c, MPI_FLOAT, MPI_COMM_WORLD);
  } else if (o.collective == "broadcast") {
    if (&in != &out) std::memcpy(out.data(), in.data(), count * sizeof(float));
    MPI_Bcast(out.data(), c, MPI_FLOAT, 0, MPI_COMM_WORLD);
  } else {
    const void* src = &in == &out ? MPI_IN_PLACE : in.data();
    MPI_Allreduce(src, out.data(), c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
}

// Mean time per op over o.iters after o.warmup, the slowest rank's.
template <typename Op>
double time_op(const Options& o, Op op) {
  for (int i = 0; i < o.warmup; ++i) op();
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = now_us();
  for (int i = 0; i < o.iters; ++i) op();
  double mine = (now_us() - start) / o.iters, slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

// Times hvdc's collective over the tensors in turn, then checks one fresh op.
double measure_hvdc(const Options& o, Tensors& ts, size_t count, int rank, int n, long* wrong) {
  hvd_status_t failed = HVD_SUCCESS;
  auto op = [&] {
    const size_t t = ts.take();
    hvd_status_t s = run_hvdc(o, ts.input(t), ts.output(t), count, ts.names[t].c_str());
    if (s != HVD_SUCCESS) failed = s;
  };
  const double us = time_op(o, op);
  if (ts.in_place()) ts.fill_inputs(rank);  // in place, every op changed its input
  if (o.check) op();
  if (failed != HVD_SUCCESS) {
    std::fprintf(stderr, "hvdc %s failed: %s\n", o.collective.c_str(), hvd_last_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (o.check) *wrong += count_wrong(o, ts.output(ts.last), count, n);
  return us;
}

double measure_mpi(const Options& o, Tensors& ts, size_t count, int rank, int n, long* wrong) {
  for (size_t t = 0; t < ts.in.size(); ++t) {
    Buffer& dst = ts.output(t);
    std::fill(dst.begin(), dst.end(), 0.0f);  // hvdc's results must not pass for MPI's
  }
  ts.fill_inputs(rank);
  auto op = [&] {
    const size_t t = ts.take();
    run_mpi(o, ts.input(t), ts.output(t), count);
  };
  const double us = time_op(o, op);
  if (ts.in_place()) ts.fill_inputs(rank);
  if (o.check) op();
  if (o.check) *wrong += count_wrong(o, ts.output(ts.last), count, n);
  return us;
}

Row measure(const Options& o, size_t bytes, int rank, int n) {
  const size_t count = std::max<size_t>(1, bytes / sizeof(float));
  const size_t out_count = o.collective == "allgather" ? count * n : count;
  Tensors ts(o, count, out_count);  // in place, each output is its input (allreduce, broadcast)
  ts.fill_inputs(rank);
  Row row{count * sizeof(float), 0, 0, 0};
  if (o.hvdc) row.hvdc_us = measure_hvdc(o, ts, count, rank, n, &row.wrong);
  if (o.vs_mpi) row.mpi_us = measure_mpi(o, ts, count, rank, n, &row.wrong);
  long total_wrong = 0;
  MPI_Allreduce(&row.wrong, &total_wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  row.wrong = total_wrong;
  return row;
}

double bus_factor(const std::string& collective, int n) {
  if (collective == "allreduce") return 2.0 * (n - 1) / n;
  if (collective == "allgather") return static_cast<double>(n - 1) / n;
  return 1.0;
}

// The 4 KiB allreduce through hvd_allreduce_async + hvd_wait: the small-message target.
Row latency_4k(const Options& o, int rank, int n) {
  Options l = o;
  l.collective = "allreduce";
  l.iters = std::max(o.iters, 2000);
  l.warmup = std::max(o.warmup, 200);
  l.vs_mpi = true;
  return measure(l, 4096, rank, n);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);  // hvdc then reuses MPI and leaves it to us to finalize
  Options o;
  if (!hvdc_bench::parse(argc, argv, &o)) {
    MPI_Finalize();
    return 2;
  }
  if (o.hvdc && hvd_init() != HVD_SUCCESS) {
    std::fprintf(stderr, "hvd_init: %s\n", hvd_last_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  std::vector<hvdc_bench::Line> lines;
  long wrong = 0;
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
    Row r = measure(o, bytes, rank, n);
    lines.push_back({r.bytes, r.hvdc_us, r.mpi_us, r.wrong, bus_factor(o.collective, n)});
    wrong += r.wrong;
    if (o.factor < 2) break;
  }
  const Row lat = latency_4k(o, rank, n);
  if (rank == 0) hvdc_bench::report(o, n, lines, lat.hvdc_us, lat.mpi_us);
  if (o.hvdc) hvd_shutdown();
  MPI_Finalize();
  return wrong == 0 ? 0 : 1;  // a wrong result fails the run, whatever the speed
}
