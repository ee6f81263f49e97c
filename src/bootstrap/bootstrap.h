// Bootstrap: who am I, how many are we, and an out-of-band byte exchange to connect the data
// transport. The data path never goes through it.
#pragma once

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
  // Releases what init acquired (MPI_Finalize where hvdc initialized MPI). Called once.
  virtual Status finalize() { return Status::ok(); }
};

// Allgather of byte strings of different lengths.
Status allgather_strings(Bootstrap& bootstrap, const std::string& mine,
                         std::vector<std::string>* all);

// mode: "singleton", "mpi", or "auto" (MPI when the environment shows an mpirun launch).
Status create_bootstrap(const std::string& mode, std::unique_ptr<Bootstrap>* out);

std::unique_ptr<Bootstrap> make_singleton_bootstrap();

// True when Open MPI, MPICH/Hydra or PMIx variables show that an MPI launcher started us.
bool launched_by_mpi();

}  // namespace hvdc::bootstrap
