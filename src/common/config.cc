#include "common/config.h"

#include <cerrno>
#include <cstdlib>

#include "common/log.h"
#include "hvdc.h"

namespace hvdc::common {
namespace {

Status parse_int_at_least(const Knob& knob, const std::string& raw, int64_t min_value,
                          std::string* normalized) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(raw.c_str(), &end, 10);
  if (raw.empty() || errno != 0 || end == nullptr || *end != '\0' || v < min_value) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "%s: invalid value '%s' (an integer >= %lld)",
                      knob.name, raw.c_str(), static_cast<long long>(min_value));
  }
  *normalized = std::to_string(v);
  return Status::ok();
}

Status parse_non_negative(const Knob& knob, const std::string& raw, std::string* normalized) {
  return parse_int_at_least(knob, raw, 0, normalized);
}

Status parse_positive(const Knob& knob, const std::string& raw, std::string* normalized) {
  return parse_int_at_least(knob, raw, 1, normalized);
}

Status parse_bool(const Knob& knob, const std::string& raw, std::string* normalized) {
  if (raw == "0" || raw == "1") {
    *normalized = raw;
    return Status::ok();
  }
  return make_error(HVD_ERR_INVALID_ARGUMENT, "%s: invalid value '%s' (0 or 1)", knob.name,
                    raw.c_str());
}

// Bounded so that a round message's bit vector stays small (128 KiB at the limit).
Status parse_cache_capacity(const Knob& knob, const std::string& raw, std::string* normalized) {
  HVDC_RETURN_IF_ERROR(parse_int_at_least(knob, raw, 0, normalized));
  if (std::strtoll(normalized->c_str(), nullptr, 10) > (1 << 20)) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "%s: invalid value '%s' (at most 1048576)",
                      knob.name, raw.c_str());
  }
  return Status::ok();
}

Status parse_any_string(const Knob&, const std::string& raw, std::string* normalized) {
  *normalized = raw;
  return Status::ok();
}

Status parse_log_level(const Knob& knob, const std::string& raw, std::string* normalized) {
  static const char* const kNames[] = {"trace", "debug", "info", "warning", "error", "off"};
  for (int i = 0; i <= kOff; ++i) {
    if (raw == kNames[i] || raw == std::to_string(i)) {
      *normalized = std::to_string(i);
      return Status::ok();
    }
  }
  if (raw == "fatal") {  // Horovod's spelling for "errors only"
    *normalized = std::to_string(kError);
    return Status::ok();
  }
  return make_error(HVD_ERR_INVALID_ARGUMENT,
                    "%s: invalid value '%s' (trace, debug, info, warning, error, off or 0-5)",
                    knob.name, raw.c_str());
}

Status parse_bootstrap(const Knob& knob, const std::string& raw, std::string* normalized) {
  if (raw == "auto" || raw == "singleton" || raw == "mpi" || raw == "store") {
    *normalized = raw;
    return Status::ok();
  }
  return make_error(HVD_ERR_INVALID_ARGUMENT,
                    "%s: invalid value '%s' (auto, singleton, mpi or store)", knob.name,
                    raw.c_str());
}

// -1 means "not given" (discovered from the launcher).
Status parse_rank_or_unset(const Knob& knob, const std::string& raw, std::string* normalized) {
  return parse_int_at_least(knob, raw, -1, normalized);
}

Status parse_port(const Knob& knob, const std::string& raw, std::string* normalized) {
  HVDC_RETURN_IF_ERROR(parse_int_at_least(knob, raw, 0, normalized));
  if (std::strtoll(normalized->c_str(), nullptr, 10) > 65535) {
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "%s: invalid value '%s' (a port, 1-65535, or 0 for the default)", knob.name,
                      raw.c_str());
  }
  return Status::ok();
}

const char* env_or_null(const char* name) {
  if (name == nullptr) return nullptr;
  const char* v = std::getenv(name);
  return (v != nullptr && v[0] != '\0') ? v : nullptr;
}

}  // namespace

