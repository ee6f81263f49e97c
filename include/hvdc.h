/*
 * hvdc: a Horovod-style distributed training engine behind a stable C ABI.
 *
 * Conventions (docs/api.md has the long form):
 * - Every fallible call returns hvd_status_t: HVD_SUCCESS (0), HVD_IN_PROGRESS (> 0) or an error
 *   (< 0). Numeric values of every constant in this file are frozen. Outputs are written only on
 *   success. hvd_last_error_message() gives the calling thread's detail text for its last failure.
 * - Thread safety: hvd_init, hvd_init_with_config and hvd_shutdown must not race with any other
 *   hvdc call. Every other function may be called from any thread at any time.
 * - Handle lifecycle: an *_async call returns a handle. hvd_test never blocks, hvd_wait blocks;
 *   neither frees. hvd_handle_free is always required, is legal in any state and waits for a
 *   running op. A freed or stale handle gives HVD_ERR_INVALID_HANDLE. Buffers must stay valid
 *   until the op completes. Handles outlive hvd_shutdown (and a later hvd_init) until freed.
 * - Bad arguments give HVD_ERR_INVALID_ARGUMENT (an unknown config key: HVD_ERR_UNSUPPORTED);
 *   before hvd_init and after hvd_shutdown, calls that need the engine give
 *   HVD_ERR_NOT_INITIALIZED (a NULL pointer argument may be reported first).
 * - A child process created by fork() after hvd_init gets HVD_ERR_FORKED from every call that
 *   needs the engine or a handle.
 */
#ifndef HVDC_H_
#define HVDC_H_

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define HVDC_API __attribute__((visibility("default")))
#else
#define HVDC_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Versions ---------------------------------------------------------------------------- */
#define HVDC_VERSION_MAJOR 0
#define HVDC_VERSION_MINOR 1
#define HVDC_VERSION_PATCH 0
#define HVDC_VERSION_CODE 100 /* major * 10000 + minor * 100 + patch */
#define HVDC_ABI_VERSION 0    /* bumped on any incompatible change; equals the soname major */

/* "0.1.0 +ucx +mpi ..." : version and compiled features. Static storage. */
HVDC_API const char* hvd_version_string(void);
/* The ABI version of the loaded library; bindings compare it with HVDC_ABI_VERSION. */
HVDC_API int32_t hvd_abi_version(void);

/* ---- Status codes ------------------------------------------------------------------------ */
typedef int32_t hvd_status_t;
enum {
  HVD_SUCCESS = 0,
  HVD_IN_PROGRESS = 1,
  HVD_ERR_INVALID_ARGUMENT = -1, /* a bad value; the message names the argument */
  HVD_ERR_INVALID_USAGE = -2,    /* a call in the wrong state (e.g. init twice) */
  HVD_ERR_NOT_INITIALIZED = -3,
  HVD_ERR_UNSUPPORTED = -4, /* feature compiled out or unavailable; the message says why */
  HVD_ERR_SYSTEM = -5,      /* an operating-system call failed */
  HVD_ERR_INTERNAL = -6,
  HVD_ERR_INVALID_HANDLE = -7, /* unknown, stale or freed handle */
  HVD_ERR_MISMATCH = -8,       /* ranks submitted the same tensor with different metadata */
  HVD_ERR_DUPLICATE_NAME = -9, /* a tensor of that name is already in flight */
  HVD_ERR_ABORTED = -10,       /* hvd_abort was called on some rank */
  HVD_ERR_TIMEOUT = -11,
  HVD_ERR_PEER_FAILURE = -12, /* a peer died or its connection failed */
  HVD_ERR_SHUT_DOWN = -13,    /* the op was pending when the engine shut down */
  HVD_ERR_OUT_OF_MEMORY = -14,
  HVD_ERR_TRANSPORT = -15, /* the data transport (UCX) reported an error */
  HVD_ERR_BOOTSTRAP = -16, /* rank discovery or the out-of-band exchange failed */
  HVD_ERR_FORKED = -17,    /* called in a child process created by fork() after init */
  HVD_ERR_DEVICE = -18     /* CUDA or NCCL failed; the message carries its text */
};

/* Static text for a status code ("unknown status" for values this library does not know). */
HVDC_API const char* hvd_status_string(hvd_status_t status);
/* Detail of the calling thread's last failed call, "" if none. Valid until its next hvdc call. */
HVDC_API const char* hvd_last_error_message(void);

