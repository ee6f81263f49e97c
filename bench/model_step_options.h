// Command line, tensor-list loading and output of hvdc_model_step (text table, JSON with --json).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hvdc_model_step {

struct Options {
  std::string model = "resnet50";  // --model: a known name or a path to a tensor list
  std::string model_path;          // the file --model resolved to
  int steps = 20;                  // --steps: timed steps per variant
  int warmup = 3;                  // --warmup: untimed steps before them
  std::vector<std::string> variants;
  std::string json;   // --json FILE: rank 0 writes the results there
  bool check = true;  // --check / --no-check
};

// One gradient tensor, as listed in forward order in the model's file.
struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  size_t elements = 0;
};

struct Model {
  std::string name;                 // the known name, or the file stem of a path
  std::vector<TensorSpec> tensors;  // forward order; gradients become ready in reverse
  size_t total_elements = 0;
};

struct Result {
  std::string variant;
  double median_ms = 0, min_ms = 0;
  long wrong = 0;
  std::vector<double> steps_ms;  // slowest rank's time of each timed step
};

// Every variant name, in the order a default run measures them.
const std::vector<std::string>& all_variants();
// Those and the variants run on request only (limit-staged).
const std::vector<std::string>& known_variants();
bool is_mpi_variant(const std::string& variant);

// false when the arguments are not valid (or --help); with verbose, prints usage or the error
// first (only rank 0 does, so a bad command line is reported once).
bool parse(int argc, char** argv, bool verbose, Options* o);
// Reads o.model_path into *m; false with *error set when the file is unreadable, malformed or
// disagrees with its own header counts (or, for a known model, with the published counts).
bool load_model(const Options& o, Model* m, std::string* error);
// Rank 0 prints the table (and writes JSON if asked).
void report(const Options& o, const Model& m, int ranks, const std::vector<Result>& results);

}  // namespace hvdc_model_step