const std::vector<Knob>& knob_registry() {
  static const std::vector<Knob> kKnobs = {
      {"HVDC_LOG_LEVEL", "HOROVOD_LOG_LEVEL", HVD_CFG_LOG_LEVEL, true, "warning", parse_log_level,
       "Least severe level logged: trace, debug, info, warning, error or off."},
      {"HVDC_HOSTNAME", nullptr, HVD_CFG_HOSTNAME, false, "", parse_any_string,
       "Host identity for local/cross topology; empty means the system hostname."},
      {"HVDC_BOOTSTRAP", nullptr, HVD_CFG_BOOTSTRAP, false, "auto", parse_bootstrap,
       "How ranks find each other: auto (the launcher's variables decide: mpirun's MPI, else the "
       "TCP store at HVDC_MASTER_ADDR, else singleton), singleton, mpi or store."},
      {"HVDC_RANK", nullptr, HVD_CFG_RANK, true, "-1", parse_rank_or_unset,
       "This process's rank, given together with HVDC_SIZE; -1: from the launcher."},
      {"HVDC_SIZE", nullptr, HVD_CFG_SIZE, true, "-1", parse_rank_or_unset,
       "The number of ranks, given together with HVDC_RANK; -1: from the launcher."},
      {"HVDC_MASTER_ADDR", nullptr, HVD_CFG_MASTER_ADDR, false, "", parse_any_string,
       "Address of rank 0's TCP rendezvous store (torchrun's MASTER_ADDR when unset)."},
      {"HVDC_MASTER_PORT", nullptr, HVD_CFG_MASTER_PORT, true, "0", parse_port,
       "Port of the rendezvous store; 0: torchrun's MASTER_PORT + 1."},
      {"HVDC_SECRET", nullptr, HVD_CFG_SECRET, false, "", parse_any_string,
       "Per-job secret: every rendezvous message carries an HMAC-SHA256 with it; empty: "
       "unauthenticated (one warning).",
       true},
      {"HVDC_IFACE", nullptr, HVD_CFG_IFACE, false, "", parse_any_string,
       "Network interface the rendezvous store binds to; empty: the master address."},
      {"HVDC_RENDEZVOUS_TIMEOUT", nullptr, -1, true, "120", parse_positive,
       "Seconds a rank waits for the rendezvous store and its peers before init fails."},
      {"HVDC_SPIN_MICROS", nullptr, HVD_CFG_SPIN_MICROS, true, "50", parse_non_negative,
       "Microseconds the engine thread polls for work before it sleeps."},
      {"HVDC_ROUND_INPUT_BYTES", nullptr, -1, true, "4096", parse_non_negative,
       "Bytes of input a negotiation round message carries for small cached allreduces of host "
       "memory, which then need no exchange of their own; 0 never (docs/engine.md)."},
      {"HVDC_SMALL_ALLREDUCE_BYTES", nullptr, -1, true, "65536", parse_non_negative,
       "Allreduces up to this size use the low-latency algorithm instead of the ring."},
      {"HVDC_LOCAL_MIN_BYTES", nullptr, -1, true, "16384", parse_non_negative,
       "Allreduces of host memory among ranks of one host read and write the peers' buffers in "
       "place from this size on, and lone cached ones agreed on the lane at any size "
       "(docs/memory.md)."},
      {"HVDC_LOCAL_STAGE_BYTES", nullptr, -1, true, "16777216", parse_non_negative,
       "Those allreduces on heap buffers go through a region of this rank's that the peers map, "
       "instead of through the kernel, where the op (or the window of a larger op) is no larger "
       "than this; 0 never (docs/memory.md)."},
      {"HVDC_PEER_READS", nullptr, -1, true, "1", parse_bool,
       "0 keeps local peers from reading and writing this rank's buffers in place: its "
       "allreduces move through the transport."},
      {"HVDC_LANE", nullptr, -1, true, "1", parse_bool,
       "1: a lone cached allreduce of a set whose ranks share a host is agreed through shared "
       "memory instead of a negotiation round; 0: always by round (docs/engine.md)."},
      {"HVDC_HIERARCHICAL_ALLREDUCE", "HOROVOD_HIERARCHICAL_ALLREDUCE", -1, true, "1", parse_bool,
       "1: a host allreduce across hosts with the same number of ranks on each reduces within "
       "each host first, then across hosts, then shares the result within each host; 0: one "
       "ring through every rank (docs/engine.md)."},
      {"HVDC_SEGMENT_BYTES", nullptr, -1, true, "262144", parse_positive,
       "Size of the pieces the ring allreduce pipelines and reduces in cache."},
      {"HVDC_TCP_SEGMENT_BYTES", nullptr, -1, true, "57344", parse_non_negative,
       "Size of the pieces the ring sends between hosts where UCX reaches the other hosts over "
       "TCP alone (found at init); 0: HVDC_SEGMENT_BYTES there too (docs/engine.md)."},
      {"HVDC_FUSION_THRESHOLD", "HOROVOD_FUSION_THRESHOLD", HVD_CFG_FUSION_THRESHOLD, true,
       "2097152", parse_non_negative,
       "Ready allreduces of like dtype, op and scale run as one collective up to this many "
       "bytes; 0 disables fusion."},
      {"HVDC_CACHE_CAPACITY", "HOROVOD_CACHE_CAPACITY", HVD_CFG_CACHE_CAPACITY, true, "1024",
       parse_cache_capacity,
       "Response-cache entries (tensors agreed on without the coordinator once negotiated); "
       "0 disables the cache."},
      {"HVDC_STALL_CHECK_TIME", "HOROVOD_STALL_CHECK_TIME_SECONDS", -1, true, "60",
       parse_non_negative,
       "Seconds after which rank 0 logs tensors that only some ranks submitted, with the missing "
       "ranks; 0 disables the stall inspector."},
      {"HVDC_STALL_SHUTDOWN_TIME", "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", -1, true, "300",
       parse_non_negative,
       "Seconds after which such tensors fail on every rank with HVD_ERR_TIMEOUT instead of "
       "hanging; 0 waits forever."},
      {"HVDC_TIMELINE", "HOROVOD_TIMELINE", -1, false, "", parse_any_string,
       "Rank 0 writes a Chrome trace-event timeline of every tensor to this file (export it to "
       "every rank); empty: none until hvd_timeline_start."},
      {"HVDC_TIMELINE_MARK_CYCLES", "HOROVOD_TIMELINE_MARK_CYCLES", -1, true, "0", parse_bool,
       "1: the timeline marks each round of agreement with a CYCLE_START instant event."},
      {"HVDC_DETERMINISTIC", nullptr, HVD_CFG_DETERMINISTIC, true, "0", parse_bool,
       "1: every allreduce result depends only on the inputs and the rank count, never on "
       "fusion, timing or segment boundaries (reduces in rank order)."},
      {"HVDC_TIMEOUT", nullptr, -1, true, "60", parse_non_negative,
       "Seconds without progress in a collective waiting on a peer (1.5x that for a negotiation "
       "round) after which every pending op fails with HVD_ERR_TIMEOUT on every rank; 0 waits "
       "forever. A dead peer is found sooner (about 1 s)."},
      {"HVDC_ROUND_TREE_MIN_RANKS", nullptr, -1, true, "64", parse_positive,
       "From this many ranks on, a negotiation round goes up and down a tree of the ranks "
       "(O(n) messages) instead of from every rank to every rank (n(n-1) messages, fewer "
       "hops). Must be the same on every rank."},
      {"HVDC_PROCESS_SETS", nullptr, HVD_CFG_PROCESS_SETS, false, "", parse_any_string,
       "Static process sets created at init with ids 1, 2, ...: ranks separated by ',', sets "
       "by ';' (\"0,2;1,3\"). Must be the same on every rank."},
  };
  return kKnobs;
}