/* ---- Data types, reduce ops, devices ----------------------------------------------------- */
enum {
  HVD_UINT8 = 0,
  HVD_INT8 = 1,
  HVD_UINT16 = 2,
  HVD_INT16 = 3,
  HVD_INT32 = 4,
  HVD_INT64 = 5,
  HVD_FLOAT16 = 6,
  HVD_FLOAT32 = 7,
  HVD_FLOAT64 = 8,
  HVD_BOOL = 9, /* one byte, 0 or 1 */
  HVD_BFLOAT16 = 10
};

/* Reductions. Integers: SUM and PRODUCT wrap modulo 2^bits; AVERAGE is the exact sum (it never
 * wraps) divided by the number of ranks, truncated toward zero, so it is always in range (int8 100
 * on every rank averages to 100). BOOL: SUM = OR, PRODUCT = AND, MIN = AND, MAX = OR,
 * AVERAGE is rejected. FLOAT16/BFLOAT16 accumulate in float32 and round once per step. */
enum { HVD_OP_AVERAGE = 0, HVD_OP_SUM = 1, HVD_OP_MIN = 3, HVD_OP_MAX = 4, HVD_OP_PRODUCT = 5 };

/* Device codes are DLPack's. Layout-identical to DLPack's DLDevice. */
enum { HVD_DEVICE_CPU = 1, HVD_DEVICE_CUDA = 2 };
typedef struct hvd_device_t {
  int32_t type;
  int32_t id;
} hvd_device_t;

#define HVD_MAX_NDIM 32

/* A dense, row-major tensor. shape has ndim entries (ndim 0 is a scalar of one element). Ops
 * reject (HVD_ERR_INVALID_ARGUMENT) an unknown dtype or device type, ndim outside
 * [0, HVD_MAX_NDIM], a negative dim, more than INT64_MAX bytes (zero dims left out of that
 * product) and data NULL with elements. */
typedef struct hvd_tensor_t {
  void* data;
  int32_t dtype;
  int32_t ndim;
  const int64_t* shape;
  hvd_device_t device;
} hvd_tensor_t;

/* Layout-identical to DLPack's DLDataType and DLTensor (tests/abi checks this). */
typedef struct hvd_dl_dtype_t {
  uint8_t code; /* 0 int, 1 uint, 2 float, 4 bfloat, 6 bool */
  uint8_t bits;
  uint16_t lanes;
} hvd_dl_dtype_t;
typedef struct hvd_dl_tensor_t {
  void* data;
  hvd_device_t device;
  int32_t ndim;
  hvd_dl_dtype_t dtype;
  int64_t* shape;
  int64_t* strides; /* NULL or compact row-major; other strides are rejected */
  uint64_t byte_offset;
} hvd_dl_tensor_t;

/* Fills *out from a DLPack tensor without copying (data = dl->data + byte_offset). The shape
 * pointer is borrowed from dl. Fails with HVD_ERR_INVALID_ARGUMENT for an unsupported dtype,
 * lanes != 1 or non-contiguous strides. */
HVDC_API hvd_status_t hvd_tensor_from_dlpack(const hvd_dl_tensor_t* dl, hvd_tensor_t* out);

/* ---- Configuration and logging ----------------------------------------------------------- */
/* A config object overrides HVDC_* environment variables, which override built-in defaults. */
typedef struct hvd_config_s hvd_config_t;
enum {
  HVD_CFG_LOG_LEVEL = 0,        /* int: 0 trace, 1 debug, 2 info, 3 warning, 4 error, 5 off */
  HVD_CFG_HOSTNAME = 1,         /* str: host identity used for local/cross topology */
  HVD_CFG_BOOTSTRAP = 2,        /* str: "auto", "singleton", "mpi" or "store" */
  HVD_CFG_SPIN_MICROS = 3,      /* int: how long the engine spins before it sleeps */
  HVD_CFG_FUSION_THRESHOLD = 4, /* int: bytes fused into one allreduce; 0 disables fusion */
  HVD_CFG_CACHE_CAPACITY = 5,   /* int: response-cache entries; 0 disables the cache */
  HVD_CFG_DETERMINISTIC = 6,    /* int: 1 = results independent of fusion and timing */
  HVD_CFG_PROCESS_SETS = 7,     /* str: static process sets, e.g. "0,2;1,3" (ids 1, 2, ...) */
  HVD_CFG_RANK = 8,             /* int: this rank (with HVD_CFG_SIZE); -1 = from the launcher */
  HVD_CFG_SIZE = 9,             /* int: the number of ranks; -1 = from the launcher */
  HVD_CFG_MASTER_ADDR = 10,     /* str: address of rank 0's rendezvous store */
  HVD_CFG_MASTER_PORT = 11,     /* int: its port */
  HVD_CFG_SECRET = 12,          /* str: the job's rendezvous secret (HMAC-SHA256 key) */
  HVD_CFG_IFACE = 13            /* str: network interface the rendezvous store binds to */
};
HVDC_API hvd_status_t hvd_config_create(hvd_config_t** out);
HVDC_API hvd_status_t hvd_config_set_int(hvd_config_t* config, int32_t key, int64_t value);
HVDC_API hvd_status_t hvd_config_set_str(hvd_config_t* config, int32_t key, const char* value);
HVDC_API void hvd_config_destroy(hvd_config_t* config);

