#include "tools/hvdcrun/options.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/parse.h"
#include "tools/hvdcrun/job_env.h"

namespace hvdc::hvdcrun {

using common::make_error;

namespace {

enum class Opt {
  kNp,
  kHosts,
  kHostfile,
  kSrun,
  kTimeout,
  kExport,
  kLauncherArg,
  kAllowRoot,
  kOversubscribe,
  kKeepGoing,
  kVerbose,
  kHelp,
  kVersion,
};

struct OptSpec {
  const char* names[3];  // spellings; unused slots are nullptr
  Opt id;
  bool takes_value;
};

// Open MPI's single-dash spellings (-np, -hostfile) are accepted so that mpirun lines carry over.
const OptSpec kSpecs[] = {
    {{"-np", "-n", "--np"}, Opt::kNp, true},
    {{"-H", "--host", nullptr}, Opt::kHosts, true},
    {{"--hostfile", "-hostfile", nullptr}, Opt::kHostfile, true},
    {{"--srun", nullptr, nullptr}, Opt::kSrun, false},
    {{"--timeout", nullptr, nullptr}, Opt::kTimeout, true},
    {{"-x", nullptr, nullptr}, Opt::kExport, true},
    {{"--launcher-arg", nullptr, nullptr}, Opt::kLauncherArg, true},
    {{"--allow-run-as-root", nullptr, nullptr}, Opt::kAllowRoot, false},
    {{"--oversubscribe", nullptr, nullptr}, Opt::kOversubscribe, false},
    {{"--keep-going", nullptr, nullptr}, Opt::kKeepGoing, false},
    {{"-v", "--verbose", nullptr}, Opt::kVerbose, false},
    {{"-h", "--help", nullptr}, Opt::kHelp, false},
    {{"--version", nullptr, nullptr}, Opt::kVersion, false},
};

const OptSpec* find_spec(const std::string& name) {
  for (const OptSpec& spec : kSpecs) {
    for (const char* spelling : spec.names) {
      if (spelling != nullptr && name == spelling) return &spec;
    }
  }
  return nullptr;
}

Status parse_count(const std::string& option, const std::string& value, int max, int* out) {
  long long v = 0;
  if (value.empty() || value[0] == '-' || !hvdc::common::parse_decimal(value, 1, max, &v)) {
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "%s: '%s' is invalid: expected an integer from 1 to %d", option.c_str(),
                      value.c_str(), max);
  }
  *out = static_cast<int>(v);
  return Status::ok();
}

// -H: host[:slots] items separated by commas, as Open MPI reads them.
Status check_hosts(const std::string& option, const std::string& value) {
  size_t pos = 0;
  while (pos <= value.size()) {
    const size_t comma = value.find(',', pos);
    const size_t end = comma == std::string::npos ? value.size() : comma;
    const std::string item = value.substr(pos, end - pos);
    const size_t colon = item.find(':');
    int slots = 0;
    const bool host_ok =
        colon != 0 && !item.empty() && item.find_first_of(" \t\n") == std::string::npos;
    if (!host_ok || (colon != std::string::npos &&
                     !parse_count(option, item.substr(colon + 1), 1 << 20, &slots).is_ok())) {
      return make_error(HVD_ERR_INVALID_ARGUMENT,
                        "%s: '%s' is invalid: expected host[:slots] items separated by commas, "
                        "like 'a:4,b:4'",
                        option.c_str(), value.c_str());
    }
    pos = end + 1;
  }
  return Status::ok();
}

Status apply(const OptSpec& spec, const std::string& name, const std::string& value, Options* out) {
  switch (spec.id) {
    case Opt::kNp:
      return parse_count(name, value, 1 << 20, &out->np);
    case Opt::kHosts:
      out->hosts = value;
      return check_hosts(name, value);
    case Opt::kHostfile:
      out->hostfile = value;
      return value.empty()
                 ? make_error(HVD_ERR_INVALID_ARGUMENT, "%s: the path is empty", name.c_str())
                 : Status::ok();
    case Opt::kTimeout:
      return parse_count(name, value, 365 * 24 * 3600, &out->timeout_s);
    case Opt::kExport:
      if (!valid_env_name(value.substr(0, value.find('=')))) {
        return make_error(HVD_ERR_INVALID_ARGUMENT,
                          "%s: '%s' is invalid: expected NAME or NAME=value", name.c_str(),
                          value.c_str());
      }
      out->exports.push_back(value);
      return Status::ok();
    case Opt::kLauncherArg:
      out->launcher_args.push_back(value);
      return Status::ok();
    case Opt::kSrun:
      out->srun = true;
      return Status::ok();
    case Opt::kAllowRoot:
      out->allow_run_as_root = true;
      return Status::ok();
    case Opt::kKeepGoing:
      out->keep_going = true;
      return Status::ok();
    case Opt::kOversubscribe:
      out->oversubscribe = true;
      return Status::ok();
    case Opt::kVerbose:
      out->verbose = true;
      return Status::ok();
    case Opt::kHelp:
      out->help = true;
      return Status::ok();
    case Opt::kVersion:
      out->version = true;
      return Status::ok();
  }
  return Status::ok();
}

}  // namespace

