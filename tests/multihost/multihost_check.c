/* One rank of the multi-host suite: checks the topology hvdc derived from host identities and
 * runs every collective with checked results, then a large allreduce whose bytes the driver
 * finds on the veth between the "hosts". Usage: multihost_check RANKS_PER_HOST
 * Prints one line "multihost rank R: ... ok" on success; exits non-zero on the first failure. */
#include <hvdc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CHECK(call)                                                                             \
  do {                                                                                          \
    hvd_status_t s_ = (call);                                                                   \
    if (s_ != HVD_SUCCESS) {                                                                    \
      fprintf(stderr, "rank %d: %s failed: %s: %s\n", hvd_rank(), #call, hvd_status_string(s_), \
              hvd_last_error_message());                                                        \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

#define EXPECT(cond, ...)                                  \
  do {                                                     \
    if (!(cond)) {                                         \
      fprintf(stderr, "rank %d: %s: ", hvd_rank(), #cond); \
      fprintf(stderr, __VA_ARGS__);                        \
      fprintf(stderr, "\n");                               \
      exit(1);                                             \
    }                                                      \
  } while (0)

static hvd_tensor_t vec(void* data, int32_t dtype, int64_t* shape) {
  hvd_tensor_t t = {data, dtype, 1, shape, {HVD_DEVICE_CPU, 0}};
  return t;
}

static void run(hvd_handle_t h) {
  CHECK(hvd_wait(h));
}

static void check_topology(int per_host) {
  const int rank = hvd_rank(), size = hvd_size();
  EXPECT(size % per_host == 0, "size %d, %d ranks per host", size, per_host);
  EXPECT(hvd_local_size() == per_host, "local size %d", hvd_local_size());
  EXPECT(hvd_local_rank() == rank % per_host, "local rank %d", hvd_local_rank());
  EXPECT(hvd_cross_size() == size / per_host, "cross size %d", hvd_cross_size());
  EXPECT(hvd_cross_rank() == rank / per_host, "cross rank %d", hvd_cross_rank());
}

/* In place, or out of place into a second buffer; a sum, or an average (exact: the mean of
 * 1..size is a multiple of 1/2). */
static void check_allreduce(int64_t n, const char* name, int32_t op, int out_of_place) {
  const int rank = hvd_rank(), size = hvd_size();
  float* x = malloc((size_t)n * sizeof(float));
  float* y = out_of_place ? malloc((size_t)n * sizeof(float)) : x;
  for (int64_t i = 0; i < n; ++i) x[i] = (float)(rank + 1) + (float)(i % 7);
  hvd_tensor_t t = vec(x, HVD_FLOAT32, &n);
  hvd_handle_t h;
  CHECK(hvd_allreduce_async(&t, y, op, name, NULL, &h));
  run(h);
  CHECK(hvd_handle_free(h));
  for (int64_t i = 0; i < n; ++i) {
    float want = (float)(size * (size + 1) / 2) + (float)(size * (i % 7));
    if (op == HVD_OP_AVERAGE) want /= (float)size;
    EXPECT(y[i] == want, "%s[%lld] = %g, want %g", name, (long long)i, y[i], want);
    if (out_of_place) {
      EXPECT(x[i] == (float)(rank + 1) + (float)(i % 7), "%s input [%lld] changed", name,
             (long long)i);
    }
  }
  if (out_of_place) free(y);
  free(x);
}

/* Rank r contributes r + 1 rows of value r; the result is every rank's rows in rank order. */
static void check_allgather(void) {
  const int rank = hvd_rank(), size = hvd_size();
  int32_t rows[64];
  int64_t n = rank + 1;
  for (int i = 0; i < n; ++i) rows[i] = rank;
  hvd_tensor_t t = vec(rows, HVD_INT32, &n);
  hvd_handle_t h;
  CHECK(hvd_allgather_async(&t, "mh.allgather", NULL, &h));
  run(h);
  hvd_tensor_t out;
  CHECK(hvd_handle_output(h, &out));
  const int32_t* got = out.data;
  int64_t k = 0;
  for (int r = 0; r < size; ++r) {
    for (int i = 0; i <= r; ++i, ++k)
      EXPECT(got[k] == r, "allgather[%lld] = %d", (long long)k, got[k]);
  }
  EXPECT(out.shape[0] == k, "allgather rows %lld", (long long)out.shape[0]);
  CHECK(hvd_handle_free(h));
}

static void check_broadcast(void) {
  const int root = hvd_size() - 1;
  int64_t n = 1000;
  double x[1000];
  for (int i = 0; i < n; ++i) x[i] = hvd_rank() == root ? i * 0.5 : -1;
  hvd_tensor_t t = vec(x, HVD_FLOAT64, &n);
  hvd_handle_t h;
  CHECK(hvd_broadcast_async(&t, x, root, "mh.broadcast", NULL, &h));
  run(h);
  CHECK(hvd_handle_free(h));
  for (int i = 0; i < n; ++i) EXPECT(x[i] == i * 0.5, "broadcast[%d] = %g", i, x[i]);
}

/* Rank r sends (r + d) % 3 rows of value 100 r + d to rank d. */
static void check_alltoall(void) {
  const int rank = hvd_rank(), size = hvd_size();
  int32_t splits[64], send[256];
  int64_t n = 0;
  for (int d = 0; d < size; ++d) {
    splits[d] = (rank + d) % 3;
    for (int i = 0; i < splits[d]; ++i) send[n++] = 100 * rank + d;
  }
  hvd_tensor_t t = vec(send, HVD_INT32, &n);
  hvd_handle_t h;
  CHECK(hvd_alltoall_async(&t, splits, "mh.alltoall", NULL, &h));
  run(h);
  hvd_tensor_t out;
  CHECK(hvd_handle_output(h, &out));
  const int32_t* got = out.data;
  int64_t k = 0;
  for (int s = 0; s < size; ++s) {
    for (int i = 0; i < (s + rank) % 3; ++i, ++k) {
      EXPECT(got[k] == 100 * s + rank, "alltoall[%lld] = %d", (long long)k, got[k]);
    }
  }
  EXPECT(out.shape[0] == k, "alltoall rows %lld", (long long)out.shape[0]);
  CHECK(hvd_handle_free(h));
}

/* size + 1 rows of ones summed: rank 0 gets 2 rows, the others 1, each equal to size. */
static void check_reducescatter(void) {
  const int rank = hvd_rank(), size = hvd_size();
  int64_t shape[2] = {size + 1, 3};
  float in[64 * 3], out[2 * 3];
  for (int i = 0; i < (size + 1) * 3; ++i) in[i] = 1.0f;
  hvd_tensor_t t = {in, HVD_FLOAT32, 2, shape, {HVD_DEVICE_CPU, 0}};
  hvd_handle_t h;
  CHECK(hvd_reducescatter_async(&t, out, HVD_OP_SUM, "mh.reducescatter", NULL, &h));
  run(h);
  CHECK(hvd_handle_free(h));
  const int rows = rank == 0 ? 2 : 1;
  for (int i = 0; i < rows * 3; ++i)
    EXPECT(out[i] == (float)size, "reducescatter[%d] = %g", i, out[i]);
}

int main(int argc, char** argv) {
  const int per_host = argc > 1 ? atoi(argv[1]) : 1;
  const int64_t large = argc > 2 ? atoll(argv[2]) : (int64_t)4 << 20;
  CHECK(hvd_init());
  check_topology(per_host);
  check_allreduce(1000, "mh.allreduce.small", HVD_OP_SUM, 0);
  check_allgather();
  check_broadcast();
  check_alltoall();
  check_reducescatter();
  hvd_handle_t h;
  CHECK(hvd_barrier_async("mh.barrier", NULL, &h));
  run(h);
  CHECK(hvd_handle_free(h));
  check_allreduce(large, "mh.allreduce.large", HVD_OP_SUM, 0);
  check_allreduce(large, "mh.allreduce.average", HVD_OP_AVERAGE, 1);
  struct stat ns;
  const long long inode = stat("/proc/self/ns/net", &ns) == 0 ? (long long)ns.st_ino : -1;
  printf("multihost rank %d of %d: local %d/%d cross %d/%d netns %lld: ok\n", hvd_rank(),
         hvd_size(), hvd_local_rank(), hvd_local_size(), hvd_cross_rank(), hvd_cross_size(), inode);
  fflush(stdout);
  CHECK(hvd_shutdown());
  return 0;
}
