//! Raw declarations of the hvdc C ABI, written by hand from `include/hvdc.h`.
//!
//! Every item mirrors the header one to one: the same names, the same values, the same layouts.
//! The safe API is the `hvdc` crate. The header-coverage test (`tests/bindings`) reads this file
//! with a regular expression, so each function declaration stays on one line (the `extern`
//! block is exempt from rustfmt), parameters are separated by the only commas on the line, and
//! callback types are named aliases.
#![allow(non_camel_case_types)]

pub use std::os::raw::{c_char, c_void};

// ---- Versions ---------------------------------------------------------------------------------
pub const HVDC_VERSION_MAJOR: i32 = 0;
pub const HVDC_VERSION_MINOR: i32 = 1;
pub const HVDC_VERSION_PATCH: i32 = 0;
pub const HVDC_VERSION_CODE: i32 = 100;
pub const HVDC_ABI_VERSION: i32 = 0;

// ---- Status codes -----------------------------------------------------------------------------
pub type hvd_status_t = i32;
pub const HVD_SUCCESS: hvd_status_t = 0;
pub const HVD_IN_PROGRESS: hvd_status_t = 1;
pub const HVD_ERR_INVALID_ARGUMENT: hvd_status_t = -1;
pub const HVD_ERR_INVALID_USAGE: hvd_status_t = -2;
pub const HVD_ERR_NOT_INITIALIZED: hvd_status_t = -3;
pub const HVD_ERR_UNSUPPORTED: hvd_status_t = -4;
pub const HVD_ERR_SYSTEM: hvd_status_t = -5;
pub const HVD_ERR_INTERNAL: hvd_status_t = -6;
pub const HVD_ERR_INVALID_HANDLE: hvd_status_t = -7;
pub const HVD_ERR_MISMATCH: hvd_status_t = -8;
pub const HVD_ERR_DUPLICATE_NAME: hvd_status_t = -9;
pub const HVD_ERR_ABORTED: hvd_status_t = -10;
pub const HVD_ERR_TIMEOUT: hvd_status_t = -11;
pub const HVD_ERR_PEER_FAILURE: hvd_status_t = -12;
pub const HVD_ERR_SHUT_DOWN: hvd_status_t = -13;
pub const HVD_ERR_OUT_OF_MEMORY: hvd_status_t = -14;
pub const HVD_ERR_TRANSPORT: hvd_status_t = -15;
pub const HVD_ERR_BOOTSTRAP: hvd_status_t = -16;
pub const HVD_ERR_FORKED: hvd_status_t = -17;
pub const HVD_ERR_DEVICE: hvd_status_t = -18;

// ---- Data types, reduce ops, devices ----------------------------------------------------------
pub const HVD_UINT8: i32 = 0;
pub const HVD_INT8: i32 = 1;
pub const HVD_UINT16: i32 = 2;
pub const HVD_INT16: i32 = 3;
pub const HVD_INT32: i32 = 4;
pub const HVD_INT64: i32 = 5;
pub const HVD_FLOAT16: i32 = 6;
pub const HVD_FLOAT32: i32 = 7;
pub const HVD_FLOAT64: i32 = 8;
pub const HVD_BOOL: i32 = 9;
pub const HVD_BFLOAT16: i32 = 10;

pub const HVD_OP_AVERAGE: i32 = 0;
pub const HVD_OP_SUM: i32 = 1;
pub const HVD_OP_MIN: i32 = 3;
pub const HVD_OP_MAX: i32 = 4;
pub const HVD_OP_PRODUCT: i32 = 5;

pub const HVD_DEVICE_CPU: i32 = 1;
pub const HVD_DEVICE_CUDA: i32 = 2;

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct hvd_device_t {
    pub type_: i32,
    pub id: i32,
}