/* Receives each log line at or above the configured level instead of stderr. The callback may
 * run on any thread and must not call hvdc. fn == NULL restores stderr. */
typedef void (*hvd_log_fn)(void* user_data, int32_t level, const char* message);
HVDC_API hvd_status_t hvd_set_log_callback(hvd_log_fn fn, void* user_data);

/* ---- Lifecycle and topology -------------------------------------------------------------- */
/* Discovers rank and size (docs/launching.md: explicit config, HVDC_RANK/HVDC_SIZE, Open MPI,
 * torchrun, Slurm, MPICH/Hydra, else a singleton), connects every rank (MPI under mpirun, else
 * rank 0's TCP rendezvous store) and starts the engine thread. Collective over all ranks. */
HVDC_API hvd_status_t hvd_init(void);
HVDC_API hvd_status_t hvd_init_with_config(const hvd_config_t* config);
/* Fails every pending op with HVD_ERR_SHUT_DOWN, stops the engine, releases everything.
 * hvd_init may be called again afterwards. Without an engine it does nothing and succeeds.
 * After a job failure it waits for the other ranks at most 5 s; when a peer was lost (the
 * asynchronous error is HVD_ERR_PEER_FAILURE or HVD_ERR_TIMEOUT) it waits for none and returns
 * that error at once. */
HVDC_API hvd_status_t hvd_shutdown(void);
HVDC_API int32_t hvd_is_initialized(void);

/* Each returns -1 before init. local = this host; cross = ranks sharing this local rank. */
HVDC_API int32_t hvd_rank(void);
HVDC_API int32_t hvd_size(void);
HVDC_API int32_t hvd_local_rank(void);
HVDC_API int32_t hvd_local_size(void);
HVDC_API int32_t hvd_cross_rank(void);
HVDC_API int32_t hvd_cross_size(void);

/* ---- Collectives ------------------------------------------------------------------------- */
typedef uint64_t hvd_handle_t; /* 0 is never a valid handle */

/* Completion callback: runs on the engine thread when the op ends, before hvd_wait returns;
 * it must not block on hvdc. */
typedef void (*hvd_done_fn)(void* user_data, hvd_handle_t handle, hvd_status_t status);

/* Output allocator for ops whose output size is known only after negotiation (allgather): returns
 * `bytes` bytes for a tensor described by *output (data unset), or NULL to fail the op. Runs on
 * the engine thread; must not block on hvdc. */
typedef void* (*hvd_alloc_fn)(void* user_data, const hvd_tensor_t* output, size_t bytes);

/* Optional per-op arguments. Call hvd_op_args_init first; it sets struct_size and defaults. */
typedef struct hvd_op_args_t {
  uint32_t struct_size;    /* sizeof(hvd_op_args_t) as the caller compiled it */
  int32_t process_set;     /* 0 = all ranks; else an id from hvd_process_set_create */
  double prescale_factor;  /* allreduce: multiply inputs before reducing (default 1) */
  double postscale_factor; /* allreduce: multiply the result (default 1) */
  hvd_done_fn on_done;
  void* on_done_user_data;
  hvd_alloc_fn alloc; /* allgather output; NULL: the library allocates (see hvd_handle_output) */
  void* alloc_user_data;
  void* cuda_stream; /* CUDA tensors: a cudaStream_t the op reads after (NULL: legacy default) */
  uint32_t flags;    /* HVD_OP_STREAM_ORDERED | HVD_OP_HOST_PATH (docs/gpu.md) */
} hvd_op_args_t;
/* Flags for CUDA tensors (ignored for CPU tensors). STREAM_ORDERED: later work on cuda_stream
 * sees the result without a host wait. HOST_PATH: stage through pinned host memory and reduce on
 * the host instead of NCCL (every rank must pass the same choice). */
