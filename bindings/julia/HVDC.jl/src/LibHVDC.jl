# LibHVDC: the C ABI of include/hvdc.h, one to one. Every constant keeps the header's name and
# value, every struct mirrors the C layout field by field, and every function is a raw `@ccall`
# that returns the C status; HVDC.jl builds the Julian API on top. tests/bindings/coverage.py
# checks this file against the header (names, values, argument counts and struct layouts).
#
# The library is `ENV["HVDC_LIBRARY"]` (a path or a name the dynamic loader can find; by default
# the soname libhvdc.so.0), read when the package is precompiled: after changing it, restart
# Julia (and re-precompile).
module LibHVDC

const libhvdc = get(ENV, "HVDC_LIBRARY", "libhvdc.so.0")

# ---- Versions --------------------------------------------------------------------------------
const HVDC_VERSION_MAJOR = 0
const HVDC_VERSION_MINOR = 1
const HVDC_VERSION_PATCH = 0
const HVDC_VERSION_CODE = 100
const HVDC_ABI_VERSION = 0

hvd_version_string() = @ccall libhvdc.hvd_version_string()::Cstring
hvd_abi_version() = @ccall libhvdc.hvd_abi_version()::Int32

# ---- Status codes ----------------------------------------------------------------------------
const hvd_status_t = Int32
const HVD_SUCCESS = Int32(0)
const HVD_IN_PROGRESS = Int32(1)
const HVD_ERR_INVALID_ARGUMENT = Int32(-1)
const HVD_ERR_INVALID_USAGE = Int32(-2)
const HVD_ERR_NOT_INITIALIZED = Int32(-3)
const HVD_ERR_UNSUPPORTED = Int32(-4)
const HVD_ERR_SYSTEM = Int32(-5)
const HVD_ERR_INTERNAL = Int32(-6)
const HVD_ERR_INVALID_HANDLE = Int32(-7)
const HVD_ERR_MISMATCH = Int32(-8)
const HVD_ERR_DUPLICATE_NAME = Int32(-9)
const HVD_ERR_ABORTED = Int32(-10)
const HVD_ERR_TIMEOUT = Int32(-11)
const HVD_ERR_PEER_FAILURE = Int32(-12)
const HVD_ERR_SHUT_DOWN = Int32(-13)
const HVD_ERR_OUT_OF_MEMORY = Int32(-14)
const HVD_ERR_TRANSPORT = Int32(-15)
const HVD_ERR_BOOTSTRAP = Int32(-16)
const HVD_ERR_FORKED = Int32(-17)
const HVD_ERR_DEVICE = Int32(-18)

hvd_status_string(status) = @ccall libhvdc.hvd_status_string(status::Int32)::Cstring
hvd_last_error_message() = @ccall libhvdc.hvd_last_error_message()::Cstring

# ---- Data types, reduce ops, devices ---------------------------------------------------------
const HVD_UINT8 = Int32(0)
const HVD_INT8 = Int32(1)
const HVD_UINT16 = Int32(2)
const HVD_INT16 = Int32(3)
const HVD_INT32 = Int32(4)
const HVD_INT64 = Int32(5)
const HVD_FLOAT16 = Int32(6)
const HVD_FLOAT32 = Int32(7)
const HVD_FLOAT64 = Int32(8)
const HVD_BOOL = Int32(9)
const HVD_BFLOAT16 = Int32(10)

const HVD_OP_AVERAGE = Int32(0)
const HVD_OP_SUM = Int32(1)
const HVD_OP_MIN = Int32(3)
const HVD_OP_MAX = Int32(4)
const HVD_OP_PRODUCT = Int32(5)

const HVD_DEVICE_CPU = Int32(1)
const HVD_DEVICE_CUDA = Int32(2)

struct hvd_device_t
    type::Int32
    id::Int32
end

const HVD_MAX_NDIM = 32

struct hvd_tensor_t
    data::Ptr{Cvoid}
    dtype::Int32
    ndim::Int32
    shape::Ptr{Int64}
    device::hvd_device_t
