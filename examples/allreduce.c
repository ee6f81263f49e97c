/* Every rank contributes its rank number; the averaged result must be (size - 1) / 2 everywhere.
 * Run with: mpirun -np 3 --bind-to none build/examples/allreduce   (or just
 * build/examples/allreduce) */
#include <hvdc.h>
#include <math.h>
#include <stdio.h>

#define CHECK(call)                                                        \
  do {                                                                     \
    hvd_status_t s_ = (call);                                              \
    if (s_ != HVD_SUCCESS) {                                               \
      fprintf(stderr, "%s failed: %s: %s\n", #call, hvd_status_string(s_), \
              hvd_last_error_message());                                   \
      return 1;                                                            \
    }                                                                      \
  } while (0)

int main(void) {
  CHECK(hvd_init());
  const int rank = hvd_rank(), size = hvd_size();

  enum { N = 1000 };
  float grad[N];
  for (int i = 0; i < N; ++i) grad[i] = (float)rank;

  int64_t shape[1] = {N};
  hvd_tensor_t tensor = {grad, HVD_FLOAT32, 1, shape, {HVD_DEVICE_CPU, 0}};
  hvd_handle_t handle;
  CHECK(hvd_allreduce_async(&tensor, grad, HVD_OP_AVERAGE, "grad", NULL, &handle));
  CHECK(hvd_wait(handle));
  CHECK(hvd_handle_free(handle));

  const float expected = (float)(size - 1) / 2.0f;
  int wrong = 0;
  for (int i = 0; i < N; ++i) wrong += fabsf(grad[i] - expected) > 1e-6f;
  printf("rank %d of %d: average of ranks = %g (expected %g), %d wrong\n", rank, size, grad[0],
         expected, wrong);
  CHECK(hvd_shutdown());
  return wrong == 0 ? 0 : 1;
}
