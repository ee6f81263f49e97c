#include "bench_options.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace hvdc_bench {

namespace {

const char* const kUsage =
    "usage: hvdc_bench [-c allreduce|allgather|broadcast] [-b MIN] [-e MAX] [-f FACTOR]\n"
    "                  [-n ITERS] [-w WARMUP] [-C 0|1] [--vs-mpi | --mpi-only] [--json FILE]\n"
    "                  [--shared] [--in-place] [--tensors K] [--name NAME]\n"
    "--shared takes every buffer from hvd_mem_alloc (the local peers map them);\n"
    "--in-place runs allreduce and broadcast with the output buffer the input;\n"
    "--tensors K gives each size K tensors (names and buffers of their own, 1-4096), which the\n"
    "ops take in turn, as a loop that averages each parameter by itself (MPI does the same)\n"
    "--name NAME names the tensors NAME (NAME.0, NAME.1, ... with --tensors), 'bench' unless\n"
    "given: a framework's names (a module path, 30-60 bytes) outgrow a string's inline storage\n"
    "--mpi-only measures Open MPI alone (hvdc is not initialised, so none of its threads run)\n"
    "sizes take K, M, G suffixes (powers of 1024); run under mpirun --bind-to none\n";

double gbps(size_t bytes, double us) {
  return us > 0 ? bytes / us / 1e3 : 0;
}

}  // namespace

bool parse_size(const char* text, size_t* out) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text) return false;
  if (*end == 'K')
    v <<= 10, ++end;
  else if (*end == 'M')
    v <<= 20, ++end;
  else if (*end == 'G')
    v <<= 30, ++end;
  *out = static_cast<size_t>(v);
  return *end == '\0' && v > 0;
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    bool ok = true;
    if (a == "--vs-mpi" || a == "--mpi-only") {
      o->vs_mpi = true;
      if (a == "--mpi-only") o->hvdc = false;
      continue;
    } else if (a == "--shared" || a == "--in-place") {
      (a == "--shared" ? o->shared : o->in_place) = true;
      continue;
    } else if (a == "--help" || a == "-h") {
      std::printf("%s", kUsage);
      return false;
    } else if (v == nullptr) {
      ok = false;
    } else if (a == "-c") {
      o->collective = v;
      ok = o->collective == "allreduce" || o->collective == "allgather" ||
           o->collective == "broadcast";
    } else if (a == "-b") {
      ok = parse_size(v, &o->min_bytes);
    } else if (a == "-e") {
      ok = parse_size(v, &o->max_bytes);
    } else if (a == "-f") {
      ok = parse_size(v, &o->factor);
    } else if (a == "-n" || a == "-w") {
      (a == "-n" ? o->iters : o->warmup) = std::atoi(v);
    } else if (a == "-C") {
      o->check = std::atoi(v) != 0;
    } else if (a == "--tensors") {
      o->tensors = std::atoi(v);
      ok = o->tensors >= 1 && o->tensors <= 4096;
    } else if (a == "--name") {
      o->name = v;
      ok = !o->name.empty();
    } else if (a == "--json") {
      o->json = v;
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "hvdc_bench: bad argument %s %s\n%s", a.c_str(), v ? v : "", kUsage);
      return false;
    }
    ++i;
  }
  return o->iters > 0 && o->warmup >= 0;
}

void report(const Options& o, int ranks, const std::vector<Line>& lines, double lat_us,
            double lat_mpi_us) {
  std::printf("# hvdc_bench %s, %d ranks, float32 sum, %d iters (+%d warm-up)%s%s%s",
              o.collective.c_str(), ranks, o.iters, o.warmup,
              o.hvdc ? "" : ", Open MPI alone (--mpi-only)",
              o.shared ? ", hvd_mem_alloc buffers" : "", o.in_place ? ", in place" : "");
  if (o.tensors > 1) std::printf(", %d tensors in turn", o.tensors);
  if (o.name != "bench") std::printf(", named '%s'", o.name.c_str());
  std::printf("\n");
  std::printf("%12s", "size(B)");
  if (o.hvdc) std::printf(" %10s %8s %8s", "time(us)", "algbw", "busbw");
  std::printf(" %7s", "#wrong");
  if (o.vs_mpi) std::printf(" %10s %8s", "mpi(us)", "mpibus");
  if (o.hvdc && o.vs_mpi) std::printf(" %7s", "ratio");
  std::printf("\n");
  for (const Line& l : lines) {
    const double alg = gbps(l.bytes, l.hvdc_us), bus = alg * l.bus_factor;
    const double mpi_bus = gbps(l.bytes, l.mpi_us) * l.bus_factor;
    std::printf("%12zu", l.bytes);
    if (o.hvdc) std::printf(" %10.1f %8.2f %8.2f", l.hvdc_us, alg, bus);
    std::printf(" %7ld", l.wrong);
    if (o.vs_mpi) std::printf(" %10.1f %8.2f", l.mpi_us, mpi_bus);
    if (o.hvdc && o.vs_mpi) std::printf(" %7.2f", mpi_bus > 0 ? bus / mpi_bus : 0);
    std::printf("\n");
  }
  if (o.hvdc) {
    std::printf("# 4 KiB allreduce round trip (async + wait): %.2f us; MPI_Allreduce: %.2f us\n",
                lat_us, lat_mpi_us);
  } else {
    std::printf("# 4 KiB MPI_Allreduce: %.2f us\n", lat_mpi_us);
  }
  if (o.json.empty()) return;
  FILE* f = std::fopen(o.json.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "hvdc_bench: cannot write %s\n", o.json.c_str());
    return;
  }
  std::fprintf(f,
               "{\"collective\": \"%s\", \"ranks\": %d, \"hvdc\": %s, \"tensors\": %d, "
               "\"latency_4k_us\": %.3f, \"latency_4k_mpi_us\": %.3f, \"rows\": [",
               o.collective.c_str(), ranks, o.hvdc ? "true" : "false", o.tensors, lat_us,
               lat_mpi_us);
  for (size_t i = 0; i < lines.size(); ++i) {
    const Line& l = lines[i];
    std::fprintf(f,
                 "%s{\"bytes\": %zu, \"time_us\": %.3f, \"busbw\": %.4f, \"wrong\": %ld, "
                 "\"mpi_time_us\": %.3f, \"mpi_busbw\": %.4f}",
                 i ? ", " : "", l.bytes, l.hvdc_us, gbps(l.bytes, l.hvdc_us) * l.bus_factor,
                 l.wrong, l.mpi_us, gbps(l.bytes, l.mpi_us) * l.bus_factor);
  }
  std::fprintf(f, "]}\n");
  std::fclose(f);
}

}  // namespace hvdc_bench
