/* The application owns MPI: hvdc reuses it, never finalizes it, and can start again. */
#include <hvdc.h>
#include <mpi.h>
#include <stdio.h>

static int allreduce_ranks(void) {
  int32_t v = hvd_rank() + 1;
  int64_t shape[1] = {1};
  hvd_tensor_t t = {&v, HVD_INT32, 1, shape, {HVD_DEVICE_CPU, 0}};
  hvd_handle_t h = 0;
  if (hvd_allreduce_async(&t, &v, HVD_OP_SUM, "r", NULL, &h) != HVD_SUCCESS) return 0;
  int ok = hvd_wait(h) == HVD_SUCCESS && v == hvd_size() * (hvd_size() + 1) / 2;
  hvd_handle_free(h);
  return ok;
}

int main(int argc, char** argv) {
  int passed = 0, failed = 0, rank = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int round = 0; round < 2; ++round) {
    int ok = hvd_init() == HVD_SUCCESS && allreduce_ranks() && hvd_shutdown() == HVD_SUCCESS;
    if (ok) {
      ++passed;
    } else {
      ++failed;
      fprintf(stderr, "rank %d round %d: %s\n", rank, round, hvd_last_error_message());
    }
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) {
    ++failed;
    fprintf(stderr, "rank %d: hvdc finalized the application's MPI\n", rank);
  } else {
    ++passed;
  }
  MPI_Finalize();
  printf("app_mpi_reinit (rank %d): %d passed, %d failed\n", rank, passed, failed);
  return failed == 0 ? 0 : 1;
}
