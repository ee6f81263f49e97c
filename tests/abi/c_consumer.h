/* What the ABI consumer's files share: tensor and argument builders, a one-call allreduce, float
 * comparisons, and the checks each file contributes. Everything runs as a single rank. C99. */
#ifndef HVDC_ABI_C_CONSUMER_H_
#define HVDC_ABI_C_CONSUMER_H_

#include <hvdc.h>

#include <stddef.h>

hvd_tensor_t make_tensor(void* data, int32_t dtype, int32_t ndim, const int64_t* shape);
/* What hvd_op_args_init makes of a struct filled with junk. */
hvd_op_args_t default_args(void);
/* A DLPack tensor on the CPU with one lane, no strides and no byte offset. */
hvd_dl_tensor_t make_dl(void* data, uint8_t code, uint8_t bits, int32_t ndim, int64_t* shape);
void sleep_millis(long ms);
int floats_equal(const float* a, const float* b, size_t n);
int floats_scaled(const float* out, const float* in, size_t n, float factor);

typedef struct op_result_t {
  hvd_status_t submit; /* what hvd_allreduce_async returned */
  hvd_status_t result; /* hvd_wait's status if submitted, else the submit status */
  char message[1024];  /* hvd_last_error_message() right after the failing call */
} op_result_t;

/* Submits one allreduce, waits for it and frees its handle. */
op_result_t run_allreduce(const hvd_tensor_t* input, void* output, int32_t reduce_op,
                          const char* name, const hvd_op_args_t* args);

/* The checks, one group per file; main() in c_consumer.c runs them in order. */
void test_dlpack(void);               /* c_consumer_dlpack.c */
void test_config(void);               /* c_consumer_config.c, before hvd_init */
void test_env_and_log_callback(void); /* c_consumer_config.c, before hvd_init */
void test_allreduce(void);            /* c_consumer_allreduce.c, after hvd_init */
void test_bad_arguments(void);        /* c_consumer_allreduce.c, after hvd_init */
void test_handles(void);              /* c_consumer_handles.c, after hvd_init */
void test_fork(void);                 /* c_consumer_handles.c, after hvd_init */
/* c_consumer_ops.c: the collectives beyond allreduce, hvd_handle_output, process sets,
 * statistics and the timeline (hvd_init must have succeeded). */
void test_gather_broadcast_barrier(void);
/* c_consumer_memory.c: shared host memory before hvd_init, with an engine and after
 * hvd_shutdown (it calls both itself). */
void test_shared_memory(void);

#endif
