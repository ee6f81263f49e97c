// What a job needs before anything starts: a secret, a port, a master host, and the environment
// the ranks or the launcher inherit.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace hvdc::hvdcrun {

using common::Status;

// Variables by name, sorted, so that what is passed on is stable from run to run.
using EnvMap = std::map<std::string, std::string>;

// The per-rank variables hvdcrun sets in local mode; never passed on from hvdcrun's own
// environment to a launcher, or every rank would claim the same rank.
extern const char* const kPerRankVariables[4];

// 32 random bytes from /dev/urandom as 64 lowercase hex digits.
Status generate_secret(std::string* hex);

// A TCP port that was free on `addr` a moment ago (bound with port 0, read back, closed). Another
// process can take it before rank 0 binds it; the store then reports the address in use.
Status pick_free_port(const char* addr, int* port);

// A port from [lo, hi) chosen from /dev/urandom.
Status pick_random_port(int lo, int hi, int* port);

// [A-Za-z_][A-Za-z0-9_]*
bool valid_env_name(const std::string& name);

// The process environment.
EnvMap current_environment();

// "NAME=value" entries for execve.
std::vector<std::string> environment_entries(const EnvMap& env);

// argv / envp for exec: pointers into `strings`, then nullptr. Valid while `strings` lives.
std::vector<char*> c_string_array(const std::vector<std::string>& strings);

// The first host of a Slurm host list, e.g. "node[07-09,12],gpu1" -> "node07"; empty when the
// list is empty or malformed.
std::string first_host_of_nodelist(const std::string& nodelist);

// True when `host` names this machine (its full or its short host name).
bool is_this_host(const std::string& host);

}  // namespace hvdc::hvdcrun