end

struct hvd_dl_dtype_t
    code::UInt8
    bits::UInt8
    lanes::UInt16
end

struct hvd_dl_tensor_t
    data::Ptr{Cvoid}
    device::hvd_device_t
    ndim::Int32
    dtype::hvd_dl_dtype_t
    shape::Ptr{Int64}
    strides::Ptr{Int64}
    byte_offset::UInt64
end

hvd_tensor_from_dlpack(dl, out) =
    @ccall libhvdc.hvd_tensor_from_dlpack(dl::Ptr{hvd_dl_tensor_t}, out::Ptr{hvd_tensor_t})::Int32

# ---- Configuration and logging ---------------------------------------------------------------
const HVD_CFG_LOG_LEVEL = Int32(0)
const HVD_CFG_HOSTNAME = Int32(1)
const HVD_CFG_BOOTSTRAP = Int32(2)
const HVD_CFG_SPIN_MICROS = Int32(3)
const HVD_CFG_FUSION_THRESHOLD = Int32(4)
const HVD_CFG_CACHE_CAPACITY = Int32(5)
const HVD_CFG_DETERMINISTIC = Int32(6)
const HVD_CFG_PROCESS_SETS = Int32(7)
const HVD_CFG_RANK = Int32(8)
const HVD_CFG_SIZE = Int32(9)
const HVD_CFG_MASTER_ADDR = Int32(10)
const HVD_CFG_MASTER_PORT = Int32(11)
const HVD_CFG_SECRET = Int32(12)
const HVD_CFG_IFACE = Int32(13)

# hvd_config_t is opaque: a Ptr{Cvoid} here.
hvd_config_create(out) = @ccall libhvdc.hvd_config_create(out::Ptr{Ptr{Cvoid}})::Int32
hvd_config_set_int(config, key, value) =
    @ccall libhvdc.hvd_config_set_int(config::Ptr{Cvoid}, key::Int32, value::Int64)::Int32
hvd_config_set_str(config, key, value) =
    @ccall libhvdc.hvd_config_set_str(config::Ptr{Cvoid}, key::Int32, value::Cstring)::Int32
hvd_config_destroy(config) = @ccall libhvdc.hvd_config_destroy(config::Ptr{Cvoid})::Cvoid

# fn is a C function pointer (hvd_log_fn) or C_NULL. HVDC.jl only ever passes C_NULL: the
# callback would run on a thread Julia does not own.
hvd_set_log_callback(fn, user_data) =
    @ccall libhvdc.hvd_set_log_callback(fn::Ptr{Cvoid}, user_data::Ptr{Cvoid})::Int32

# ---- Lifecycle and topology ------------------------------------------------------------------
hvd_init() = @ccall libhvdc.hvd_init()::Int32
hvd_init_with_config(config) = @ccall libhvdc.hvd_init_with_config(config::Ptr{Cvoid})::Int32
hvd_shutdown() = @ccall libhvdc.hvd_shutdown()::Int32
hvd_is_initialized() = @ccall libhvdc.hvd_is_initialized()::Int32

hvd_rank() = @ccall libhvdc.hvd_rank()::Int32
hvd_size() = @ccall libhvdc.hvd_size()::Int32
hvd_local_rank() = @ccall libhvdc.hvd_local_rank()::Int32
hvd_local_size() = @ccall libhvdc.hvd_local_size()::Int32
hvd_cross_rank() = @ccall libhvdc.hvd_cross_rank()::Int32
hvd_cross_size() = @ccall libhvdc.hvd_cross_size()::Int32

# ---- Collectives -----------------------------------------------------------------------------
const hvd_handle_t = UInt64

# on_done and alloc are C function pointers (hvd_done_fn, hvd_alloc_fn); HVDC.jl leaves them
# C_NULL because they would run on the engine thread.
struct hvd_op_args_t
    struct_size::UInt32
    process_set::Int32
    prescale_factor::Float64
    postscale_factor::Float64
    on_done::Ptr{Cvoid}
    on_done_user_data::Ptr{Cvoid}
    alloc::Ptr{Cvoid}
    alloc_user_data::Ptr{Cvoid}
    cuda_stream::Ptr{Cvoid}
    flags::UInt32
