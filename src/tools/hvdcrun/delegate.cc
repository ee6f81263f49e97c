#include "tools/hvdcrun/delegate.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

namespace hvdc::hvdcrun {

using common::make_error;

namespace {

// Random ports for srun's store, when hvdcrun cannot check the master host: above the usual
// service ports and below Linux's default ephemeral range (32768-60999) by most of its width.
constexpr int kRandomPortLo = 20000;
constexpr int kRandomPortHi = 40000;

bool is_per_rank(const std::string& name) {
  for (const char* v : kPerRankVariables) {
    if (name == v) return true;
  }
  return false;
}

// What mpirun passes to every rank: hvdc's and Horovod's settings, the transports' and NCCL's,
// and where programs and libraries are found (Horovod's documented mpirun line does the same).
bool forwarded_to_mpirun(const std::string& name) {
  if (is_per_rank(name)) return false;
  for (const char* prefix : {"HVDC_", "HOROVOD_", "UCX_", "NCCL_"}) {
    if (name.compare(0, std::strlen(prefix), prefix) == 0) return true;
  }
  return name == "PATH" || name == "LD_LIBRARY_PATH";
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

int exec_launcher(const std::vector<std::string>& cmd, const EnvMap& env, bool verbose,
                  const char* needed_for) {
  if (verbose) std::fprintf(stderr, "hvdcrun: %s\n", joined(cmd).c_str());
  const std::vector<std::string> entries = environment_entries(env);
  std::vector<char*> argv = c_string_array(cmd);
  std::vector<char*> envp = c_string_array(entries);
  std::fflush(nullptr);
  execvpe(argv[0], argv.data(), envp.data());
  const int err = errno;
  std::fprintf(stderr, "hvdcrun: cannot run '%s' (%s): %s\n", cmd[0].c_str(), needed_for,
               std::strerror(err));
  return err == ENOENT ? 127 : 126;
}

int report(const Status& st) {
  std::fprintf(stderr, "hvdcrun: %s\n", st.message().c_str());
  return st.code() == HVD_ERR_INVALID_ARGUMENT ? kUsageExit : 1;
}

Status srun_master(EnvMap* env) {
  std::string& addr = (*env)["HVDC_MASTER_ADDR"];
  if (addr.empty()) {
    const char* list_name =
        env->count("SLURM_JOB_NODELIST") ? "SLURM_JOB_NODELIST" : "SLURM_NODELIST";
    const std::string nodelist = env->count(list_name) ? env->at(list_name) : "";
    addr = first_host_of_nodelist(nodelist);
    if (addr.empty()) {
      return make_error(HVD_ERR_INVALID_ARGUMENT,
                        "--srun: cannot tell rank 0's host from %s='%s': set HVDC_MASTER_ADDR",
                        list_name, nodelist.c_str());
    }
  }
  std::string& port_text = (*env)["HVDC_MASTER_PORT"];
  if (!port_text.empty()) return Status::ok();
  int port = 0;
  if (is_this_host(addr)) {
    HVDC_RETURN_IF_ERROR(pick_free_port("0.0.0.0", &port));
  } else {
    HVDC_RETURN_IF_ERROR(pick_random_port(kRandomPortLo, kRandomPortHi, &port));
  }
  port_text = std::to_string(port);
  return Status::ok();
}

}  // namespace

std::vector<std::string> mpirun_command(const Options& options, const EnvMap& env) {
  std::vector<std::string> cmd = {"mpirun", "-np", std::to_string(options.np)};
  if (!options.hosts.empty()) {
    cmd.insert(cmd.end(), {"-H", options.hosts});
  } else {
    cmd.insert(cmd.end(), {"--hostfile", options.hostfile});
  }
  // Open MPI binds each rank to a core at np <= 2, and the engine thread would share it.
  cmd.insert(cmd.end(), {"--bind-to", "none", "--tag-output"});
  if (options.oversubscribe) cmd.push_back("--oversubscribe");
  if (options.allow_run_as_root) cmd.push_back("--allow-run-as-root");
  if (options.keep_going) {
    // Neither a failed rank nor one that exits without MPI_Finalize ends the others.
    cmd.insert(cmd.end(), {"--mca", "orte_enable_recovery", "1", "--mca",
                           "orte_abort_on_non_zero_status", "0"});
  }
  // -x items by variable name; a -x given here replaces the automatic one for its name.
  std::map<std::string, std::string> exports = {{"HVDC_SECRET", "HVDC_SECRET"}};
  for (const auto& [name, value] : env) {
    if (forwarded_to_mpirun(name)) exports[name] = name;
  }
  for (const std::string& item : options.exports) exports[item.substr(0, item.find('='))] = item;
  for (const auto& [name, item] : exports) cmd.insert(cmd.end(), {"-x", item});
  cmd.insert(cmd.end(), options.launcher_args.begin(), options.launcher_args.end());
  cmd.insert(cmd.end(), options.command.begin(), options.command.end());
  return cmd;
}

std::vector<std::string> srun_command(const Options& options) {
  // --export=ALL: an sbatch --export=NONE would otherwise keep HVDC_SECRET from the tasks.
  // --kill-on-bad-exit=1: one failed task stops the step instead of leaving the others hanging
  // (0 with --keep-going: hvdc itself tells the others, which then exit on their own).
  // --cpu-bind=none: as --bind-to none for mpirun. --label: a rank prefix on every line.
  std::vector<std::string> cmd = {
      "srun",
      "-n",
      std::to_string(options.np),
      "--export=ALL",
      options.keep_going ? "--kill-on-bad-exit=0" : "--kill-on-bad-exit=1",
      "--cpu-bind=none",
      "--label"};
  cmd.insert(cmd.end(), options.launcher_args.begin(), options.launcher_args.end());
  cmd.insert(cmd.end(), options.command.begin(), options.command.end());
  return cmd;
}

Status prepare_srun_environment(const Options& options, EnvMap* env) {
  auto job = env->find("SLURM_JOB_ID");
  if (job == env->end() || job->second.empty()) {
    return Status(HVD_ERR_INVALID_ARGUMENT,
                  "--srun: SLURM_JOB_ID is not set: run hvdcrun inside a Slurm allocation "
                  "(salloc or an sbatch script), or leave out --srun");
  }
  // Each task must take its rank from Slurm, not from a value inherited by all of them.
  for (const char* name : kPerRankVariables) env->erase(name);
  std::string secret;
  HVDC_RETURN_IF_ERROR(generate_secret(&secret));
  (*env)["HVDC_SECRET"] = secret;
  (*env)["HVDC_BOOTSTRAP"] = "store";
  for (const std::string& item : options.exports) {
    const size_t eq = item.find('=');
    if (eq != std::string::npos) (*env)[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return srun_master(env);
}

int exec_mpirun(const Options& options) {
  EnvMap env = current_environment();
  // mpirun's environment reaches the ranks on this host as a whole: no per-rank values in it.
  for (const char* name : kPerRankVariables) env.erase(name);
  std::string secret;
  Status st = generate_secret(&secret);
  if (!st.is_ok()) return report(st);
  env["HVDC_SECRET"] = secret;
  return exec_launcher(mpirun_command(options, env), env, options.verbose,
                       "-H and --hostfile need Open MPI's mpirun on PATH");
}

int exec_srun(const Options& options) {
  EnvMap env = current_environment();
  Status st = prepare_srun_environment(options, &env);
  if (!st.is_ok()) return report(st);
  return exec_launcher(srun_command(options), env, options.verbose,
                       "--srun needs Slurm's srun on PATH");
}

}  // namespace hvdc::hvdcrun
