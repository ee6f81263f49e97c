#include "bootstrap/discovery.h"

#include <string>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "common/parse.h"

namespace hvdc::bootstrap {

using common::make_error;
using common::Status;
using common::strfmt;

namespace {

constexpr char kTorchrun[] = "torchrun";
constexpr int kMaxPort = 65535;

// Normal Slurm step ids are below this; the batch script, the extern container, the interactive
// step and pending steps use ids above it (slurm.h, SLURM_MAX_NORMAL_STEP_ID). Older releases used
// 0xfffffffe and 0xffffffff for the batch and extern steps, also above it.
constexpr long long kSlurmMaxNormalStepId = 0xfffffff0LL;

// The lookup, with empty values read as unset (`export HVDC_RANK=` is how scripts clear one).
class Env {
 public:
  explicit Env(const EnvLookup& lookup) : lookup_(lookup) {}
  const char* get(const char* name) const {
    const char* v = lookup_ ? lookup_(name) : nullptr;
    return (v != nullptr && v[0] != '\0') ? v : nullptr;
  }
  bool has(const char* name) const { return get(name) != nullptr; }

 private:
  const EnvLookup& lookup_;
};

Status parse_int(const char* name, const char* value, long long lo, long long hi, long long* out) {
  if (common::parse_decimal(value, lo, hi, out)) return Status::ok();
  return make_error(HVD_ERR_INVALID_ARGUMENT,
                    "%s='%s' is invalid: expected an integer from %lld to %lld", name, value, lo,
                    hi);
}

Status parse_int(const char* name, const char* value, long long lo, long long hi, int* out) {
  long long v = 0;
  HVDC_RETURN_IF_ERROR(parse_int(name, value, lo, hi, &v));
  *out = static_cast<int>(v);
  return Status::ok();
}

// "NAME='value' is invalid: it must be <relation> OTHER='other'".
Status out_of_order(const Env& env, const char* name, const char* relation, const char* other,
                    int other_value) {
  return make_error(HVD_ERR_INVALID_ARGUMENT, "%s='%s' is invalid: it must be %s %s='%d'", name,
                    env.get(name), relation, other, other_value);
}

// Rank and size from two variables that are both set.
Status read_pair(const Env& env, const char* rank_name, const char* size_name, LaunchInfo* info) {
  int rank = 0;
  int size = 0;
  HVDC_RETURN_IF_ERROR(parse_int(rank_name, env.get(rank_name), 0, INT_MAX - 1, &rank));
  HVDC_RETURN_IF_ERROR(parse_int(size_name, env.get(size_name), 1, INT_MAX, &size));
  if (rank >= size) return out_of_order(env, rank_name, "below", size_name, size);
  info->rank = rank;
  info->size = size;
  return Status::ok();
}

// The launcher's local rank and local size, each optional (a hint, see LaunchInfo).
Status read_local(const Env& env, const char* lrank_name, const char* lsize_name,
                  const char* size_name, LaunchInfo* info) {
  int lrank = -1;
  int lsize = -1;
  if (env.has(lrank_name)) {
    HVDC_RETURN_IF_ERROR(parse_int(lrank_name, env.get(lrank_name), 0, INT_MAX - 1, &lrank));
    if (lrank >= info->size) return out_of_order(env, lrank_name, "below", size_name, info->size);
  }
  if (lsize_name != nullptr && env.has(lsize_name)) {
    HVDC_RETURN_IF_ERROR(parse_int(lsize_name, env.get(lsize_name), 1, INT_MAX, &lsize));
    if (lsize > info->size) return out_of_order(env, lsize_name, "at most", size_name, info->size);
    if (lrank >= lsize) return out_of_order(env, lrank_name, "below", lsize_name, lsize);
  }
  info->local_rank = lrank;
  info->local_size = lsize;
  return Status::ok();
}

Status from_config(int config_rank, int config_size, LaunchInfo* info, bool* matched) {
  *matched = false;
  if (config_rank == -1 && config_size == -1) return Status::ok();
  if (config_rank == -1 || config_size == -1) {
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "config rank is %d and config size is %d: give both or neither", config_rank,
                      config_size);
  }
  if (config_size < 1 || config_rank < 0 || config_rank >= config_size) {
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "config rank %d and size %d are invalid: need 0 <= rank < size", config_rank,
                      config_size);
  }
  info->source = "config";
  info->rank = config_rank;
  info->size = config_size;
  *matched = true;
  return Status::ok();
}

// HVDC_* is set on purpose (by hvdcrun or by hand), so half a pair is a mistake to report.
Status from_hvdc(const Env& env, LaunchInfo* info, bool* matched) {
  *matched = false;
  const bool has_rank = env.has("HVDC_RANK");
  const bool has_size = env.has("HVDC_SIZE");
  if (!has_rank && !has_size) return Status::ok();
  if (has_rank != has_size) {
    const char* set = has_rank ? "HVDC_RANK" : "HVDC_SIZE";
    return make_error(HVD_ERR_INVALID_ARGUMENT, "%s='%s' is set but %s is not: set both or neither",
                      set, env.get(set), has_rank ? "HVDC_SIZE" : "HVDC_RANK");
  }
  HVDC_RETURN_IF_ERROR(read_pair(env, "HVDC_RANK", "HVDC_SIZE", info));
  HVDC_RETURN_IF_ERROR(read_local(env, "HVDC_LOCAL_RANK", "HVDC_LOCAL_SIZE", "HVDC_SIZE", info));
  info->source = "HVDC_RANK/HVDC_SIZE";
  *matched = true;
  return Status::ok();
}

