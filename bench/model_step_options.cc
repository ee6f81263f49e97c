#include "model_step_options.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

// Meson points this at bench/data in the source tree, so the benchmark finds its tensor lists
// from any build directory without installing them.
#ifndef HVDC_BENCH_DATA_DIR
#define HVDC_BENCH_DATA_DIR "bench/data"
#endif

namespace hvdc_model_step {

namespace {

const char* const kUsage =
    "usage: hvdc_model_step [--model resnet50|bert_base|PATH] [--steps N] [--warmup N]\n"
    "                       [--variants LIST] [--json FILE] [--check | --no-check]\n"
    "variants (comma list, default all): hvdc, hvdc-shared, hvdc-nofusion, hvdc-nocache,\n"
    "  hvdc-nofusion-nocache, mpi-allreduce, mpi-iallreduce, mpi-packed; on request only:\n"
    "  limit-staged (np 2 on one host: the heap step's fewest copies, no engine)\n"
    "  (hvdc-shared: the gradients are slices of hvd_mem_alloc buffers)\n"
    "run under mpirun --bind-to none\n";

// The published counts of the bundled lists: a truncated or edited copy must not pass for the
// real model, because the performance targets are stated for exactly these tensor sets.
struct KnownModel {
  const char* name;
  const char* file;
  size_t tensors;
  size_t elements;
};
const KnownModel kKnownModels[] = {
    {"resnet50", "resnet50_params.txt", 161, 25557032},
    {"bert_base", "bert_base_params.txt", 199, 109482240},
};

const KnownModel* find_known(const std::string& name) {
  for (const KnownModel& k : kKnownModels) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

bool parse_count(const char* text, int min_value, int* out) {
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || v < min_value || v > INT_MAX) return false;
  *out = static_cast<int>(v);
  return true;
}

bool parse_variants(const std::string& list, bool verbose, std::vector<std::string>* out) {
  out->clear();
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto& known = known_variants();
    if (std::find(known.begin(), known.end(), item) == known.end()) {
      if (verbose) std::fprintf(stderr, "hvdc_model_step: unknown variant '%s'\n", item.c_str());
      return false;
    }
    if (std::find(out->begin(), out->end(), item) == out->end()) out->push_back(item);
  }
  return !out->empty();
}

// "64x3x7x7 9408": the dimensions must multiply to the element count, or the file is corrupt.
bool parse_tensor_line(const std::string& line, TensorSpec* t, std::string* error) {
  std::istringstream in(line);
  std::string shape, extra;
  long long elements = 0;
  if (!(in >> t->name >> shape >> elements) || (in >> extra)) {
    *error = "expected 'name shape elements'";
    return false;
  }
  std::stringstream dims(shape);
  std::string dim;
  long long product = 1;
  while (std::getline(dims, dim, 'x')) {
    char* end = nullptr;
    long long d = std::strtoll(dim.c_str(), &end, 10);
    if (dim.empty() || *end != '\0' || d <= 0 || d > INT_MAX) {
      *error = "bad shape '" + shape + "'";
      return false;
    }
    t->shape.push_back(d);
    product *= d;  // both factors are <= INT_MAX, so this cannot overflow before the check
    if (product > INT_MAX) break;
  }
  // MPI counts are int, so every tensor must fit one call.
  if (elements <= 0 || elements > INT_MAX || product != elements) {
    *error = "shape " + shape + " does not give " + std::to_string(elements) + " elements";
    return false;
  }
  t->elements = static_cast<size_t>(elements);
  return true;
}

// The header's "# N tensors, E float32 elements" must agree with the lines read; for a bundled
// model the header must also be present and equal the published counts.
bool check_counts(const Options& o, const Model& m, bool have_header, size_t header_tensors,
                  size_t header_elements, std::string* error) {
  char buf[512];
  const KnownModel* known = find_known(o.model);
  if (known != nullptr &&
      (!have_header || header_tensors != known->tensors || header_elements != known->elements)) {
    std::snprintf(buf, sizeof(buf), "%s: header does not state %zu tensors, %zu elements",
                  o.model_path.c_str(), known->tensors, known->elements);
  } else if (have_header &&
             (m.tensors.size() != header_tensors || m.total_elements != header_elements)) {
    std::snprintf(
        buf, sizeof(buf), "%s: read %zu tensors, %zu elements but the header says %zu tensors, %zu",
        o.model_path.c_str(), m.tensors.size(), m.total_elements, header_tensors, header_elements);
  } else if (m.tensors.empty() || m.total_elements > static_cast<size_t>(INT_MAX)) {
    // mpi-packed reduces everything in one call, whose count is an int.
    std::snprintf(buf, sizeof(buf), "%s: %zu tensors, %zu elements (need 1..INT_MAX elements)",
                  o.model_path.c_str(), m.tensors.size(), m.total_elements);
  } else {
    return true;
  }
  *error = buf;
  return false;
}

// A path shows as its file stem ("/x/gpt2_params.txt" -> "gpt2") so the table stays aligned.
std::string display_name(const std::string& model) {
  std::string name = model.substr(model.find_last_of('/') + 1);
  for (const char* suffix : {"_params.txt", ".txt"}) {
    const size_t len = std::strlen(suffix);
    if (name.size() > len && name.compare(name.size() - len, len, suffix) == 0) {
      name.resize(name.size() - len);
      break;
    }
  }
  return name;
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

double best_mpi_median(const std::vector<Result>& results) {
  double best = 0;
  for (const Result& r : results) {
    if (is_mpi_variant(r.variant) && (best == 0 || r.median_ms < best)) best = r.median_ms;
  }
  return best;
}

void write_json(const Options& o, const Model& m, int ranks, const std::vector<Result>& results) {
  FILE* f = std::fopen(o.json.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "hvdc_model_step: cannot write %s\n", o.json.c_str());
    return;
  }
  const double best = best_mpi_median(results);
  std::fprintf(f,
               "{\"model\": \"%s\", \"np\": %d, \"tensors\": %zu, \"elements\": %zu, "
               "\"steps\": %d, \"warmup\": %d, \"best_mpi_median_ms\": %.4f, \"variants\": [",
               json_escape(m.name).c_str(), ranks, m.tensors.size(), m.total_elements, o.steps,
               o.warmup, best);
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    std::fprintf(f,
                 "%s\n  {\"variant\": \"%s\", \"median_ms\": %.4f, \"min_ms\": %.4f, "
                 "\"ratio_to_best_mpi\": %.4f, \"wrong\": %ld, \"steps_ms\": [",
                 i ? "," : "", r.variant.c_str(), r.median_ms, r.min_ms,
                 best > 0 ? r.median_ms / best : 0.0, r.wrong);
    for (size_t s = 0; s < r.steps_ms.size(); ++s) {
      std::fprintf(f, "%s%.4f", s ? ", " : "", r.steps_ms[s]);
    }
    std::fprintf(f, "]}");
  }
  std::fprintf(f, "\n]}\n");
  std::fclose(f);
}

}  // namespace

