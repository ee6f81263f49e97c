/* The ABI consumer's checks of allgather, broadcast, barrier, alltoall, reducescatter, grouped
 * allreduce, hvd_handle_output, process sets, statistics and the timeline, as a single rank
 * (hvd_init must have succeeded). C99 like the rest of the consumer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_check.h"
#include "c_consumer.h"

static void* allocate(void* user_data, const hvd_tensor_t* output, size_t bytes) {
  int* calls = (int*)user_data;
  ++*calls;
  CHECK(output != NULL && output->ndim == 2 && output->shape[0] == 3 && output->shape[1] == 2);
  return malloc(bytes);
}

static void* refuse(void* user_data, const hvd_tensor_t* output, size_t bytes) {
  (void)user_data;
  (void)output;
  (void)bytes;
  return NULL;
}

static void test_allgather(void) {
  int32_t data[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {3, 2};
  hvd_tensor_t t = {data, HVD_INT32, 2, shape, {HVD_DEVICE_CPU, 0}};
  hvd_tensor_t out;
  hvd_handle_t h = 0;
  int calls = 0;
  hvd_op_args_t args;

  EXPECT_OK(hvd_allgather_async(&t, "abi.gather", NULL, &h));
  EXPECT_ERR(hvd_handle_output(h, NULL), HVD_ERR_INVALID_ARGUMENT, "output");
  EXPECT_OK(hvd_wait(h));
  EXPECT_OK(hvd_handle_output(h, &out));
  CHECK(out.ndim == 2 && out.shape[0] == 3 && out.shape[1] == 2 && out.dtype == HVD_INT32);
  CHECK(out.data != NULL && out.data != (void*)data && memcmp(out.data, data, sizeof(data)) == 0);
  EXPECT_OK(hvd_handle_free(h));
  EXPECT_ERR(hvd_handle_output(h, &out), HVD_ERR_INVALID_HANDLE, "handle");

  hvd_op_args_init(&args, sizeof(args));
  args.alloc = allocate;
  args.alloc_user_data = &calls;
  EXPECT_OK(hvd_allgather_async(&t, "abi.gather.alloc", &args, &h));
  EXPECT_OK(hvd_wait(h));
  EXPECT_OK(hvd_handle_output(h, &out));
  CHECK(calls == 1 && memcmp(out.data, data, sizeof(data)) == 0);
  free(out.data);
  EXPECT_OK(hvd_handle_free(h));

  args.alloc = refuse;
  EXPECT_OK(hvd_allgather_async(&t, "abi.gather.refused", &args, &h));
  EXPECT_ERR(hvd_wait(h), HVD_ERR_OUT_OF_MEMORY, "allocator");
  EXPECT_ERR(hvd_handle_output(h, &out), HVD_ERR_OUT_OF_MEMORY, "allocator");
  EXPECT_OK(hvd_handle_free(h));

  t.ndim = 0;
  EXPECT_ERR(hvd_allgather_async(&t, "abi.gather.scalar", NULL, &h), HVD_ERR_INVALID_ARGUMENT,
             "ndim");
}

static void test_broadcast_and_barrier(void) {
  float in[4] = {1, 2, 3, 4}, out[4] = {0, 0, 0, 0};
  int64_t shape[1] = {4};
  hvd_tensor_t t = {in, HVD_FLOAT32, 1, shape, {HVD_DEVICE_CPU, 0}};
  hvd_tensor_t none;
  hvd_handle_t h = 0;

  EXPECT_OK(hvd_broadcast_async(&t, out, 0, "abi.bcast", NULL, &h));
  EXPECT_OK(hvd_wait(h));
  CHECK(memcmp(in, out, sizeof(in)) == 0);
  EXPECT_ERR(hvd_handle_output(h, &none), HVD_ERR_INVALID_USAGE, "allgather");
  EXPECT_OK(hvd_handle_free(h));
  EXPECT_ERR(hvd_broadcast_async(&t, out, 1, "abi.bcast.root", NULL, &h), HVD_ERR_INVALID_ARGUMENT,
             "root_rank");
  EXPECT_ERR(hvd_broadcast_async(&t, out, -1, "abi.bcast.root", NULL, &h), HVD_ERR_INVALID_ARGUMENT,
             "root_rank");

  EXPECT_OK(hvd_barrier_async(NULL, NULL, &h));
  EXPECT_OK(hvd_wait(h));
  EXPECT_OK(hvd_handle_free(h));
  EXPECT_ERR(hvd_barrier_async(NULL, NULL, NULL), HVD_ERR_INVALID_ARGUMENT, "handle");
}

static void test_split_and_grouped(void) {
  int32_t data[6] = {1, 2, 3, 4, 5, 6}, out[6] = {0, 0, 0, 0, 0, 0}, splits[1] = {3};
  int32_t received[1] = {-1};
  int64_t shape[2] = {3, 2};
  hvd_tensor_t t = {data, HVD_INT32, 2, shape, {HVD_DEVICE_CPU, 0}};
  hvd_tensor_t got;
  hvd_tensor_t group[2];
  void* outs[2];
  const char* names[2] = {"abi.grp.a", "abi.grp.b"};
  hvd_handle_t h = 0;

  EXPECT_OK(hvd_alltoall_async(&t, splits, "abi.a2a", NULL, &h));
  EXPECT_ERR(hvd_handle_received_splits(h, NULL, 1), HVD_ERR_INVALID_ARGUMENT, "splits");
  EXPECT_OK(hvd_wait(h));
  EXPECT_OK(hvd_handle_output(h, &got));
  CHECK(got.ndim == 2 && got.shape[0] == 3 && memcmp(got.data, data, sizeof(data)) == 0);
  EXPECT_ERR(hvd_handle_received_splits(h, received, 2), HVD_ERR_INVALID_ARGUMENT, "count");
  EXPECT_OK(hvd_handle_received_splits(h, received, 1));
  CHECK(received[0] == 3);
  EXPECT_OK(hvd_handle_free(h));
  splits[0] = 2;
  EXPECT_ERR(hvd_alltoall_async(&t, splits, "abi.a2a", NULL, &h), HVD_ERR_INVALID_ARGUMENT,
             "splits");

  EXPECT_OK(hvd_reducescatter_async(&t, out, HVD_OP_SUM, "abi.rs", NULL, &h));
  EXPECT_OK(hvd_wait(h));
  EXPECT_ERR(hvd_handle_received_splits(h, received, 1), HVD_ERR_INVALID_USAGE, "alltoall");
  EXPECT_OK(hvd_handle_free(h));
  CHECK(memcmp(out, data, sizeof(data)) == 0);
  EXPECT_ERR(hvd_reducescatter_async(&t, out, HVD_OP_MAX, "abi.rs", NULL, &h),
             HVD_ERR_INVALID_ARGUMENT, "reduce_op");

  group[0] = t;
  group[1] = t;
  outs[0] = out;
  outs[1] = data;
  EXPECT_OK(hvd_grouped_allreduce_async(group, outs, 2, HVD_OP_SUM, names, NULL, &h));
  EXPECT_OK(hvd_wait(h));
  EXPECT_OK(hvd_handle_free(h));
  EXPECT_ERR(hvd_grouped_allreduce_async(group, outs, 0, HVD_OP_SUM, NULL, NULL, &h),
             HVD_ERR_INVALID_ARGUMENT, "count");
  names[1] = names[0];
  EXPECT_ERR(hvd_grouped_allreduce_async(group, outs, 2, HVD_OP_SUM, names, NULL, &h),
             HVD_ERR_DUPLICATE_NAME, "abi.grp.a");
}

static void test_join(void) {
  int32_t last = -1;
  EXPECT_OK(hvd_join(&last));
  CHECK(last == 0); /* one rank: it is the last to join */
  EXPECT_OK(hvd_join(NULL));
}