pub const HVD_MAX_NDIM: i32 = 32;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hvd_tensor_t {
    pub data: *mut c_void,
    pub dtype: i32,
    pub ndim: i32,
    pub shape: *const i64,
    pub device: hvd_device_t,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct hvd_dl_dtype_t {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hvd_dl_tensor_t {
    pub data: *mut c_void,
    pub device: hvd_device_t,
    pub ndim: i32,
    pub dtype: hvd_dl_dtype_t,
    pub shape: *mut i64,
    pub strides: *mut i64,
    pub byte_offset: u64,
}

// ---- Configuration and logging ----------------------------------------------------------------
/// Opaque; only ever handled through a pointer.
#[repr(C)]
pub struct hvd_config_t {
    _private: [u8; 0],
}

pub const HVD_CFG_LOG_LEVEL: i32 = 0;
pub const HVD_CFG_HOSTNAME: i32 = 1;
pub const HVD_CFG_BOOTSTRAP: i32 = 2;
pub const HVD_CFG_SPIN_MICROS: i32 = 3;
pub const HVD_CFG_FUSION_THRESHOLD: i32 = 4;
pub const HVD_CFG_CACHE_CAPACITY: i32 = 5;
pub const HVD_CFG_DETERMINISTIC: i32 = 6;
pub const HVD_CFG_PROCESS_SETS: i32 = 7;
pub const HVD_CFG_RANK: i32 = 8;
pub const HVD_CFG_SIZE: i32 = 9;
pub const HVD_CFG_MASTER_ADDR: i32 = 10;
pub const HVD_CFG_MASTER_PORT: i32 = 11;
pub const HVD_CFG_SECRET: i32 = 12;
pub const HVD_CFG_IFACE: i32 = 13;

pub type hvd_log_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, level: i32, message: *const c_char)>;

// ---- Collectives ------------------------------------------------------------------------------
pub type hvd_handle_t = u64;

pub type hvd_done_fn = Option<
    unsafe extern "C" fn(user_data: *mut c_void, handle: hvd_handle_t, status: hvd_status_t),
>;

pub type hvd_alloc_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        output: *const hvd_tensor_t,
        bytes: usize,
    ) -> *mut c_void,
>;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hvd_op_args_t {
    pub struct_size: u32,
    pub process_set: i32,
    pub prescale_factor: f64,
    pub postscale_factor: f64,
    pub on_done: hvd_done_fn,
    pub on_done_user_data: *mut c_void,
    pub alloc: hvd_alloc_fn,
    pub alloc_user_data: *mut c_void,
    pub cuda_stream: *mut c_void,
    pub flags: u32,
}

pub const HVD_OP_STREAM_ORDERED: u32 = 1;
pub const HVD_OP_HOST_PATH: u32 = 2;

// ---- Statistics -------------------------------------------------------------------------------
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct hvd_stats_t {
    pub struct_size: u32,
    pub reserved: u32,
    pub coordinator_requests: u64,
    pub rounds: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    pub cache_evictions: u64,
    pub collectives: u64,
    pub tensors: u64,
    pub fused_collectives: u64,
    pub fused_tensors: u64,
    pub fused_bytes: u64,
}

pub const HVD_FEATURE_UCX: i32 = 0;
pub const HVD_FEATURE_MPI: i32 = 1;
pub const HVD_FEATURE_CUDA: i32 = 2;
pub const HVD_FEATURE_NCCL: i32 = 3;

