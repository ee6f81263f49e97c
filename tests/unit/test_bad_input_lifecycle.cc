// The bad-input matrix, continued (test_bad_input.cc has the collectives and handles): calls
// before hvd_init and after hvd_shutdown, configuration, process sets, reports (dump, stats,
// timeline), join, abort, the asynchronous error, op arguments and DLPack conversion.
#include <cmath>
#include <cstdint>
#include <string>

#include "bad_input.h"

namespace {

using namespace hvdc_test;

const int64_t kShape1[1] = {1};
float g_x[4], g_y[4];

// Every function that needs the engine, called with valid arguments, and its name.
struct EngineCall {
  const char* label;
  hvd_status_t (*call)();
};

const EngineCall kEngineCalls[] = {
    {"allreduce",
     [] {
       hvd_tensor_t t = tensor(g_x, HVD_FLOAT32, 1, kShape1);
       hvd_handle_t h = 0;
       return hvd_allreduce_async(&t, g_y, HVD_OP_SUM, "ni", nullptr, &h);
     }},
    {"allgather",
     [] {
       hvd_tensor_t t = tensor(g_x, HVD_FLOAT32, 1, kShape1);
       hvd_handle_t h = 0;
       return hvd_allgather_async(&t, "ni", nullptr, &h);
     }},
    {"broadcast",
     [] {
       hvd_tensor_t t = tensor(g_x, HVD_FLOAT32, 1, kShape1);
       hvd_handle_t h = 0;
       return hvd_broadcast_async(&t, g_y, 0, "ni", nullptr, &h);
     }},
    {"alltoall",
     [] {
       hvd_tensor_t t = tensor(g_x, HVD_FLOAT32, 1, kShape1);
       hvd_handle_t h = 0;
       return hvd_alltoall_async(&t, nullptr, "ni", nullptr, &h);
     }},
    {"reducescatter",
     [] {
       hvd_tensor_t t = tensor(g_x, HVD_FLOAT32, 1, kShape1);
       hvd_handle_t h = 0;
       return hvd_reducescatter_async(&t, g_y, HVD_OP_SUM, "ni", nullptr, &h);
     }},
    {"grouped",
     [] {
       hvd_tensor_t t = tensor(g_x, HVD_FLOAT32, 1, kShape1);
       void* outs[1] = {g_y};
       hvd_handle_t h = 0;
       return hvd_grouped_allreduce_async(&t, outs, 1, HVD_OP_SUM, nullptr, nullptr, &h);
     }},
    {"barrier",
     [] {
       hvd_handle_t h = 0;
       return hvd_barrier_async("ni", nullptr, &h);
     }},
    {"join", [] { return hvd_join(nullptr); }},
    {"process_set_create",
     [] {
       const int32_t ranks[1] = {0};
       int32_t id = 0;
       return hvd_process_set_create(ranks, 1, &id);
     }},
    {"process_set_destroy", [] { return hvd_process_set_destroy(1); }},
    {"process_set_rank",
     [] {
       int32_t v = 0;
       return hvd_process_set_rank(0, &v);
     }},
    {"process_set_size",
     [] {
       int32_t v = 0;
       return hvd_process_set_size(0, &v);
     }},
    {"process_set_included",
     [] {
       int32_t v = 0;
       return hvd_process_set_included(0, &v);
     }},
    {"process_set_ranks",
     [] {
       int32_t ranks[4], count = 0;
       return hvd_process_set_ranks(0, ranks, 4, &count);
     }},
    {"process_set_ids",
     [] {
       int32_t ids[4], count = 0;
       return hvd_process_set_ids(ids, 4, &count);
     }},
    {"abort", [] { return hvd_abort("reason"); }},
    {"get_async_error",
     [] {
       hvd_status_t s = 0;
       return hvd_get_async_error(&s);
     }},
    {"dump_pending",
     [] {
       size_t length = 0;
       return hvd_dump_pending(nullptr, 0, &length);
     }},
    {"timeline_start", [] { return hvd_timeline_start("/tmp/hvdc-bad-input-timeline.json"); }},
    {"timeline_stop", [] { return hvd_timeline_stop(); }},
    {"stats_get",
     [] {
       hvd_stats_t stats = {};
       stats.struct_size = sizeof(stats);
       return hvd_stats_get(&stats);
     }},
    {"stats_format",
     [] {
       size_t length = 0;
       return hvd_stats_format(nullptr, 0, &length);
     }},
};

// Without an engine: each call fails with HVD_ERR_NOT_INITIALIZED, the queries give -1, and
// what needs no engine still works.
void expect_no_engine() {
  for (const EngineCall& c : kEngineCalls) {
    EXPECT_FAILS(c.call(), HVD_ERR_NOT_INITIALIZED, "not initialized", "hvd_init") << c.label;
  }
  EXPECT_EQ(hvd_is_initialized(), 0);
  for (auto query :
       {hvd_rank, hvd_size, hvd_local_rank, hvd_local_size, hvd_cross_rank, hvd_cross_size}) {
    EXPECT_EQ(query(), -1);
  }
  EXPECT_FAILS(hvd_wait(0xdeadbeef), HVD_ERR_INVALID_HANDLE, "handle 0xdeadbeef");
  EXPECT_EQ(hvd_shutdown(), HVD_SUCCESS);  // nothing to shut down: harmless
  hvd_op_args_t args;
  EXPECT_EQ(hvd_op_args_init(&args, sizeof(args)), HVD_SUCCESS);
  EXPECT_STREQ(hvd_status_string(-999), "unknown status");
  EXPECT_EQ(hvd_has_feature(-1), 0);
  EXPECT_EQ(hvd_has_feature(99), 0);
}

TEST(BadInputNoEngine, BeforeInitAndAfterShutdown) {
  ASSERT_EQ(hvd_is_initialized(), 0);
  expect_no_engine();
  ASSERT_EQ(init_singleton(), HVD_SUCCESS) << hvd_last_error_message();
  EXPECT_FAILS(init_singleton(), HVD_ERR_INVALID_USAGE, "already initialized");
  EXPECT_FAILS(hvd_init(), HVD_ERR_INVALID_USAGE, "already initialized");
  expect_allreduce_works("lifecycle");
  ASSERT_EQ(hvd_shutdown(), HVD_SUCCESS);
  expect_no_engine();
  ASSERT_EQ(init_singleton(), HVD_SUCCESS) << hvd_last_error_message();
  expect_allreduce_works("lifecycle");  // a name used by the previous engine is free again
  ASSERT_EQ(hvd_shutdown(), HVD_SUCCESS);
}

TEST(BadInputNoEngine, Config) {
  hvd_config_t* config = nullptr;
  EXPECT_FAILS(hvd_config_create(nullptr), HVD_ERR_INVALID_ARGUMENT, "out is NULL");
  ASSERT_EQ(hvd_config_create(&config), HVD_SUCCESS);
  EXPECT_FAILS(hvd_config_set_int(nullptr, HVD_CFG_LOG_LEVEL, 2), HVD_ERR_INVALID_ARGUMENT,
               "config is NULL");
  EXPECT_FAILS(hvd_config_set_str(nullptr, HVD_CFG_HOSTNAME, "h"), HVD_ERR_INVALID_ARGUMENT,
               "config is NULL");
  EXPECT_FAILS(hvd_config_set_str(config, HVD_CFG_HOSTNAME, nullptr), HVD_ERR_INVALID_ARGUMENT,
               "value is NULL");
  for (int32_t key : {-1, HVD_CFG_IFACE + 1, 1000, INT32_MIN}) {
    const std::string k = "key " + std::to_string(key);
    EXPECT_FAILS(hvd_config_set_int(config, key, 1), HVD_ERR_UNSUPPORTED, k);
    EXPECT_FAILS(hvd_config_set_str(config, key, "1"), HVD_ERR_UNSUPPORTED, k);
  }
  EXPECT_FAILS(hvd_config_set_int(config, HVD_CFG_HOSTNAME, 1), HVD_ERR_INVALID_ARGUMENT, "key 1",
               "hvd_config_set_str");
  EXPECT_FAILS(hvd_config_set_str(config, HVD_CFG_LOG_LEVEL, "info"), HVD_ERR_INVALID_ARGUMENT,
               "key 0", "hvd_config_set_int");
  EXPECT_FAILS(hvd_config_set_int(config, HVD_CFG_LOG_LEVEL, 9), HVD_ERR_INVALID_ARGUMENT,
               "HVDC_LOG_LEVEL", "'9'");
  EXPECT_FAILS(hvd_config_set_int(config, HVD_CFG_SPIN_MICROS, -5), HVD_ERR_INVALID_ARGUMENT,
               "HVDC_SPIN_MICROS", "'-5'");
  EXPECT_FAILS(hvd_config_set_int(config, HVD_CFG_MASTER_PORT, 70000), HVD_ERR_INVALID_ARGUMENT,
               "HVDC_MASTER_PORT", "'70000'");
  EXPECT_FAILS(hvd_config_set_str(config, HVD_CFG_BOOTSTRAP, "carrier-pigeon"),
               HVD_ERR_INVALID_ARGUMENT, "HVDC_BOOTSTRAP", "'carrier-pigeon'");
  // A value each setter accepts can still be wrong for this job: init fails, naming it.
  ASSERT_EQ(hvd_config_set_str(config, HVD_CFG_BOOTSTRAP, "singleton"), HVD_SUCCESS);
  ASSERT_EQ(hvd_config_set_str(config, HVD_CFG_PROCESS_SETS, "0,5"), HVD_SUCCESS);
  EXPECT_FAILS(hvd_init_with_config(config), HVD_ERR_INVALID_ARGUMENT, "HVDC_PROCESS_SETS", "5");
  EXPECT_EQ(hvd_is_initialized(), 0);
  hvd_config_destroy(config);
  hvd_config_destroy(nullptr);  // like free(NULL)
  EXPECT_EQ(hvd_set_log_callback(nullptr, nullptr), HVD_SUCCESS);
}

TEST(BadInputNoEngine, OpArgsAndDlpack) {
  hvd_op_args_t args;
  EXPECT_FAILS(hvd_op_args_init(nullptr, sizeof(args)), HVD_ERR_INVALID_ARGUMENT, "args is NULL");
  for (size_t size : {size_t{0}, size_t{3}}) {
    EXPECT_FAILS(hvd_op_args_init(&args, size), HVD_ERR_INVALID_ARGUMENT,
                 "struct_size " + std::to_string(size));
  }
  int64_t shape[2] = {2, 3}, strides[2] = {1, 2};
  hvd_dl_tensor_t dl = {g_x, {HVD_DEVICE_CPU, 0}, 2, {2, 32, 1}, shape, nullptr, 0};
  hvd_tensor_t out = {};
  EXPECT_FAILS(hvd_tensor_from_dlpack(nullptr, &out), HVD_ERR_INVALID_ARGUMENT, "dl is NULL");
  EXPECT_FAILS(hvd_tensor_from_dlpack(&dl, nullptr), HVD_ERR_INVALID_ARGUMENT, "out is NULL");
  for (int32_t ndim : {-1, HVD_MAX_NDIM + 1}) {
    hvd_dl_tensor_t bad = dl;
    bad.ndim = ndim;
    EXPECT_FAILS(hvd_tensor_from_dlpack(&bad, &out), HVD_ERR_INVALID_ARGUMENT,
                 "dl->ndim " + std::to_string(ndim));
  }
  hvd_dl_tensor_t bad = dl;
  bad.shape = nullptr;
  EXPECT_FAILS(hvd_tensor_from_dlpack(&bad, &out), HVD_ERR_INVALID_ARGUMENT, "dl->shape");
  bad = dl;
  bad.dtype.code = 3;
  EXPECT_FAILS(hvd_tensor_from_dlpack(&bad, &out), HVD_ERR_INVALID_ARGUMENT, "dl->dtype", "code 3");
  bad = dl;
  bad.dtype.lanes = 4;
  EXPECT_FAILS(hvd_tensor_from_dlpack(&bad, &out), HVD_ERR_INVALID_ARGUMENT, "lanes 4");
  bad = dl;
  bad.strides = strides;
  EXPECT_FAILS(hvd_tensor_from_dlpack(&bad, &out), HVD_ERR_INVALID_ARGUMENT, "dl->strides[1]", "2");
  EXPECT_EQ(out.data, nullptr);
}

TEST_F(BadInput, ProcessSetCreateAndDestroy) {
  int32_t id = -7;
  const int32_t zero[1] = {0}, one[1] = {1}, minus[1] = {-1}, twice[2] = {0, 0};
  EXPECT_FAILS(hvd_process_set_create(nullptr, 1, &id), HVD_ERR_INVALID_ARGUMENT, "ranks is NULL");
  EXPECT_FAILS(hvd_process_set_create(zero, 1, nullptr), HVD_ERR_INVALID_ARGUMENT, "id is NULL");
  for (int32_t count : {0, -1, INT32_MIN}) {
    EXPECT_FAILS(hvd_process_set_create(zero, count, &id), HVD_ERR_INVALID_ARGUMENT,
                 "count is " + std::to_string(count));
  }
  // More ranks than exist: rejected before count entries are read from a 1-entry array.
  EXPECT_FAILS(hvd_process_set_create(zero, INT32_MAX, &id), HVD_ERR_INVALID_ARGUMENT,
               "count 2147483647", "ranks (1)");
  EXPECT_FAILS(hvd_process_set_create(twice, 2, &id), HVD_ERR_INVALID_ARGUMENT, "count 2");
  EXPECT_FAILS(hvd_process_set_create(one, 1, &id), HVD_ERR_INVALID_ARGUMENT, "ranks[0] = 1",
               "[0, 1)");
  EXPECT_FAILS(hvd_process_set_create(minus, 1, &id), HVD_ERR_INVALID_ARGUMENT, "ranks[0] = -1");
  EXPECT_EQ(id, -7);
  EXPECT_FAILS(hvd_process_set_destroy(0), HVD_ERR_INVALID_ARGUMENT, "id 0");
  for (int32_t bad : {1, 5, -1, INT32_MAX, INT32_MIN}) {
    EXPECT_FAILS(hvd_process_set_destroy(bad), HVD_ERR_INVALID_ARGUMENT, "id",
                 "process set " + std::to_string(bad) + " does not exist");
  }
}

TEST_F(BadInput, ProcessSetQueries) {
  int32_t v = -7, buf[4] = {-7, -7, -7, -7}, count = -7;
  for (int32_t id : {1, 5, -1, INT32_MAX, INT32_MIN}) {
    const std::string what = "process set " + std::to_string(id) + " does not exist";
    EXPECT_FAILS(hvd_process_set_rank(id, &v), HVD_ERR_INVALID_ARGUMENT, "id", what);
    EXPECT_FAILS(hvd_process_set_size(id, &v), HVD_ERR_INVALID_ARGUMENT, "id", what);
    EXPECT_FAILS(hvd_process_set_included(id, &v), HVD_ERR_INVALID_ARGUMENT, "id", what);
    EXPECT_FAILS(hvd_process_set_ranks(id, buf, 4, &count), HVD_ERR_INVALID_ARGUMENT, "id", what);
  }
  EXPECT_FAILS(hvd_process_set_rank(0, nullptr), HVD_ERR_INVALID_ARGUMENT, "rank is NULL");
  EXPECT_FAILS(hvd_process_set_size(0, nullptr), HVD_ERR_INVALID_ARGUMENT, "size is NULL");
  EXPECT_FAILS(hvd_process_set_included(0, nullptr), HVD_ERR_INVALID_ARGUMENT, "included is NULL");
  EXPECT_FAILS(hvd_process_set_ranks(0, buf, 4, nullptr), HVD_ERR_INVALID_ARGUMENT,
               "count is NULL");
  EXPECT_FAILS(hvd_process_set_ids(buf, 4, nullptr), HVD_ERR_INVALID_ARGUMENT, "count is NULL");
  EXPECT_FAILS(hvd_process_set_ranks(0, buf, -1, &count), HVD_ERR_INVALID_ARGUMENT,
               "capacity is negative (-1)");
  EXPECT_FAILS(hvd_process_set_ids(buf, INT32_MIN, &count), HVD_ERR_INVALID_ARGUMENT,
               "capacity is negative (-2147483648)");
  EXPECT_FAILS(hvd_process_set_ranks(0, buf, 0, &count), HVD_ERR_INVALID_ARGUMENT, "capacity 0");
  EXPECT_FAILS(hvd_process_set_ids(buf, 0, &count), HVD_ERR_INVALID_ARGUMENT, "capacity 0");
  EXPECT_FAILS(hvd_process_set_ranks(0, nullptr, 4, &count), HVD_ERR_INVALID_ARGUMENT,
               "ranks is NULL with capacity 4");
  EXPECT_FAILS(hvd_process_set_ids(nullptr, 4, &count), HVD_ERR_INVALID_ARGUMENT,
               "ids is NULL with capacity 4");
  EXPECT_EQ(v, -7);
  EXPECT_EQ(count, -7);
  EXPECT_EQ(buf[0], -7);
  // NULL with capacity 0 asks for the count.
  EXPECT_EQ(hvd_process_set_ranks(0, nullptr, 0, &count), HVD_SUCCESS);
  EXPECT_EQ(count, 1);
}

TEST_F(BadInput, Reports) {
  char text[8] = "";
  size_t length = 0;
  EXPECT_FAILS(hvd_dump_pending(nullptr, 10, &length), HVD_ERR_INVALID_ARGUMENT, "buffer is NULL");
  EXPECT_FAILS(hvd_dump_pending(text, 1, nullptr), HVD_ERR_INVALID_ARGUMENT, "size 1");
  EXPECT_FAILS(hvd_stats_format(nullptr, 10, &length), HVD_ERR_INVALID_ARGUMENT, "buffer is NULL");
  EXPECT_FAILS(hvd_stats_format(text, sizeof(text), nullptr), HVD_ERR_INVALID_ARGUMENT, "size 8");
  EXPECT_STREQ(text, "");  // nothing written on failure
  EXPECT_FAILS(hvd_stats_get(nullptr), HVD_ERR_INVALID_ARGUMENT, "stats is NULL");
  hvd_stats_t stats = {};
  for (uint32_t size : {0u, 7u}) {
    stats.struct_size = size;
    EXPECT_FAILS(hvd_stats_get(&stats), HVD_ERR_INVALID_ARGUMENT,
                 "stats->struct_size " + std::to_string(size));
  }
  stats.struct_size = UINT32_MAX;  // from a newer header: only what this version has is written
  EXPECT_EQ(hvd_stats_get(&stats), HVD_SUCCESS);
  EXPECT_EQ(stats.struct_size, sizeof(stats));
  EXPECT_FAILS(hvd_timeline_start(nullptr), HVD_ERR_INVALID_ARGUMENT, "path is NULL");
  EXPECT_FAILS(hvd_timeline_start(""), HVD_ERR_INVALID_ARGUMENT, "path is empty");
  EXPECT_FAILS(hvd_timeline_start("/nonexistent-dir/t.json"), HVD_ERR_SYSTEM, "nonexistent-dir");
  EXPECT_EQ(hvd_timeline_stop(), HVD_SUCCESS);  // none running: nothing to stop
}

TEST_F(BadInput, JoinAbortAndAsyncError) {
  EXPECT_FAILS(hvd_get_async_error(nullptr), HVD_ERR_INVALID_ARGUMENT, "status is NULL");
  EXPECT_EQ(hvd_join(nullptr), HVD_SUCCESS);  // last_joined_rank is optional
  int32_t last = -7;
  EXPECT_EQ(hvd_join(&last), HVD_SUCCESS);
  EXPECT_EQ(last, 0);
  EXPECT_EQ(hvd_abort(nullptr), HVD_SUCCESS);  // no reason given
  float x = 1.0f;
  hvd_tensor_t t = tensor(&x, HVD_FLOAT32, 1, kShape1);
  hvd_handle_t h = 0;
  hvd_status_t s = hvd_allreduce_async(&t, &x, HVD_OP_SUM, "after.abort", nullptr, &h);
  if (s == HVD_SUCCESS) s = hvd_wait(h);
  EXPECT_EQ(s, HVD_ERR_ABORTED) << hvd_last_error_message();
  if (h != 0) {
    EXPECT_EQ(hvd_handle_free(h), HVD_SUCCESS);
  }
  hvd_status_t async = HVD_SUCCESS;  // the engine has met the abort by now
  EXPECT_EQ(hvd_get_async_error(&async), HVD_SUCCESS);
  EXPECT_EQ(async, HVD_ERR_ABORTED);
  // Only a new engine ends the abort; the fixture's closing allreduce runs on it.
  ASSERT_EQ(hvd_shutdown(), HVD_SUCCESS);
  ASSERT_EQ(init_singleton(), HVD_SUCCESS) << hvd_last_error_message();
}

}  // namespace