// A launcher described by variable names. It matches when rank, size and every name in
// `required` are set; anything less is someone else's leftover and does not match.
struct LauncherVars {
  const char* source;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;  // nullptr when the launcher has none
  const char* required[2];
};

const LauncherVars kOpenMpi = {"Open MPI",
                               "OMPI_COMM_WORLD_RANK",
                               "OMPI_COMM_WORLD_SIZE",
                               "OMPI_COMM_WORLD_LOCAL_RANK",
                               "OMPI_COMM_WORLD_LOCAL_SIZE",
                               {nullptr, nullptr}};
const LauncherVars kTorchrunVars = {kTorchrun,          "RANK",
                                    "WORLD_SIZE",       "LOCAL_RANK",
                                    "LOCAL_WORLD_SIZE", {"LOCAL_RANK", "MASTER_ADDR"}};
const LauncherVars kHydra = {"MPICH/Hydra",     "PMI_RANK",        "PMI_SIZE",
                             "MPI_LOCALRANKID", "MPI_LOCALNRANKS", {nullptr, nullptr}};

bool launcher_present(const Env& env, const LauncherVars& vars) {
  if (!env.has(vars.rank) || !env.has(vars.size)) return false;
  for (const char* name : vars.required) {
    if (name != nullptr && !env.has(name)) return false;
  }
  return true;
}

Status from_launcher(const Env& env, const LauncherVars& vars, LaunchInfo* info, bool* matched) {
  *matched = launcher_present(env, vars);
  if (!*matched) return Status::ok();
  HVDC_RETURN_IF_ERROR(read_pair(env, vars.rank, vars.size, info));
  HVDC_RETURN_IF_ERROR(read_local(env, vars.local_rank, vars.local_size, vars.size, info));
  info->source = vars.source;
  return Status::ok();
}

// True inside an srun job step; false in the batch script, the extern step and the interactive
// step, where SLURM_PROCID describes the one process of that step.
Status in_slurm_step(const Env& env, bool* in_step) {
  *in_step = false;
  const char* step = env.get("SLURM_STEP_ID");
  if (step == nullptr) return Status::ok();
  long long id = 0;
  HVDC_RETURN_IF_ERROR(parse_int("SLURM_STEP_ID", step, 0, 0xffffffffLL, &id));
  *in_step = id < kSlurmMaxNormalStepId;
  return Status::ok();
}

// One item of SLURM_TASKS_PER_NODE: "4" (one node with 4 tasks) or "4(x2)" (two such nodes).
bool parse_tasks_item(const std::string& item, int* tasks, int* repeat) {
  const size_t paren = item.find("(x");
  long long v = 0;
  if (!parse_int("", item.substr(0, paren).c_str(), 1, INT_MAX, &v).is_ok()) return false;
  *tasks = static_cast<int>(v);
  *repeat = 1;
  if (paren == std::string::npos) return true;
  if (item.back() != ')') return false;
  const std::string count = item.substr(paren + 2, item.size() - paren - 3);
  if (!parse_int("", count.c_str(), 1, INT_MAX, &v).is_ok()) return false;
  *repeat = static_cast<int>(v);
  return true;
}

// Tasks on node `node` from SLURM_TASKS_PER_NODE's compressed form, e.g. "2(x3),1": 2 tasks on
// each of nodes 0-2, 1 on node 3.
Status slurm_tasks_on_node(const char* spec, int node, int* out) {
  const std::string text = spec;
  long long first_node = 0;
  for (size_t pos = 0; pos <= text.size();) {
    const size_t end = text.find(',', pos) == std::string::npos ? text.size() : text.find(',', pos);
    int tasks = 0;
    int repeat = 0;
    if (!parse_tasks_item(text.substr(pos, end - pos), &tasks, &repeat)) {
      return make_error(HVD_ERR_INVALID_ARGUMENT,
                        "SLURM_TASKS_PER_NODE='%s' is invalid: expected a list like '2(x3),1'",
                        spec);
    }
    if (node < first_node + repeat) {
      *out = tasks;
      return Status::ok();
    }
    first_node += repeat;
    pos = end + 1;
  }
  return make_error(HVD_ERR_INVALID_ARGUMENT,
                    "SLURM_NODEID='%d' is invalid: SLURM_TASKS_PER_NODE='%s' lists %lld nodes",
                    node, spec, first_node);
}