// ---- Functions, in header order -----------------------------------------------------------------
#[rustfmt::skip]
extern "C" {
    pub fn hvd_version_string() -> *const c_char;
    pub fn hvd_abi_version() -> i32;
    pub fn hvd_status_string(status: hvd_status_t) -> *const c_char;
    pub fn hvd_last_error_message() -> *const c_char;
    pub fn hvd_tensor_from_dlpack(dl: *const hvd_dl_tensor_t, out: *mut hvd_tensor_t) -> hvd_status_t;
    pub fn hvd_config_create(out: *mut *mut hvd_config_t) -> hvd_status_t;
    pub fn hvd_config_set_int(config: *mut hvd_config_t, key: i32, value: i64) -> hvd_status_t;
    pub fn hvd_config_set_str(config: *mut hvd_config_t, key: i32, value: *const c_char) -> hvd_status_t;
    pub fn hvd_config_destroy(config: *mut hvd_config_t);
    pub fn hvd_set_log_callback(fn_: hvd_log_fn, user_data: *mut c_void) -> hvd_status_t;
    pub fn hvd_init() -> hvd_status_t;
    pub fn hvd_init_with_config(config: *const hvd_config_t) -> hvd_status_t;
    pub fn hvd_shutdown() -> hvd_status_t;
    pub fn hvd_is_initialized() -> i32;
    pub fn hvd_rank() -> i32;
    pub fn hvd_size() -> i32;
    pub fn hvd_local_rank() -> i32;
    pub fn hvd_local_size() -> i32;
    pub fn hvd_cross_rank() -> i32;
    pub fn hvd_cross_size() -> i32;
    pub fn hvd_op_args_init(args: *mut hvd_op_args_t, struct_size: usize) -> hvd_status_t;
    pub fn hvd_allreduce_async(input: *const hvd_tensor_t, output: *mut c_void, reduce_op: i32, name: *const c_char, args: *const hvd_op_args_t, handle: *mut hvd_handle_t) -> hvd_status_t;
    pub fn hvd_allgather_async(input: *const hvd_tensor_t, name: *const c_char, args: *const hvd_op_args_t, handle: *mut hvd_handle_t) -> hvd_status_t;
    pub fn hvd_broadcast_async(input: *const hvd_tensor_t, output: *mut c_void, root_rank: i32, name: *const c_char, args: *const hvd_op_args_t, handle: *mut hvd_handle_t) -> hvd_status_t;
    pub fn hvd_grouped_allreduce_async(inputs: *const hvd_tensor_t, outputs: *const *mut c_void, count: usize, reduce_op: i32, names: *const *const c_char, args: *const hvd_op_args_t, handle: *mut hvd_handle_t) -> hvd_status_t;
    pub fn hvd_alltoall_async(input: *const hvd_tensor_t, splits: *const i32, name: *const c_char, args: *const hvd_op_args_t, handle: *mut hvd_handle_t) -> hvd_status_t;
    pub fn hvd_handle_received_splits(handle: hvd_handle_t, splits: *mut i32, count: i32) -> hvd_status_t;
    pub fn hvd_reducescatter_async(input: *const hvd_tensor_t, output: *mut c_void, reduce_op: i32, name: *const c_char, args: *const hvd_op_args_t, handle: *mut hvd_handle_t) -> hvd_status_t;
    pub fn hvd_join(last_joined_rank: *mut i32) -> hvd_status_t;
    pub fn hvd_barrier_async(name: *const c_char, args: *const hvd_op_args_t, handle: *mut hvd_handle_t) -> hvd_status_t;
    pub fn hvd_handle_output(handle: hvd_handle_t, output: *mut hvd_tensor_t) -> hvd_status_t;
    pub fn hvd_test(handle: hvd_handle_t, done: *mut i32) -> hvd_status_t;
    pub fn hvd_wait(handle: hvd_handle_t) -> hvd_status_t;
    pub fn hvd_wait_all(handles: *const hvd_handle_t, count: usize) -> hvd_status_t;
    pub fn hvd_handle_free(handle: hvd_handle_t) -> hvd_status_t;
    pub fn hvd_process_set_create(ranks: *const i32, count: i32, id: *mut i32) -> hvd_status_t;
    pub fn hvd_process_set_destroy(id: i32) -> hvd_status_t;
    pub fn hvd_process_set_rank(id: i32, rank: *mut i32) -> hvd_status_t;
    pub fn hvd_process_set_size(id: i32, size: *mut i32) -> hvd_status_t;
    pub fn hvd_process_set_included(id: i32, included: *mut i32) -> hvd_status_t;
    pub fn hvd_process_set_ranks(id: i32, ranks: *mut i32, capacity: i32, count: *mut i32) -> hvd_status_t;
    pub fn hvd_process_set_ids(ids: *mut i32, capacity: i32, count: *mut i32) -> hvd_status_t;
    pub fn hvd_abort(reason: *const c_char) -> hvd_status_t;
    pub fn hvd_get_async_error(status: *mut hvd_status_t) -> hvd_status_t;
    pub fn hvd_dump_pending(buffer: *mut c_char, size: usize, length: *mut usize) -> hvd_status_t;
    pub fn hvd_timeline_start(path: *const c_char) -> hvd_status_t;
    pub fn hvd_timeline_stop() -> hvd_status_t;
    pub fn hvd_stats_get(stats: *mut hvd_stats_t) -> hvd_status_t;
    pub fn hvd_stats_format(buffer: *mut c_char, size: usize, length: *mut usize) -> hvd_status_t;
    pub fn hvd_has_feature(feature: i32) -> i32;
    pub fn hvd_device_count(count: *mut i32) -> hvd_status_t;
    pub fn hvd_mem_alloc(bytes: usize, out: *mut *mut c_void) -> hvd_status_t;
    pub fn hvd_mem_free(ptr: *mut c_void) -> hvd_status_t;
    pub fn hvd_mem_size(ptr: *const c_void, base: *mut *mut c_void, bytes: *mut usize) -> hvd_status_t;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loaded_library_has_this_crates_abi_version() {
        assert_eq!(unsafe { hvd_abi_version() }, HVDC_ABI_VERSION);
    }

    #[test]
    fn status_strings_are_static_text() {
        let text = unsafe { hvd_status_string(HVD_ERR_MISMATCH) };
        assert!(!text.is_null());
        let unknown = unsafe { hvd_status_string(-12345) };
        assert!(!unknown.is_null());
    }
}
