// The MPI bootstrap, built as the plugin libhvdc_mpi.so. Reuses an MPI the application already
// initialized (and then never finalizes it); otherwise initializes MPI and finalizes it later.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <limits>
#include <thread>

#include "bootstrap/mpi/mpi_plugin_api.h"

namespace {

MPI_Comm g_comm = MPI_COMM_NULL;
bool g_we_initialized = false;
bool g_abandoned = false;  // a bounded barrier gave up: leave MPI alone

int fail(char* err, size_t errlen, const char* what, int code) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  if (code != MPI_SUCCESS) MPI_Error_string(code, text, &len);
  std::snprintf(err, errlen, "%s%s%s", what, len > 0 ? ": " : "", text);
  return -1;
}

int count_ok(size_t bytes, char* err, size_t errlen) {
  if (bytes > static_cast<size_t>(std::numeric_limits<int>::max())) {
    std::snprintf(err, errlen, "MPI bootstrap message of %zu bytes exceeds INT_MAX", bytes);
    return -1;
  }
  return 0;
}

int plugin_init(int* rank, int* size, char* err, size_t errlen) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) {
    std::snprintf(err, errlen,
                  "MPI was already finalized in this process (by an earlier hvd_shutdown or by "
                  "the application); MPI cannot be initialized twice");
    return -1;
  }
  if (!initialized) {
    int provided = 0;
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS) return fail(err, errlen, "MPI_Init_thread failed", rc);
    g_we_initialized = true;
  }
  int rc = MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
  if (rc != MPI_SUCCESS) return fail(err, errlen, "MPI_Comm_dup failed", rc);
  MPI_Comm_set_errhandler(g_comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(g_comm, rank);
  MPI_Comm_size(g_comm, size);
  return 0;
}

int plugin_allgather(const void* in, size_t bytes, void* out, char* err, size_t errlen) {
  if (count_ok(bytes, err, errlen) != 0) return -1;
  int rc = MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes),
                         MPI_BYTE, g_comm);
  return rc == MPI_SUCCESS ? 0 : fail(err, errlen, "MPI_Allgather failed", rc);
}

int plugin_broadcast(void* buf, size_t bytes, int root, char* err, size_t errlen) {
  if (count_ok(bytes, err, errlen) != 0) return -1;
  int rc = MPI_Bcast(buf, static_cast<int>(bytes), MPI_BYTE, root, g_comm);
  return rc == MPI_SUCCESS ? 0 : fail(err, errlen, "MPI_Bcast failed", rc);
}

int plugin_barrier(char* err, size_t errlen) {
  int rc = MPI_Barrier(g_comm);
  return rc == MPI_SUCCESS ? 0 : fail(err, errlen, "MPI_Barrier failed", rc);
}

int plugin_barrier_within(double seconds, char* err, size_t errlen) {
  MPI_Request request = MPI_REQUEST_NULL;
  int rc = MPI_Ibarrier(g_comm, &request);
  if (rc != MPI_SUCCESS) return fail(err, errlen, "MPI_Ibarrier failed", rc);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    int done = 0;
    rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return fail(err, errlen, "MPI_Test (barrier) failed", rc);
    if (done) return 0;
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  g_abandoned = true;
  std::snprintf(err, errlen, "MPI barrier: some rank did not arrive within %g s", seconds);
  return 1;
}

int plugin_finalize(char* err, size_t errlen) {
  if (g_abandoned) return 0;  // a pending barrier: MPI_Comm_free and MPI_Finalize would hang
  if (g_comm != MPI_COMM_NULL) MPI_Comm_free(&g_comm);
  if (!g_we_initialized) return 0;
  g_we_initialized = false;
  int rc = MPI_Finalize();
  return rc == MPI_SUCCESS ? 0 : fail(err, errlen, "MPI_Finalize failed", rc);
}

const hvdc_mpi_plugin_v2 kPlugin = {
    {plugin_init, plugin_allgather, plugin_broadcast, plugin_barrier, plugin_finalize},
    plugin_barrier_within};

}  // namespace

extern "C" __attribute__((visibility("default"))) const hvdc_mpi_plugin_v1* hvdc_mpi_plugin_get_v1(
    void) {
  return &kPlugin.v1;
}

extern "C" __attribute__((visibility("default"))) const hvdc_mpi_plugin_v2* hvdc_mpi_plugin_get_v2(
    void) {
  return &kPlugin;
}
