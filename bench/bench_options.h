// Command line and output of hvdc_bench (text table, and JSON with --json FILE).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace hvdc_bench {

struct Options {
  std::string collective = "allreduce";  // -c: allreduce, allgather, broadcast
  size_t min_bytes = 4096;               // -b
  size_t max_bytes = 64u << 20;          // -e
  size_t factor = 4;                     // -f
  int iters = 20;                        // -n
  int warmup = 5;                        // -w
  bool check = true;                     // -C 0|1
  bool vs_mpi = false;                   // --vs-mpi
  bool hvdc = true;                      // --mpi-only clears it: MPI alone, hvdc never started
  bool shared = false;                   // --shared: buffers from hvd_mem_alloc
  bool in_place = false;                 // --in-place: allreduce and broadcast into the input
  int tensors = 1;             // --tensors K: K tensors of each size, ops take them in turn
  std::string name = "bench";  // --name NAME: the tensors' name (NAME.<t> with --tensors)
  std::string json;            // --json FILE
};

struct Line {
  size_t bytes;
  double hvdc_us, mpi_us;
  long wrong;
  double bus_factor;
};

// "64K", "4M", "1G" (powers of 1024) or plain bytes; false unless a whole positive size.
bool parse_size(const char* text, size_t* out);
// false (after printing usage or the error) when the arguments are not valid.
bool parse(int argc, char** argv, Options* o);
// Rank 0 prints the table (and writes JSON if asked).
void report(const Options& o, int ranks, const std::vector<Line>& lines, double lat_us,
            double lat_mpi_us);

}  // namespace hvdc_bench
