// Bootstrap: who am I, how many are we, and an out-of-band byte exchange to connect the data
// transport. The data path never goes through it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace hvdc::bootstrap {

using common::Status;

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual const char* name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // out receives size() * bytes: rank r's contribution at out + r * bytes.
  virtual Status allgather(const void* in, size_t bytes, void* out) = 0;
  virtual Status broadcast(void* buf, size_t bytes, int root) = 0;
  virtual Status barrier() = 0;
  // A barrier that gives up after `seconds` with HVD_ERR_TIMEOUT (shutting down after a peer
  // died). The bootstrap may then be unusable; finalize() still returns. Default: barrier().
  virtual Status barrier_within(double seconds) {
    (void)seconds;
    return barrier();
  }
  // Releases what init acquired (MPI_Finalize where hvdc initialized MPI). Called once.
  virtual Status finalize() { return Status::ok(); }
};

// Allgather of byte strings of different lengths.
Status allgather_strings(Bootstrap& bootstrap, const std::string& mine,
                         std::vector<std::string>* all);

struct BootstrapOptions {
  // "auto" (the launcher's variables decide, see create_bootstrap), "singleton", "mpi", "store".
  std::string mode = "auto";
  int config_rank = -1;  // explicit rank and size from hvd_config (-1: not given)
  int config_size = -1;
  std::string secret;  // HVDC_SECRET
  std::string iface;   // HVDC_IFACE
  double timeout_seconds = 120;
  // getenv-like; HVDC_MASTER_ADDR / HVDC_MASTER_PORT set through hvd_config come through it.
  std::function<const char*(const char*)> env;
};

// Finds rank and size (discovery.h) and connects the ranks. auto: a job started by Open MPI's
// or Hydra's mpirun uses MPI (the plugin) unless it cannot load and a rendezvous address is
// given; any other multi-rank launch uses the TCP store at the master address; one rank alone
// is a singleton.
Status create_bootstrap(const BootstrapOptions& options, std::unique_ptr<Bootstrap>* out);

std::unique_ptr<Bootstrap> make_singleton_bootstrap();

}  // namespace hvdc::bootstrap
