//! Enqueues each collective and returns its handle. Every function here is `unsafe` for one
//! reason: the buffers behind the pointers must stay valid, and the output unaliased, until the
//! op ends. The sync calls, scopes and owned handles are what guarantee that.
use crate::element::Element;
use crate::error::{check, Error, Result};
use crate::handle::RawHandle;
use crate::options::{Options, ReduceOp};
use crate::output_slot::SlotPtr;
use hvdc_sys as sys;
use std::os::raw::{c_char, c_void};

/// The shape of a slice: `[len]`, or `[len / row_len, row_len]` with `Options::row_len`.
pub(crate) struct Shape {
    dims: [i64; 2],
    ndim: i32,
}

impl Shape {
    pub(crate) fn of(len: usize, opts: &Options) -> Result<Shape> {
        let row_len = opts.row_elements();
        // A slice never holds more than isize::MAX bytes, so its length fits an i64.
        if row_len == 1 {
            return Ok(Shape {
                dims: [len as i64, 1],
                ndim: 1,
            });
        }
        if row_len == 0 || len % row_len != 0 {
            return Err(Error::invalid_argument(format!(
                "a slice of {} elements is not made of rows of row_len {}",
                len, row_len
            )));
        }
        Ok(Shape {
            dims: [(len / row_len) as i64, row_len as i64],
            ndim: 2,
        })
    }

    pub(crate) fn rows(&self) -> usize {
        self.dims[0] as usize
    }
}

/// A tensor descriptor; the library copies the shape during the call that takes it.
fn describe<T: Element>(data: *const T, shape: &Shape) -> sys::hvd_tensor_t {
    sys::hvd_tensor_t {
        data: data as *mut c_void,
        dtype: T::DTYPE,
        ndim: shape.ndim,
        shape: shape.dims.as_ptr(),
        device: sys::hvd_device_t {
            type_: sys::HVD_DEVICE_CPU,
            id: 0,
        },
    }
}

fn enqueue(call: impl FnOnce(*mut sys::hvd_handle_t) -> i32) -> Result<RawHandle> {
    let mut id: sys::hvd_handle_t = 0;
    check(call(&mut id))?;
    Ok(RawHandle::new(id))
}

pub(crate) fn same_length(what: &str, input: usize, output: usize) -> Result<()> {
    if input == output {
        return Ok(());
    }
    Err(Error::invalid_argument(format!(
        "{}: output has {} elements but input has {}; they must be equal",
        what, output, input
    )))
}

pub(crate) unsafe fn allreduce<T: Element>(
    input: *const T,
    output: *mut T,
    len: usize,
    op: ReduceOp,
    opts: &Options,
) -> Result<RawHandle> {
    let shape = Shape::of(len, opts)?;
    let tensor = describe(input, &shape);
    let (name, args) = (opts.c_name()?, opts.raw_args());
    enqueue(|h| {
        sys::hvd_allreduce_async(
            &tensor,
            output as *mut c_void,
            op.code(),
            name.as_ptr(),
            &args,
            h,
        )
    })
}

pub(crate) unsafe fn broadcast<T: Element>(
    data: *mut T,
    len: usize,
    root_rank: i32,
    opts: &Options,
) -> Result<RawHandle> {
    let shape = Shape::of(len, opts)?;
    let tensor = describe(data, &shape);
    let (name, args) = (opts.c_name()?, opts.raw_args());
    enqueue(|h| {
        sys::hvd_broadcast_async(
            &tensor,
            data as *mut c_void,
            root_rank,
            name.as_ptr(),
            &args,
            h,
        )
    })
}

/// In place over every member.
pub(crate) unsafe fn grouped_allreduce<T: Element>(
    members: &mut [&mut [T]],
    op: ReduceOp,
    opts: &Options,
) -> Result<RawHandle> {
    let shapes = members
        .iter()
        .map(|m| Shape::of(m.len(), opts))
        .collect::<Result<Vec<_>>>()?;
    let tensors: Vec<sys::hvd_tensor_t> = members
        .iter()
        .zip(&shapes)
        .map(|(m, shape)| describe(m.as_ptr(), shape))
        .collect();
    let outputs: Vec<*mut c_void> = members
        .iter_mut()
        .map(|m| m.as_mut_ptr() as *mut c_void)
        .collect();
    let names = opts.member_names(members.len())?;
    let name_ptrs: Option<Vec<*const c_char>> = names
        .as_ref()
        .map(|names| names.iter().map(|n| n.as_ptr()).collect());
    let names_arg = name_ptrs.as_ref().map_or(std::ptr::null(), |p| p.as_ptr());
    let args = opts.raw_args();
    enqueue(|h| {
        sys::hvd_grouped_allreduce_async(
            tensors.as_ptr(),
            outputs.as_ptr(),
            members.len(),
            op.code(),
            names_arg,
            &args,
            h,
        )
    })
}

pub(crate) unsafe fn allgather<T: Element>(
    input: &[T],
    slot: &SlotPtr<T>,
    opts: &Options,
) -> Result<RawHandle> {
    let shape = Shape::of(input.len(), opts)?;
    let tensor = describe(input.as_ptr(), &shape);
    let (name, mut args) = (opts.c_name()?, opts.raw_args());
    slot.attach(&mut args);
    enqueue(|h| sys::hvd_allgather_async(&tensor, name.as_ptr(), &args, h))
}

/// `splits`, when given, has one entry per rank of the process set (`ranks`).
pub(crate) unsafe fn alltoall<T: Element>(
    input: &[T],
    splits: Option<&[i32]>,
    ranks: i32,
    slot: &SlotPtr<T>,
    opts: &Options,
) -> Result<RawHandle> {
    if let Some(splits) = splits {
        if splits.len() != ranks as usize {
            return Err(Error::invalid_argument(format!(
                "alltoall: splits has {} entries but the process set has {} ranks",
                splits.len(),
                ranks
            )));
        }
    }
    let shape = Shape::of(input.len(), opts)?;
    let tensor = describe(input.as_ptr(), &shape);
    let splits_arg = splits.map_or(std::ptr::null(), |s| s.as_ptr());
    let (name, mut args) = (opts.c_name()?, opts.raw_args());
    slot.attach(&mut args);
    enqueue(|h| sys::hvd_alltoall_async(&tensor, splits_arg, name.as_ptr(), &args, h))
}

/// `output` must hold exactly this rank's rows (see `reducescatter_rows`).
pub(crate) unsafe fn reducescatter<T: Element>(
    input: &[T],
    output: *mut T,
    op: ReduceOp,
    opts: &Options,
) -> Result<RawHandle> {
    let shape = Shape::of(input.len(), opts)?;
    let tensor = describe(input.as_ptr(), &shape);
    let (name, args) = (opts.c_name()?, opts.raw_args());
    enqueue(|h| {
        sys::hvd_reducescatter_async(
            &tensor,
            output as *mut c_void,
            op.code(),
            name.as_ptr(),
            &args,
            h,
        )
    })
}

/// The rows reducescatter leaves on the rank at `rank` of `ranks`: the first `total % ranks`
/// ranks get one more.
pub fn reducescatter_rows(total: usize, rank: i32, ranks: i32) -> usize {
    let (rank, ranks) = (rank as usize, ranks as usize);
    total / ranks + usize::from(rank < total % ranks)
}

pub(crate) fn barrier(opts: &Options) -> Result<RawHandle> {
    let (name, args) = (opts.c_name()?, opts.raw_args());
    enqueue(|h| unsafe { sys::hvd_barrier_async(name.as_ptr(), &args, h) })
}