/* One rank: set 0 = {0} is the only set there can be, so every create fails. */
static void test_process_sets(void) {
  int32_t ids[4] = {-5, -5, -5, -5}, ranks[4] = {-5, -5, -5, -5};
  int32_t count = -5, value = -5, id = -5;
  const int32_t zero[1] = {0}, one[1] = {1}, twice[2] = {0, 0};
  float data[2] = {1, 2}, out[2] = {0, 0};
  int64_t shape[1] = {2};
  hvd_tensor_t t = {data, HVD_FLOAT32, 1, shape, {HVD_DEVICE_CPU, 0}};
  hvd_handle_t h = 0;
  hvd_op_args_t args;

  EXPECT_OK(hvd_process_set_ids(NULL, 0, &count));
  CHECK(count == 1);
  EXPECT_OK(hvd_process_set_ids(ids, 4, &count));
  CHECK(count == 1 && ids[0] == 0 && ids[1] == -5);
  EXPECT_ERR(hvd_process_set_ids(ids, 0, &count), HVD_ERR_INVALID_ARGUMENT, "capacity");
  EXPECT_ERR(hvd_process_set_ids(ids, 4, NULL), HVD_ERR_INVALID_ARGUMENT, "count");

  EXPECT_OK(hvd_process_set_rank(0, &value));
  CHECK(value == 0);
  EXPECT_OK(hvd_process_set_size(0, &value));
  CHECK(value == 1);
  EXPECT_OK(hvd_process_set_included(0, &value));
  CHECK(value == 1);
  count = -5;
  EXPECT_OK(hvd_process_set_ranks(0, NULL, 0, &count));
  CHECK(count == 1);
  EXPECT_OK(hvd_process_set_ranks(0, ranks, 4, &count));
  CHECK(count == 1 && ranks[0] == 0 && ranks[1] == -5);
  EXPECT_ERR(hvd_process_set_ranks(0, ranks, 0, &count), HVD_ERR_INVALID_ARGUMENT, "capacity");
  value = -5;
  EXPECT_ERR(hvd_process_set_rank(7, &value), HVD_ERR_INVALID_ARGUMENT, "7");
  EXPECT_ERR(hvd_process_set_size(7, &value), HVD_ERR_INVALID_ARGUMENT, "7");
  EXPECT_ERR(hvd_process_set_included(7, &value), HVD_ERR_INVALID_ARGUMENT, "7");
  EXPECT_ERR(hvd_process_set_ranks(7, ranks, 4, &count), HVD_ERR_INVALID_ARGUMENT, "7");
  CHECK(value == -5); /* outputs are written only on success */
  EXPECT_ERR(hvd_process_set_rank(0, NULL), HVD_ERR_INVALID_ARGUMENT, NULL);

  /* {0} is set 0; bad input fails before anything is enqueued. */
  EXPECT_ERR(hvd_process_set_create(zero, 1, &id), HVD_ERR_INVALID_ARGUMENT, NULL);
  EXPECT_ERR(hvd_process_set_create(NULL, 1, &id), HVD_ERR_INVALID_ARGUMENT, "ranks");
  EXPECT_ERR(hvd_process_set_create(zero, 1, NULL), HVD_ERR_INVALID_ARGUMENT, "id");
  EXPECT_ERR(hvd_process_set_create(zero, 0, &id), HVD_ERR_INVALID_ARGUMENT, "count");
  EXPECT_ERR(hvd_process_set_create(one, 1, &id), HVD_ERR_INVALID_ARGUMENT, "ranks");
  EXPECT_ERR(hvd_process_set_create(twice, 2, &id), HVD_ERR_INVALID_ARGUMENT, "ranks");
  CHECK(id == -5);
  EXPECT_ERR(hvd_process_set_destroy(0), HVD_ERR_INVALID_ARGUMENT, NULL);
  EXPECT_ERR(hvd_process_set_destroy(7), HVD_ERR_INVALID_ARGUMENT, "7");

  /* Collectives name their set in the args: 0 works, an unknown one fails at the call. */
  hvd_op_args_init(&args, sizeof(args));
  args.process_set = 0;
  EXPECT_OK(hvd_allreduce_async(&t, out, HVD_OP_AVERAGE, "abi.set0", &args, &h));
  EXPECT_OK(hvd_wait(h));
  EXPECT_OK(hvd_handle_free(h));
  CHECK(out[0] == 1 && out[1] == 2);
  args.process_set = 3;
  h = 0;
  EXPECT_ERR(hvd_allreduce_async(&t, out, HVD_OP_SUM, "abi.set3", &args, &h),
             HVD_ERR_INVALID_ARGUMENT, "process set 3");
  EXPECT_ERR(hvd_barrier_async("abi.set3.barrier", &args, &h), HVD_ERR_INVALID_ARGUMENT,
             "process set 3");
  CHECK(h == 0);
}