Status parse_options(int argc, const char* const* argv, Options* out) {
  Options options;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') break;  // the program starts here
    std::string value;
    bool inline_value = false;
    const size_t eq = arg.find('=');
    if (arg.compare(0, 2, "--") == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
      inline_value = true;
    }
    const OptSpec* spec = find_spec(arg);
    if (spec == nullptr) {
      return make_error(HVD_ERR_INVALID_ARGUMENT, "unknown option '%s'", argv[i]);
    }
    if (!spec->takes_value && inline_value) {
      return make_error(HVD_ERR_INVALID_ARGUMENT, "%s takes no value", arg.c_str());
    }
    if (spec->takes_value && !inline_value) {
      if (i + 1 >= argc) {
        return make_error(HVD_ERR_INVALID_ARGUMENT, "%s needs a value", arg.c_str());
      }
      value = argv[++i];
    }
    HVDC_RETURN_IF_ERROR(apply(*spec, arg, value, &options));
  }
  for (; i < argc; ++i) options.command.push_back(argv[i]);
  *out = std::move(options);
  return Status::ok();
}

Mode mode_of(const Options& options) {
  if (options.srun) return Mode::kSrun;
  if (!options.hosts.empty() || !options.hostfile.empty()) return Mode::kMpirun;
  return Mode::kLocal;
}

Status check_options(const Options& o) {
  const Mode mode = mode_of(o);
  const char* error = nullptr;
  if (o.np == 0) {
    error = "-np is required: the number of ranks to start";
  } else if (o.command.empty()) {
    error = "no program given: hvdcrun -np N program [arguments...]";
  } else if (!o.hosts.empty() && !o.hostfile.empty()) {
    error = "-H and --hostfile cannot be combined";
  } else if (o.srun && (!o.hosts.empty() || !o.hostfile.empty())) {
    error = "--srun cannot be combined with -H or --hostfile: srun places ranks itself";
  } else if (o.timeout_s > 0 && mode != Mode::kLocal) {
    error = "--timeout applies to local runs only (without -H, --hostfile or --srun)";
  } else if ((o.allow_run_as_root || o.oversubscribe) && mode != Mode::kMpirun) {
    error = "--allow-run-as-root and --oversubscribe apply only with -H or --hostfile (mpirun)";
  } else if (!o.launcher_args.empty() && mode == Mode::kLocal) {
    error = "--launcher-arg needs -H, --hostfile or --srun: a local run has no launcher";
  }
  if (error != nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, error);
  if (!o.hostfile.empty() && access(o.hostfile.c_str(), R_OK) != 0) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "--hostfile: cannot read '%s': %s",
                      o.hostfile.c_str(), std::strerror(errno));
  }
  return Status::ok();
}

}  // namespace hvdc::hvdcrun