const Knob* find_knob_by_key(int32_t config_key) {
  for (const Knob& knob : knob_registry()) {
    if (knob.config_key == config_key && config_key >= 0) return &knob;
  }
  return nullptr;
}

Status Settings::resolve(const ConfigOverrides& overrides, Settings* out) {
  Settings settings;
  for (const Knob& knob : knob_registry()) {
    std::string raw = knob.default_value;
    std::string source = "default";
    const char* origin = knob.name;  // the variable (or key) the value came from, for errors
    if (const char* v = env_or_null(knob.horovod_alias)) {
      raw = v;
      origin = knob.horovod_alias;
      source = strfmt("environment (%s)", origin);
    }
    if (const char* v = env_or_null(knob.name)) {
      raw = v;
      origin = knob.name;
      source = strfmt("environment (%s)", origin);
    }
    auto it = overrides.find(knob.config_key);
    if (knob.config_key >= 0 && it != overrides.end()) {
      raw = it->second;
      origin = knob.name;
      source = "config";
    }
    Knob named = knob;
    named.name = origin;
    Entry entry;
    HVDC_RETURN_IF_ERROR(knob.parse(named, raw, &entry.value).with_context("configuration"));
    entry.source = source;
    settings.entries_[knob.name] = entry;
  }
  *out = std::move(settings);
  return Status::ok();
}

int64_t Settings::get_int(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? 0 : std::strtoll(it->second.value.c_str(), nullptr, 10);
}

const std::string& Settings::get_str(const std::string& name) const {
  static const std::string kEmpty;
  auto it = entries_.find(name);
  return it == entries_.end() ? kEmpty : it->second.value;
}

}  // namespace hvdc::common
