//! Handles of ops in flight and what each kind of op gives back when it completes.
use crate::context::Hvdc;
use crate::element::Element;
use crate::error::{check, Result};
use crate::output_slot::SlotPtr;
use hvdc_sys as sys;

/// An `hvd_handle_t` this crate must free: `Drop` frees it, which waits for a running op.
#[derive(Debug)]
pub(crate) struct RawHandle(sys::hvd_handle_t);

impl RawHandle {
    pub(crate) fn new(id: sys::hvd_handle_t) -> RawHandle {
        RawHandle(id)
    }

    pub(crate) fn id(&self) -> sys::hvd_handle_t {
        self.0
    }

    /// Gives up ownership without freeing (the caller frees the id).
    pub(crate) fn into_id(self) -> sys::hvd_handle_t {
        let id = self.0;
        std::mem::forget(self);
        id
    }

    pub(crate) fn wait(&self) -> Result<()> {
        wait_id(self.0)
    }

    pub(crate) fn test(&self) -> Result<bool> {
        test_id(self.0)
    }
}

impl Drop for RawHandle {
    fn drop(&mut self) {
        unsafe { sys::hvd_handle_free(self.0) };
    }
}

pub(crate) fn wait_id(id: sys::hvd_handle_t) -> Result<()> {
    check(unsafe { sys::hvd_wait(id) }).map(|_| ())
}

/// Ok(true) once the op ended successfully, Ok(false) while it runs, its error if it failed.
pub(crate) fn test_id(id: sys::hvd_handle_t) -> Result<bool> {
    let mut done = 0;
    check(unsafe { sys::hvd_test(id, &mut done) })?;
    Ok(done != 0)
}

mod sealed {
    pub trait Sealed {}
}

/// What an op hands back once it has succeeded: implemented by this crate for each kind of op.
pub trait Completion: sealed::Sealed {
    type Output;
    #[doc(hidden)]
    fn finish(self, id: sys::hvd_handle_t) -> Result<Self::Output>;
}

/// A borrowed output written in place (allreduce, broadcast, reducescatter): given back.
#[derive(Debug)]
pub struct Filled<'a, T>(pub(crate) &'a mut [T]);

/// The members of a grouped allreduce, given back in order.
#[derive(Debug)]
pub struct FilledGroup<'a, T>(pub(crate) Vec<&'a mut [T]>);

/// An allgather's output, allocated when the ranks' sizes are known.
pub struct Gathered<T>(pub(crate) SlotPtr<T>);

/// An alltoall's output and the rows received from each rank.
pub struct Exchanged<T> {
    pub(crate) slot: SlotPtr<T>,
    pub(crate) ranks: i32,
}

/// A barrier's completion: nothing to give back.
#[derive(Debug)]
pub struct Reached;

/// The result of an alltoall: this rank's received rows, concatenated in rank order, and how
/// many came from each rank.
#[derive(Debug, Clone, PartialEq)]
pub struct Alltoall<T> {
    pub data: Vec<T>,
    pub received_splits: Vec<i32>,
}

impl<T> sealed::Sealed for Filled<'_, T> {}
impl<'a, T> Completion for Filled<'a, T> {
    type Output = &'a mut [T];
    fn finish(self, _id: sys::hvd_handle_t) -> Result<&'a mut [T]> {
        Ok(self.0)
    }
}

impl<T> sealed::Sealed for FilledGroup<'_, T> {}
impl<'a, T> Completion for FilledGroup<'a, T> {
    type Output = Vec<&'a mut [T]>;
    fn finish(self, _id: sys::hvd_handle_t) -> Result<Vec<&'a mut [T]>> {
        Ok(self.0)
    }
}

impl<T> sealed::Sealed for Gathered<T> {}
impl<T: Element> Completion for Gathered<T> {
    type Output = Vec<T>;
    fn finish(self, _id: sys::hvd_handle_t) -> Result<Vec<T>> {
        // finish runs only after the op succeeded.
        Ok(unsafe { self.0.take() })
    }
}

impl<T> sealed::Sealed for Exchanged<T> {}
impl<T: Element> Completion for Exchanged<T> {
    type Output = Alltoall<T>;
    fn finish(self, id: sys::hvd_handle_t) -> Result<Alltoall<T>> {
        let mut received_splits = vec![0i32; self.ranks as usize];
        check(unsafe {
            sys::hvd_handle_received_splits(id, received_splits.as_mut_ptr(), self.ranks)
        })?;
        let data = unsafe { self.slot.take() };
        Ok(Alltoall {
            data,
            received_splits,
        })
    }
}

impl sealed::Sealed for Reached {}
impl Completion for Reached {
    type Output = ();
    fn finish(self, _id: sys::hvd_handle_t) -> Result<()> {
        Ok(())
    }
}

/// An allreduce over a vector it owns until the op ends; `wait` gives the vector back. Dropping
/// it waits for the op; forgetting it leaks the vector, never frees memory the op still uses.
/// It borrows the `Hvdc` guard, so the engine cannot be shut down under it.
#[derive(Debug)]
#[must_use = "dropping the handle waits for the op and discards the vector"]
pub struct OwnedHandle<'h, T> {
    // Declared before `data`: it is freed (which waits for the op) before the vector is dropped.
    raw: RawHandle,
    data: Vec<T>,
    _hvdc: &'h Hvdc,
}

impl<'h, T> OwnedHandle<'h, T> {
    pub(crate) fn new(raw: RawHandle, data: Vec<T>, hvdc: &'h Hvdc) -> OwnedHandle<'h, T> {
        OwnedHandle {
            raw,
            data,
            _hvdc: hvdc,
        }
    }

    /// Blocks until the op ends; the reduced vector, or the op's error.
    pub fn wait(self) -> Result<Vec<T>> {
        self.raw.wait()?;
        drop(self.raw);
        Ok(self.data)
    }

    /// Never blocks: Ok(true) once the op has succeeded, Ok(false) while it runs.
    pub fn test(&self) -> Result<bool> {
        self.raw.test()
    }
}