static void test_stats(void) {
  hvd_stats_t stats;
  char text[1024];
  size_t length = 0;

  memset(&stats, 0, sizeof(stats));
  EXPECT_ERR(hvd_stats_get(NULL), HVD_ERR_INVALID_ARGUMENT, "stats");
  EXPECT_ERR(hvd_stats_get(&stats), HVD_ERR_INVALID_ARGUMENT, "struct_size");
  stats.struct_size = sizeof(stats);
  EXPECT_OK(hvd_stats_get(&stats));
  /* The ops above ran as a single rank: every tensor completed, none through a peer. */
  CHECK(stats.struct_size == sizeof(stats) && stats.collectives > 0 && stats.tensors > 0);
  CHECK(stats.coordinator_requests == 0 && stats.rounds > 0);
  CHECK(stats.cache_hits + stats.cache_misses >= stats.tensors);

  {
    char report[1024];
    size_t report_length = 0;
    EXPECT_OK(hvd_dump_pending(NULL, 0, &report_length));
    CHECK(report_length > 0);
    EXPECT_OK(hvd_dump_pending(report, sizeof(report), &report_length));
    CHECK(strstr(report, "0 ops in flight") != NULL);
    EXPECT_ERR(hvd_dump_pending(report, 4, NULL), HVD_ERR_INVALID_ARGUMENT, "size");
  }
  EXPECT_OK(hvd_stats_format(NULL, 0, &length));
  CHECK(length > 0 && length < sizeof(text));
  EXPECT_ERR(hvd_stats_format(text, length, NULL), HVD_ERR_INVALID_ARGUMENT, "size");
  EXPECT_ERR(hvd_stats_format(NULL, 10, NULL), HVD_ERR_INVALID_ARGUMENT, "buffer");
  EXPECT_OK(hvd_stats_format(text, sizeof(text), &length));
  CHECK(strlen(text) == length && strstr(text, "cache_hits") != NULL);
}

static void test_timeline(void) {
  const char* path = "abi_consumer_timeline.json";
  FILE* f = NULL;
  char head[2] = {0, 0};
  EXPECT_ERR(hvd_timeline_start(NULL), HVD_ERR_INVALID_ARGUMENT, "path");
  EXPECT_ERR(hvd_timeline_start(""), HVD_ERR_INVALID_ARGUMENT, "path");
  EXPECT_ERR(hvd_timeline_start("/nonexistent-dir/t.json"), HVD_ERR_SYSTEM, "nonexistent-dir");
  EXPECT_OK(hvd_timeline_start(path));
  EXPECT_OK(hvd_timeline_stop());
  EXPECT_OK(hvd_timeline_stop()); /* stopping twice is harmless */
  f = fopen(path, "r");
  CHECK(f != NULL);
  if (f != NULL) {
    CHECK(fread(head, 1, 1, f) == 1 && head[0] == '[');
    fclose(f);
  }
  remove(path);
}

void test_gather_broadcast_barrier(void) {
  test_allgather();
  test_broadcast_and_barrier();
  test_split_and_grouped();
  test_join();
  test_stats();
  test_timeline();
  test_process_sets(); /* last: its internal create op does not disturb test_stats's counts */
}
