//! Per-op settings: the tensor name, the process set, allreduce's scale factors and, for CUDA
//! tensors, the stream and flags of `hvd_op_args_t`.
use crate::error::{Error, Result};
use crate::process_set::ProcessSet;
use hvdc_sys as sys;
use std::ffi::CString;
use std::os::raw::{c_char, c_void};

/// How allreduce and reducescatter combine values (`HVD_OP_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Average,
    Sum,
    Min,
    Max,
    Product,
}

impl ReduceOp {
    pub(crate) fn code(self) -> i32 {
        match self {
            ReduceOp::Average => sys::HVD_OP_AVERAGE,
            ReduceOp::Sum => sys::HVD_OP_SUM,
            ReduceOp::Min => sys::HVD_OP_MIN,
            ReduceOp::Max => sys::HVD_OP_MAX,
            ReduceOp::Product => sys::HVD_OP_PRODUCT,
        }
    }
}

/// Optional settings of one collective; `Options::new()` is every default: an automatic name
/// (ranks must then call in the same order), all ranks, scale factors 1, the default CUDA
/// stream and no device flags.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options<'a> {
    name: Option<&'a str>,
    process_set: i32,
    prescale: f64,
    postscale: f64,
    row_len: usize,
    // The cudaStream_t as an address, so that Options stays Send + Sync like a plain value.
    cuda_stream: usize,
    stream_ordered: bool,
    host_path: bool,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options::new()
    }
}

impl<'a> Options<'a> {
    pub const fn new() -> Options<'a> {
        Options {
            name: None,
            process_set: 0,
            prescale: 1.0,
            postscale: 1.0,
            row_len: 1,
            cuda_stream: 0,
            stream_ordered: false,
            host_path: false,
        }
    }

    /// The tensor's name across ranks (1 to 4096 bytes of UTF-8, no NUL). A grouped allreduce
    /// names its members `<name>.0`, `<name>.1`, ...
    pub const fn name(mut self, name: &'a str) -> Options<'a> {
        self.name = Some(name);
        self
    }

    /// Runs the op on this process set; only its members may call it.
    pub fn process_set(mut self, set: &ProcessSet<'_>) -> Options<'a> {
        self.process_set = set.id();
        self
    }

    /// Allreduce and reducescatter: multiply every input by `factor` before reducing.
    pub const fn prescale(mut self, factor: f64) -> Options<'a> {
        self.prescale = factor;
        self
    }

    /// Allreduce and reducescatter: multiply the result by `factor`.
    pub const fn postscale(mut self, factor: f64) -> Options<'a> {
        self.postscale = factor;
        self
    }

    /// Treats each slice as a row-major matrix with rows of `len` elements (default 1): then
    /// allgather's parts, alltoall's splits and reducescatter's shares count rows, and every
    /// slice's length must be a multiple of `len`.
    pub const fn row_len(mut self, len: usize) -> Options<'a> {
        self.row_len = len;
        self
    }

    /// CUDA tensors: the `cudaStream_t` the op is ordered after (its input is read once the
    /// work already queued there is done); null, the default, is the legacy default stream.
    /// CPU tensors ignore it.
    pub fn cuda_stream(mut self, stream: *mut c_void) -> Options<'a> {
        self.cuda_stream = stream as usize;
        self
    }

    /// CUDA tensors: later work on the `cuda_stream` sees the result without a host wait
    /// (`HVD_OP_STREAM_ORDERED`). CPU tensors ignore it.
    pub const fn stream_ordered(mut self, on: bool) -> Options<'a> {
        self.stream_ordered = on;
        self
    }

    /// CUDA tensors: stage the data through pinned host memory and reduce on the host
    /// (`HVD_OP_HOST_PATH`, Horovod's `device_dense='/cpu:0'`); every rank must make the same
    /// choice or the op fails with `ErrorKind::Mismatch`. CPU tensors ignore it.
    pub const fn host_path(mut self, on: bool) -> Options<'a> {
        self.host_path = on;
        self
    }

    pub(crate) fn row_elements(&self) -> usize {
        self.row_len
    }

    pub(crate) fn process_set_id(&self) -> i32 {
        self.process_set
    }

    pub(crate) fn c_name(&self) -> Result<CName> {
        match self.name {
            None => Ok(CName(None)),
            Some(name) => c_string("name", name).map(|s| CName(Some(s))),
        }
    }

    /// The names of a grouped allreduce's members, or none for automatic names.
    pub(crate) fn member_names(&self, count: usize) -> Result<Option<Vec<CString>>> {
        match self.name {
            None => Ok(None),
            Some(name) => (0..count)
                .map(|i| c_string("name", &format!("{}.{}", name, i)))
                .collect::<Result<Vec<_>>>()
                .map(Some),
        }
    }

    /// The C argument struct, without callbacks.
    pub(crate) fn raw_args(&self) -> sys::hvd_op_args_t {
        let mut args = std::mem::MaybeUninit::<sys::hvd_op_args_t>::uninit();
        let size = std::mem::size_of::<sys::hvd_op_args_t>();
        // hvd_op_args_init only fails for a NULL pointer or a size below the first fields.
        let status = unsafe { sys::hvd_op_args_init(args.as_mut_ptr(), size) };
        assert_eq!(
            status,
            sys::HVD_SUCCESS,
            "hvd_op_args_init failed with {}",
            status
        );
        let mut args = unsafe { args.assume_init() };
        args.process_set = self.process_set;
        args.prescale_factor = self.prescale;
        args.postscale_factor = self.postscale;
        args.cuda_stream = self.cuda_stream as *mut c_void;
        args.flags = self.device_flags();
        args
    }

    fn device_flags(&self) -> u32 {
        let ordered = if self.stream_ordered {
            sys::HVD_OP_STREAM_ORDERED
        } else {
            0
        };
        let host = if self.host_path {
            sys::HVD_OP_HOST_PATH
        } else {
            0
        };
        ordered | host
    }
}