const std::vector<std::string>& all_variants() {
  static const std::vector<std::string> kAll = {
      "hvdc",          "hvdc-shared",    "hvdc-nofusion", "hvdc-nocache", "hvdc-nofusion-nocache",
      "mpi-allreduce", "mpi-iallreduce", "mpi-packed"};
  return kAll;
}

const std::vector<std::string>& known_variants() {
  static const std::vector<std::string> kKnown = [] {
    std::vector<std::string> known = all_variants();
    known.push_back("limit-staged");  // np 2 on one host only
    return known;
  }();
  return kKnown;
}

bool is_mpi_variant(const std::string& variant) {
  return variant.compare(0, 4, "mpi-") == 0;
}

bool parse(int argc, char** argv, bool verbose, Options* o) {
  o->variants = all_variants();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    bool ok = true;
    if (a == "--check" || a == "--no-check") {
      o->check = a == "--check";
      continue;
    } else if (a == "--help" || a == "-h") {
      if (verbose) std::printf("%s", kUsage);
      return false;
    } else if (v == nullptr) {
      ok = false;
    } else if (a == "--model") {
      o->model = v;
    } else if (a == "--steps") {
      ok = parse_count(v, 1, &o->steps);
    } else if (a == "--warmup") {
      ok = parse_count(v, 0, &o->warmup);
    } else if (a == "--variants") {
      ok = parse_variants(v, verbose, &o->variants);
    } else if (a == "--json") {
      o->json = v;
    } else {
      ok = false;
    }
    if (!ok) {
      if (verbose) {
        std::fprintf(stderr, "hvdc_model_step: bad argument %s %s\n%s", a.c_str(), v ? v : "",
                     kUsage);
      }
      return false;
    }
    ++i;
  }
  const KnownModel* known = find_known(o->model);
  o->model_path = known ? std::string(HVDC_BENCH_DATA_DIR) + "/" + known->file : o->model;
  return true;
}

bool load_model(const Options& o, Model* m, std::string* error) {
  std::ifstream in(o.model_path);
  if (!in) {
    *error = "cannot open " + o.model_path;
    return false;
  }
  m->name = display_name(o.model);
  size_t header_tensors = 0, header_elements = 0;
  bool have_header = false;
  std::set<std::string> names;  // hvdc matches tensors across ranks by name: they must be unique
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (std::sscanf(line.c_str(), "# %zu tensors, %zu float32", &header_tensors,
                      &header_elements) == 2) {
        have_header = true;
      }
      continue;
    }
    TensorSpec t;
    std::string why;
    if (!parse_tensor_line(line, &t, &why) || !names.insert(t.name).second) {
      if (why.empty()) why = "duplicate tensor name " + t.name;
      *error = o.model_path + ":" + std::to_string(lineno) + ": " + why;
      return false;
    }
    m->total_elements += t.elements;
    m->tensors.push_back(std::move(t));
  }
  return check_counts(o, *m, have_header, header_tensors, header_elements, error);
}

void report(const Options& o, const Model& m, int ranks, const std::vector<Result>& results) {
  std::printf(
      "# hvdc_model_step %s: %zu tensors, %zu float32 elements (%.1f MB), np %d, "
      "%d steps (+%d warm-up)\n",
      m.name.c_str(), m.tensors.size(), m.total_elements, m.total_elements * 4 / 1e6, ranks,
      o.steps, o.warmup);
  std::printf(
      "# step time = slowest rank; ratio = median / best MPI variant's median "
      "(< 1: faster)\n");
  std::printf("%-10s %4s %-22s %10s %10s %7s %8s\n", "model", "np", "variant", "median(ms)",
              "min(ms)", "ratio", "#wrong");
  const double best = best_mpi_median(results);
  for (const Result& r : results) {
    std::printf("%-10s %4d %-22s %10.2f %10.2f ", m.name.c_str(), ranks, r.variant.c_str(),
                r.median_ms, r.min_ms);
    if (best > 0) {
      std::printf("%7.2f", r.median_ms / best);
    } else {
      std::printf("%7s", "-");
    }
    std::printf(" %8ld\n", r.wrong);
  }
  if (!o.json.empty()) write_json(o, m, ranks, results);
}

}  // namespace hvdc_model_step