end

const HVD_OP_STREAM_ORDERED = UInt32(1)
const HVD_OP_HOST_PATH = UInt32(2)

hvd_op_args_init(args, struct_size) =
    @ccall libhvdc.hvd_op_args_init(args::Ptr{hvd_op_args_t}, struct_size::Csize_t)::Int32

hvd_allreduce_async(input, output, reduce_op, name, args, handle) =
    @ccall libhvdc.hvd_allreduce_async(input::Ptr{hvd_tensor_t}, output::Ptr{Cvoid},
                                       reduce_op::Int32, name::Ptr{UInt8},
                                       args::Ptr{hvd_op_args_t}, handle::Ptr{UInt64})::Int32
hvd_allgather_async(input, name, args, handle) =
    @ccall libhvdc.hvd_allgather_async(input::Ptr{hvd_tensor_t}, name::Ptr{UInt8},
                                       args::Ptr{hvd_op_args_t}, handle::Ptr{UInt64})::Int32
hvd_broadcast_async(input, output, root_rank, name, args, handle) =
    @ccall libhvdc.hvd_broadcast_async(input::Ptr{hvd_tensor_t}, output::Ptr{Cvoid},
                                       root_rank::Int32, name::Ptr{UInt8},
                                       args::Ptr{hvd_op_args_t}, handle::Ptr{UInt64})::Int32
hvd_grouped_allreduce_async(inputs, outputs, count, reduce_op, names, args, handle) =
    @ccall libhvdc.hvd_grouped_allreduce_async(inputs::Ptr{hvd_tensor_t},
                                               outputs::Ptr{Ptr{Cvoid}}, count::Csize_t,
                                               reduce_op::Int32, names::Ptr{Ptr{UInt8}},
                                               args::Ptr{hvd_op_args_t},
                                               handle::Ptr{UInt64})::Int32
hvd_alltoall_async(input, splits, name, args, handle) =
    @ccall libhvdc.hvd_alltoall_async(input::Ptr{hvd_tensor_t}, splits::Ptr{Int32},
                                      name::Ptr{UInt8}, args::Ptr{hvd_op_args_t},
                                      handle::Ptr{UInt64})::Int32
hvd_handle_received_splits(handle, splits, count) =
    @ccall libhvdc.hvd_handle_received_splits(handle::UInt64, splits::Ptr{Int32},
                                              count::Int32)::Int32
hvd_reducescatter_async(input, output, reduce_op, name, args, handle) =
    @ccall libhvdc.hvd_reducescatter_async(input::Ptr{hvd_tensor_t}, output::Ptr{Cvoid},
                                           reduce_op::Int32, name::Ptr{UInt8},
                                           args::Ptr{hvd_op_args_t}, handle::Ptr{UInt64})::Int32
hvd_join(last_joined_rank) = @ccall libhvdc.hvd_join(last_joined_rank::Ptr{Int32})::Int32
hvd_barrier_async(name, args, handle) =
    @ccall libhvdc.hvd_barrier_async(name::Ptr{UInt8}, args::Ptr{hvd_op_args_t},
                                     handle::Ptr{UInt64})::Int32
hvd_handle_output(handle, output) =
    @ccall libhvdc.hvd_handle_output(handle::UInt64, output::Ptr{hvd_tensor_t})::Int32
hvd_test(handle, done) = @ccall libhvdc.hvd_test(handle::UInt64, done::Ptr{Int32})::Int32
hvd_wait(handle) = @ccall libhvdc.hvd_wait(handle::UInt64)::Int32
hvd_wait_all(handles, count) =
    @ccall libhvdc.hvd_wait_all(handles::Ptr{UInt64}, count::Csize_t)::Int32