/// A name as C wants it: NULL for an automatic name.
pub(crate) struct CName(Option<CString>);

impl CName {
    pub(crate) fn as_ptr(&self) -> *const c_char {
        self.0.as_ref().map_or(std::ptr::null(), |s| s.as_ptr())
    }
}

pub(crate) fn c_string(argument: &str, value: &str) -> Result<CString> {
    CString::new(value).map_err(|_| {
        Error::invalid_argument(format!("{} {:?} contains a NUL byte", argument, value))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_reach_the_c_struct_as_the_default_stream_and_no_flags() {
        let args = Options::new().raw_args();
        assert!(args.cuda_stream.is_null());
        assert_eq!(args.flags, 0);
        assert_eq!(args.process_set, 0);
        assert_eq!(args.prescale_factor, 1.0);
    }

    #[test]
    fn device_options_reach_the_c_struct() {
        let stream = 0x7f00 as *mut c_void;
        let args = Options::new()
            .cuda_stream(stream)
            .stream_ordered(true)
            .prescale(0.5)
            .raw_args();
        assert_eq!(args.cuda_stream, stream);
        assert_eq!(args.flags, sys::HVD_OP_STREAM_ORDERED);
        assert_eq!(args.prescale_factor, 0.5);
        let both = Options::new()
            .stream_ordered(true)
            .host_path(true)
            .raw_args();
        assert_eq!(
            both.flags,
            sys::HVD_OP_STREAM_ORDERED | sys::HVD_OP_HOST_PATH
        );
        let host_only = Options::new().host_path(true).raw_args();
        assert_eq!(host_only.flags, sys::HVD_OP_HOST_PATH);
        let cleared = Options::new().host_path(true).host_path(false).raw_args();
        assert_eq!(cleared.flags, 0);
    }

    #[test]
    fn options_with_a_stream_stay_send_and_sync() {
        fn shareable<T: Send + Sync>(_: &T) {}
        shareable(&Options::new().cuda_stream(0x10 as *mut c_void));
    }
}