enum { HVD_OP_STREAM_ORDERED = 1, HVD_OP_HOST_PATH = 2 };
HVDC_API hvd_status_t hvd_op_args_init(hvd_op_args_t* args, size_t struct_size);

/* Names identify a tensor across ranks: ranks may submit differently named tensors in any order.
 * name == NULL takes "<op>.noname.<N>" from a per-op counter (ranks must then call in the same
 * order); else it must be 1 to 4096 bytes of valid UTF-8. A name already in flight fails with
 * HVD_ERR_DUPLICATE_NAME. args may be NULL; an unknown args->process_set, or one this rank is not
 * a member of, is HVD_ERR_INVALID_ARGUMENT. */

/* Reduces input over all ranks into output (same dtype and shape; output == input->data is in
 * place). Every rank gets bit-identical results. */
HVDC_API hvd_status_t hvd_allreduce_async(const hvd_tensor_t* input, void* output,
                                          int32_t reduce_op, const char* name,
                                          const hvd_op_args_t* args, hvd_handle_t* handle);

/* Concatenates every rank's input along the first dimension, in rank order. The first dimension
 * may differ per rank; the others must match. The output comes from args->alloc when given,
 * else from the library; hvd_handle_output describes it either way. */
HVDC_API hvd_status_t hvd_allgather_async(const hvd_tensor_t* input, const char* name,
                                          const hvd_op_args_t* args, hvd_handle_t* handle);

/* Copies root_rank's input into output on every rank (same dtype and shape everywhere; output ==
 * input->data is in place; on other ranks the input's data is not read). */
HVDC_API hvd_status_t hvd_broadcast_async(const hvd_tensor_t* input, void* output,
                                          int32_t root_rank, const char* name,
                                          const hvd_op_args_t* args, hvd_handle_t* handle);

/* Reduces a list of tensors like hvd_allreduce_async each (same reduce_op and args for all,
 * names[i] or automatic names when names is NULL), enqueued all at once or not at all, behind
 * one handle that completes when every member has; its status is the first failure in list
 * order. The members share a device type. */
HVDC_API hvd_status_t hvd_grouped_allreduce_async(const hvd_tensor_t* inputs, void* const* outputs,
                                                  size_t count, int32_t reduce_op,
                                                  const char* const* names,
                                                  const hvd_op_args_t* args, hvd_handle_t* handle);

/* Sends splits[i] rows of input (first dimension) to rank i, in rank order, and receives every
 * rank's rows for this rank, concatenated in rank order. splits == NULL splits the first
 * dimension evenly (it must divide by the number of ranks); else size entries adding up to
 * input->shape[0]. Other dimensions must match on every rank. The output comes from args->alloc
 * or the library (hvd_handle_output); hvd_handle_received_splits gives the rows per source. */
HVDC_API hvd_status_t hvd_alltoall_async(const hvd_tensor_t* input, const int32_t* splits,
                                         const char* name, const hvd_op_args_t* args,
                                         hvd_handle_t* handle);
/* After a successful alltoall: rows received from each rank (count = number of ranks). */
HVDC_API hvd_status_t hvd_handle_received_splits(hvd_handle_t handle, int32_t* splits,
                                                 int32_t count);

/* Reduces input (same shape everywhere) with HVD_OP_SUM or HVD_OP_AVERAGE and leaves this rank's
 * rows of the result in output: the first dimension is split so that the first
 * shape[0] % size ranks get one row more (ranks in order). Scale factors apply as in allreduce. */
HVDC_API hvd_status_t hvd_reducescatter_async(const hvd_tensor_t* input, void* output,
                                              int32_t reduce_op, const char* name,
                                              const hvd_op_args_t* args, hvd_handle_t* handle);

/* For a rank out of data: blocks until every rank has called it. Meanwhile allreduces the other
 * ranks submit go on with this rank contributing zeros (HVD_OP_AVERAGE still divides by the
 * number of ranks); allgather, broadcast, alltoall and reducescatter fail on every rank while a
 * rank has joined. *last_joined_rank (if not NULL) gets the last rank to call it. Join concerns
 * process set 0 only. */
