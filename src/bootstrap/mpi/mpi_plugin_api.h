// The table the MPI bootstrap plugin (libhvdc_mpi.so, the only object linked with libmpi)
// exports. libhvdc.so.0 dlopens the plugin only when MPI is wanted, so it loads and works where
// no MPI library is installed. Never change a published _vN table; add _vN+1.
#pragma once

#include <stddef.h>

extern "C" {

struct hvdc_mpi_plugin_v1 {
  // Each returns 0 on success or writes a message into err (errlen bytes) and returns -1.
  int (*init)(int* rank, int* size, char* err, size_t errlen);
  int (*allgather)(const void* in, size_t bytes, void* out, char* err, size_t errlen);
  int (*broadcast)(void* buf, size_t bytes, int root, char* err, size_t errlen);
  int (*barrier)(char* err, size_t errlen);
  // Frees hvdc's communicator; finalizes MPI only if init initialized it.
  int (*finalize)(char* err, size_t errlen);
};

#define HVDC_MPI_PLUGIN_SYMBOL "hvdc_mpi_plugin_get_v1"
typedef const struct hvdc_mpi_plugin_v1* (*hvdc_mpi_plugin_get_v1_fn)(void);

// v2: a barrier that gives up, for shutting down after a peer died (MPI_Barrier would wait for
// it forever).
struct hvdc_mpi_plugin_v2 {
  struct hvdc_mpi_plugin_v1 v1;
  // Like barrier, but returns 1 after `seconds` (err says so). MPI is then left as it is:
  // finalize releases nothing, because MPI_Finalize would wait for the missing rank too.
  int (*barrier_within)(double seconds, char* err, size_t errlen);
};

#define HVDC_MPI_PLUGIN_SYMBOL_V2 "hvdc_mpi_plugin_get_v2"
typedef const struct hvdc_mpi_plugin_v2* (*hvdc_mpi_plugin_get_v2_fn)(void);
}
