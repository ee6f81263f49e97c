//! Prints the size and field offsets of the Rust mirrors of the header's structs, for the
//! header-coverage test to compare with C:
//!   struct <name> size <n>
//!   field <struct> <field> <offset>
use hvdc::sys;
use std::mem::{size_of, MaybeUninit};

// The offset of a field, from a pointer into uninitialized memory (no reference to it is made).
macro_rules! offset {
    ($type:ty, $field:ident) => {{
        let value = MaybeUninit::<$type>::uninit();
        let base = value.as_ptr();
        let field = unsafe { std::ptr::addr_of!((*base).$field) };
        field as usize - base as usize
    }};
}

macro_rules! layout {
    ($type:ident { $($field:ident => $c_name:expr),* $(,)? }) => {{
        println!("struct {} size {}", stringify!($type), size_of::<sys::$type>());
        $(println!("field {} {} {}", stringify!($type), $c_name, offset!(sys::$type, $field));)*
    }};
}

fn main() {
    layout!(hvd_tensor_t {
        data => "data", dtype => "dtype", ndim => "ndim", shape => "shape", device => "device",
    });
    layout!(hvd_op_args_t {
        struct_size => "struct_size", process_set => "process_set",
        prescale_factor => "prescale_factor", postscale_factor => "postscale_factor",
        on_done => "on_done", on_done_user_data => "on_done_user_data",
        alloc => "alloc", alloc_user_data => "alloc_user_data",
        cuda_stream => "cuda_stream", flags => "flags",
    });
    layout!(hvd_stats_t {
        struct_size => "struct_size", reserved => "reserved",
        coordinator_requests => "coordinator_requests", rounds => "rounds",
        cache_hits => "cache_hits", cache_misses => "cache_misses",
        cache_evictions => "cache_evictions", collectives => "collectives", tensors => "tensors",
        fused_collectives => "fused_collectives", fused_tensors => "fused_tensors",
        fused_bytes => "fused_bytes",
    });
    layout!(hvd_dl_tensor_t {
        data => "data", device => "device", ndim => "ndim", dtype => "dtype", shape => "shape",
        strides => "strides", byte_offset => "byte_offset",
    });
}