HVDC_API hvd_status_t hvd_join(int32_t* last_joined_rank);

/* Completes on each rank once every rank has called it. */
HVDC_API hvd_status_t hvd_barrier_async(const char* name, const hvd_op_args_t* args,
                                        hvd_handle_t* handle);

/* The output of a finished allgather or alltoall: data, dtype, ndim, shape and device.
 * Library-allocated data and the shape array belong to the handle and stay valid until
 * hvd_handle_free. */
HVDC_API hvd_status_t hvd_handle_output(hvd_handle_t handle, hvd_tensor_t* output);

/* Sets *done (1 once the op ended) without blocking; returns HVD_SUCCESS while the op runs and
 * the op's status once it ended. */
HVDC_API hvd_status_t hvd_test(hvd_handle_t handle, int32_t* done);
/* Blocks until the op ends and returns its status. On failure the op's message becomes this
 * thread's hvd_last_error_message. */
HVDC_API hvd_status_t hvd_wait(hvd_handle_t handle);
/* Waits for every handle; returns HVD_SUCCESS or the first failure in array order. */
HVDC_API hvd_status_t hvd_wait_all(const hvd_handle_t* handles, size_t count);
/* Releases a handle (waiting first if its op still runs). */
HVDC_API hvd_status_t hvd_handle_free(hvd_handle_t handle);

/* ---- Process sets ------------------------------------------------------------------------ */
/* A process set is a subset of the ranks with its own negotiation; set 0 holds every rank. A
 * collective runs on the set in args->process_set, and only its members may call it; its
 * root_rank, splits, allgather order and average divisor then refer to the set (rank i of the
 * set is its i-th smallest member). */

/* Creates a set of `count` distinct ranks (any order). Collective over all ranks, members or
 * not: each calls it with the same ranks, in the same order relative to other creates and
 * destroys. Blocks until the set exists; *id gets its id (> 0, not reused before hvd_shutdown).
 * Fails on every rank if the ranks differ between ranks or a set of the same ranks exists. */
HVDC_API hvd_status_t hvd_process_set_create(const int32_t* ranks, int32_t count, int32_t* id);
/* Removes a set (not 0); collective over all ranks like create. Ops of the set still pending
 * fail with HVD_ERR_INVALID_USAGE. Here and in the queries below, an id that does not exist
 * (or no longer does) is HVD_ERR_INVALID_ARGUMENT. */
HVDC_API hvd_status_t hvd_process_set_destroy(int32_t id);
/* This rank's rank in the set, or -1 if it is not a member. */
HVDC_API hvd_status_t hvd_process_set_rank(int32_t id, int32_t* rank);
HVDC_API hvd_status_t hvd_process_set_size(int32_t id, int32_t* size);
/* 1 if this rank is a member, else 0. */
HVDC_API hvd_status_t hvd_process_set_included(int32_t id, int32_t* included);
/* The members in ascending order into ranks (capacity entries); *count gets the set's size.
 * ranks may be NULL (with capacity 0) to ask for the size; HVD_ERR_INVALID_ARGUMENT if capacity
 * is smaller than the size. */
HVDC_API hvd_status_t hvd_process_set_ranks(int32_t id, int32_t* ranks, int32_t capacity,
                                            int32_t* count);
/* The ids of every set in ascending order (0 first), with the same conventions. */
HVDC_API hvd_status_t hvd_process_set_ids(int32_t* ids, int32_t capacity, int32_t* count);

/* ---- Faults and features ----------------------------------------------------------------- */
/* Fails every pending op on every rank with HVD_ERR_ABORTED; the message carries the reason and
 * the aborting rank. Later ops fail the same way until hvd_shutdown. */
HVDC_API hvd_status_t hvd_abort(const char* reason);
/* *status = the first asynchronous error the engine met (HVD_SUCCESS if none); when there is
 * one, its message also becomes this thread's hvd_last_error_message. */
HVDC_API hvd_status_t hvd_get_async_error(hvd_status_t* status);

/* ---- Hang reports ------------------------------------------------------------------------ */
/* Logs (warning level, one block) a report of every op in flight on this rank: name, op,
 * process set, dtype and shape, phase (queued, negotiating, agreed, fused, transferring) and
 * age; where this rank coordinates a process set, also the tensors some ranks have not
 * submitted, with those ranks. The report is also copied into buffer like hvd_stats_format
 * (buffer NULL with size 0 gives only *length; each call makes a new report). SIGUSR1 logs the
 * same report on every rank that receives it, unless the application handles SIGUSR1 itself.
 * HVD_ERR_TIMEOUT if the engine thread does not answer within 5 s. */