Status from_slurm(const Env& env, LaunchInfo* info, bool* matched) {
  *matched = false;
  bool in_step = false;
  HVDC_RETURN_IF_ERROR(in_slurm_step(env, &in_step));
  // SLURM_NPROCS is the older spelling of SLURM_NTASKS.
  const char* size_name = env.has("SLURM_NTASKS") ? "SLURM_NTASKS" : "SLURM_NPROCS";
  if (!in_step || !env.has("SLURM_PROCID") || !env.has(size_name)) return Status::ok();
  HVDC_RETURN_IF_ERROR(read_pair(env, "SLURM_PROCID", size_name, info));
  HVDC_RETURN_IF_ERROR(read_local(env, "SLURM_LOCALID", nullptr, size_name, info));
  if (info->local_rank >= 0 && env.has("SLURM_NODEID") && env.has("SLURM_TASKS_PER_NODE")) {
    int node = 0;
    int tasks = 0;
    HVDC_RETURN_IF_ERROR(parse_int("SLURM_NODEID", env.get("SLURM_NODEID"), 0, INT_MAX, &node));
    HVDC_RETURN_IF_ERROR(slurm_tasks_on_node(env.get("SLURM_TASKS_PER_NODE"), node, &tasks));
    // A count that disagrees with the local rank (an unusual task distribution) is dropped, not
    // reported: the local size is only a hint and the job can run without it.
    if (info->local_rank < tasks && tasks <= info->size) info->local_size = tasks;
  }
  info->source = "Slurm";
  *matched = true;
  return Status::ok();
}

Status find_source(const Env& env, int config_rank, int config_size, LaunchInfo* info) {
  bool matched = false;
  HVDC_RETURN_IF_ERROR(from_config(config_rank, config_size, info, &matched));
  if (!matched) HVDC_RETURN_IF_ERROR(from_hvdc(env, info, &matched));
  if (!matched) HVDC_RETURN_IF_ERROR(from_launcher(env, kOpenMpi, info, &matched));
  if (!matched) HVDC_RETURN_IF_ERROR(from_launcher(env, kTorchrunVars, info, &matched));
  if (!matched) HVDC_RETURN_IF_ERROR(from_slurm(env, info, &matched));
  if (!matched) HVDC_RETURN_IF_ERROR(from_launcher(env, kHydra, info, &matched));
  if (!matched) info->source = "singleton";
  return Status::ok();
}

// torchrun's own TCP store listens on MASTER_PORT on the master host, so hvdc's store takes the
// next port unless HVDC_MASTER_PORT says otherwise.
Status resolve_master(const Env& env, LaunchInfo* info) {
  const bool torchrun = info->source == kTorchrun;
  if (const char* addr = env.get("HVDC_MASTER_ADDR")) {
    info->master_addr = addr;
  } else if (torchrun) {
    info->master_addr = env.get("MASTER_ADDR");
  }
  const char* given = env.get("HVDC_MASTER_PORT");
  // "0" is the setting's default (hvdc-info, hvd_config): the same as not set.
  if (given != nullptr && std::string(given) != "0") {
    return parse_int("HVDC_MASTER_PORT", given, 1, kMaxPort, &info->master_port);
  }
  const char* torch_port = torchrun ? env.get("MASTER_PORT") : nullptr;
  if (torch_port == nullptr) return Status::ok();
  int port = 0;
  HVDC_RETURN_IF_ERROR(parse_int("MASTER_PORT", torch_port, 1, kMaxPort, &port));
  if (port == kMaxPort) {
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "MASTER_PORT='%d' leaves no port for hvdc's store at MASTER_PORT + 1: set "
                      "HVDC_MASTER_PORT",
                      port);
  }
  info->master_port = port + 1;
  info->note = strfmt(
      "MASTER_PORT=%d belongs to torchrun's store; hvdc's store uses MASTER_PORT + 1 = %d (set "
      "HVDC_MASTER_PORT to choose another)",
      port, port + 1);
  return Status::ok();
}

}  // namespace

EnvLookup process_environment() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

Status discover_launch(const EnvLookup& lookup, int config_rank, int config_size, LaunchInfo* out) {
  const Env env(lookup);
  LaunchInfo info;
  HVDC_RETURN_IF_ERROR(find_source(env, config_rank, config_size, &info));
  info.mpi_launched = launcher_present(env, kOpenMpi) || launcher_present(env, kHydra);
  HVDC_RETURN_IF_ERROR(resolve_master(env, &info));
  *out = info;
  return Status::ok();
}

std::string describe_launch(const LaunchInfo& info) {
  std::string line =
      strfmt("rank discovery: %s, rank %d of %d", info.source.c_str(), info.rank, info.size);
  if (info.local_rank >= 0) line += strfmt(", local rank %d", info.local_rank);
  if (info.local_size > 0) line += strfmt(" of %d", info.local_size);
  if (!info.master_addr.empty() || info.master_port != 0) {
    line += strfmt(", store at %s:%d",
                   info.master_addr.empty() ? "(no address)" : info.master_addr.c_str(),
                   info.master_port);
  }
  if (info.mpi_launched) line += ", started by an MPI launcher";
  if (!info.note.empty()) line += "; " + info.note;
  return line;
}

}  // namespace hvdc::bootstrap
