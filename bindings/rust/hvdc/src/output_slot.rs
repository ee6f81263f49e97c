//! Outputs sized only after negotiation (allgather, alltoall) go straight into a `Vec<T>`: the
//! op's allocator callback, which runs on the engine thread, reserves the vector there.
use crate::element::Element;
use hvdc_sys as sys;
use std::cell::UnsafeCell;
use std::os::raw::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Where the engine thread leaves the output vector. Heap-allocated at a fixed address that the
/// op keeps as `alloc_user_data`; whoever owns it must not free it before the op ends (handles
/// free it after `hvd_handle_free`; a forgotten handle leaks it, which is safe).
pub(crate) struct OutputSlot<T> {
    // Written once by the engine thread before the op completes; read by the owner only after
    // hvd_wait returned, which orders the two.
    vec: UnsafeCell<Vec<T>>,
    elements: UnsafeCell<usize>,
}

/// An owned `*mut OutputSlot<T>` (a raw pointer rather than a `Box`, so that moving the owner
/// never asserts uniqueness over memory the engine thread may be writing).
pub(crate) struct SlotPtr<T>(*mut OutputSlot<T>);

// The slot holds `T`s and is touched by one thread at a time (see OutputSlot).
unsafe impl<T: Send> Send for SlotPtr<T> {}
unsafe impl<T: Send> Sync for SlotPtr<T> {}

impl<T: Element> SlotPtr<T> {
    pub(crate) fn new() -> SlotPtr<T> {
        let slot = OutputSlot {
            vec: UnsafeCell::new(Vec::new()),
            elements: UnsafeCell::new(0),
        };
        SlotPtr(Box::into_raw(Box::new(slot)))
    }

    /// Makes `args` allocate the op's output in this slot.
    pub(crate) fn attach(&self, args: &mut sys::hvd_op_args_t) {
        args.alloc = Some(allocate::<T>);
        args.alloc_user_data = self.0 as *mut c_void;
    }

    /// The output, once the op has succeeded (the engine filled every element it allocated).
    ///
    /// # Safety
    /// The op that used this slot must have completed successfully.
    pub(crate) unsafe fn take(self) -> Vec<T> {
        let slot = &*self.0;
        let mut vec = std::mem::take(&mut *slot.vec.get());
        vec.set_len(*slot.elements.get());
        vec
    }
}

impl<T> Drop for SlotPtr<T> {
    fn drop(&mut self) {
        drop(unsafe { Box::from_raw(self.0) });
    }
}

// The allocator callback. It runs on the engine thread, so nothing may unwind out of it: a
// panic becomes NULL, which fails the op with a clear message instead of aborting the process.
unsafe extern "C" fn allocate<T: Element>(
    user_data: *mut c_void,
    output: *const sys::hvd_tensor_t,
    bytes: usize,
) -> *mut c_void {
    let attempt = catch_unwind(AssertUnwindSafe(|| {
        let slot = &*(user_data as *const OutputSlot<T>);
        reserve::<T>(slot, output, bytes)
    }));
    attempt.unwrap_or(std::ptr::null_mut())
}

unsafe fn reserve<T: Element>(
    slot: &OutputSlot<T>,
    output: *const sys::hvd_tensor_t,
    bytes: usize,
) -> *mut c_void {
    let size = std::mem::size_of::<T>();
    if output.is_null() || (*output).dtype != T::DTYPE || bytes % size != 0 {
        return std::ptr::null_mut();
    }
    let elements = bytes / size;
    let vec = &mut *slot.vec.get();
    if vec.try_reserve_exact(elements).is_err() {
        return std::ptr::null_mut();
    }
    *slot.elements.get() = elements;
    vec.as_mut_ptr() as *mut c_void
}