HVDC_API hvd_status_t hvd_dump_pending(char* buffer, size_t size, size_t* length);

/* ---- Timeline ---------------------------------------------------------------------------- */
/* Rank 0 records a Chrome trace-event JSON file (chrome://tracing, Perfetto) of every tensor:
 * NEGOTIATE_<OP> spans with a tick per rank, then <OP> spans with QUEUE, the transport phase and
 * fusion-buffer copies. HVDC_TIMELINE=path starts one at init. hvd_timeline_start switches to
 * (or starts) path; hvd_timeline_stop finishes the file. On other ranks both succeed and do
 * nothing. The file is complete once stopped or after hvd_shutdown. */
HVDC_API hvd_status_t hvd_timeline_start(const char* path);
HVDC_API hvd_status_t hvd_timeline_stop(void);

/* ---- Statistics -------------------------------------------------------------------------- */
/* Counters of this rank's engine since hvd_init. Set struct_size = sizeof(hvd_stats_t) before
 * calling; fields beyond the caller's struct_size are not written. */
typedef struct hvd_stats_t {
  uint32_t struct_size;
  uint32_t reserved;
  uint64_t coordinator_requests; /* request lists this rank sent to the coordinator (rank 0) */
  uint64_t rounds;               /* rounds of agreement among the ranks */
  uint64_t cache_hits;           /* tensors agreed on through the response cache */
  uint64_t cache_misses;         /* tensors negotiated through the coordinator */
  uint64_t cache_evictions;
  uint64_t collectives;       /* collectives run (a fused one counts once) */
  uint64_t tensors;           /* tensors completed by them */
  uint64_t fused_collectives; /* collectives over more than one tensor */
  uint64_t fused_tensors;
  uint64_t fused_bytes;
} hvd_stats_t;
HVDC_API hvd_status_t hvd_stats_get(hvd_stats_t* stats);
/* The same as "name value" lines (hvdc-info style), NUL-terminated, into buffer (size bytes).
 * *length (if not NULL) gets the full text's length; HVD_ERR_INVALID_ARGUMENT if it does not
 * fit (nothing is written then). */
HVDC_API hvd_status_t hvd_stats_format(char* buffer, size_t size, size_t* length);

enum { HVD_FEATURE_UCX = 0, HVD_FEATURE_MPI = 1, HVD_FEATURE_CUDA = 2, HVD_FEATURE_NCCL = 3 };
/* 1 if the feature was compiled in, 0 if not (or unknown). */
HVDC_API int32_t hvd_has_feature(int32_t feature);
/* *count = the CUDA devices usable now (loads libhvdc_cuda.so). No driver or no device: *count
 * = 0 and HVD_ERR_UNSUPPORTED with CUDA's text; so too in a build without CUDA. */
HVDC_API hvd_status_t hvd_device_count(int32_t* count);

/* ---- Shared host memory ------------------------------------------------------------------ */
/* *out = bytes of zeroed host memory, page-aligned, that the other ranks on this host can map:
 * a host allreduce whose buffers all come from here reads and reduces the local peers' data in
 * place (docs/memory.md). Usable like any host buffer, by every collective, before hvd_init and
 * after hvd_shutdown, until hvd_mem_free. bytes == 0: HVD_ERR_INVALID_ARGUMENT; the system's
 * refusal: HVD_ERR_OUT_OF_MEMORY or HVD_ERR_SYSTEM with its text. */
HVDC_API hvd_status_t hvd_mem_alloc(size_t bytes, void** out);
/* Frees a buffer of hvd_mem_alloc (its start address). NULL does nothing; any other pointer is
 * HVD_ERR_INVALID_ARGUMENT. Must not be called while an op uses the buffer. */
HVDC_API hvd_status_t hvd_mem_free(void* ptr);
/* *bytes = the size asked for when ptr (anywhere inside the buffer) was allocated, and *base
 * (if not NULL) its start; HVD_ERR_INVALID_ARGUMENT if ptr is in no hvd_mem_alloc buffer. */
HVDC_API hvd_status_t hvd_mem_size(const void* ptr, void** base, size_t* bytes);

#ifdef __cplusplus
}
#endif
#endif /* HVDC_H_ */