hvd_handle_free(handle) = @ccall libhvdc.hvd_handle_free(handle::UInt64)::Int32

# ---- Process sets ----------------------------------------------------------------------------
hvd_process_set_create(ranks, count, id) =
    @ccall libhvdc.hvd_process_set_create(ranks::Ptr{Int32}, count::Int32, id::Ptr{Int32})::Int32
hvd_process_set_destroy(id) = @ccall libhvdc.hvd_process_set_destroy(id::Int32)::Int32
hvd_process_set_rank(id, rank) =
    @ccall libhvdc.hvd_process_set_rank(id::Int32, rank::Ptr{Int32})::Int32
hvd_process_set_size(id, size) =
    @ccall libhvdc.hvd_process_set_size(id::Int32, size::Ptr{Int32})::Int32
hvd_process_set_included(id, included) =
    @ccall libhvdc.hvd_process_set_included(id::Int32, included::Ptr{Int32})::Int32
hvd_process_set_ranks(id, ranks, capacity, count) =
    @ccall libhvdc.hvd_process_set_ranks(id::Int32, ranks::Ptr{Int32}, capacity::Int32,
                                         count::Ptr{Int32})::Int32
hvd_process_set_ids(ids, capacity, count) =
    @ccall libhvdc.hvd_process_set_ids(ids::Ptr{Int32}, capacity::Int32,
                                       count::Ptr{Int32})::Int32

# ---- Faults and features ---------------------------------------------------------------------
hvd_abort(reason) = @ccall libhvdc.hvd_abort(reason::Cstring)::Int32
hvd_get_async_error(status) = @ccall libhvdc.hvd_get_async_error(status::Ptr{Int32})::Int32

# ---- Hang reports, timeline, statistics ------------------------------------------------------
hvd_dump_pending(buffer, size, length) =
    @ccall libhvdc.hvd_dump_pending(buffer::Ptr{UInt8}, size::Csize_t,
                                    length::Ptr{Csize_t})::Int32

hvd_timeline_start(path) = @ccall libhvdc.hvd_timeline_start(path::Cstring)::Int32
hvd_timeline_stop() = @ccall libhvdc.hvd_timeline_stop()::Int32

struct hvd_stats_t
    struct_size::UInt32
    reserved::UInt32
    coordinator_requests::UInt64
    rounds::UInt64
    cache_hits::UInt64
    cache_misses::UInt64
    cache_evictions::UInt64
    collectives::UInt64
    tensors::UInt64
    fused_collectives::UInt64
    fused_tensors::UInt64
    fused_bytes::UInt64
end

hvd_stats_get(stats) = @ccall libhvdc.hvd_stats_get(stats::Ptr{hvd_stats_t})::Int32
hvd_stats_format(buffer, size, length) =
    @ccall libhvdc.hvd_stats_format(buffer::Ptr{UInt8}, size::Csize_t,
                                    length::Ptr{Csize_t})::Int32

const HVD_FEATURE_UCX = Int32(0)
const HVD_FEATURE_MPI = Int32(1)
const HVD_FEATURE_CUDA = Int32(2)
const HVD_FEATURE_NCCL = Int32(3)

hvd_has_feature(feature) = @ccall libhvdc.hvd_has_feature(feature::Int32)::Int32
hvd_device_count(count) = @ccall libhvdc.hvd_device_count(count::Ptr{Int32})::Int32

# ---- Shared host memory ----------------------------------------------------------------------
hvd_mem_alloc(bytes, out) =
    @ccall libhvdc.hvd_mem_alloc(bytes::Csize_t, out::Ptr{Ptr{Cvoid}})::Int32
hvd_mem_free(ptr) = @ccall libhvdc.hvd_mem_free(ptr::Ptr{Cvoid})::Int32
hvd_mem_size(ptr, base, bytes) =
    @ccall libhvdc.hvd_mem_size(ptr::Ptr{Cvoid}, base::Ptr{Ptr{Cvoid}},
                                bytes::Ptr{Csize_t})::Int32

end # module LibHVDC
