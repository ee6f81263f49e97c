//! Async collectives over borrowed buffers, bounded by a scope as `std::thread::scope` bounds
//! threads: buffers are borrowed for the whole scope, and the scope waits for every op it
//! started before it returns, so no op can outlive its buffers, even when a handle is leaked
//! with `mem::forget`.
use crate::context::Hvdc;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::handle::{
    self, Completion, Exchanged, Filled, FilledGroup, Gathered, RawHandle, Reached,
};
use crate::options::{Options, ReduceOp};
use crate::output_slot::SlotPtr;
use crate::process_set::position;
use crate::submit;
use hvdc_sys as sys;
use std::marker::PhantomData;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard};

/// Starts async collectives whose buffers live at least as long as the scope.
pub struct Scope<'scope, 'env: 'scope> {
    hvdc: &'env Hvdc,
    // Ids of ops not yet freed by their handle; the scope frees what remains when it ends.
    live: Mutex<Vec<sys::hvd_handle_t>>,
    // Invariant in both lifetimes, as in std::thread::scope, so 'scope cannot be shortened to
    // let a buffer die before the scope waits.
    scope: PhantomData<&'scope mut &'scope ()>,
    env: PhantomData<&'env mut &'env ()>,
}

/// An op started in a scope. `wait` gives back what the op produced; dropping the handle waits
/// for the op and ignores its result; leaking it leaves the waiting to the scope.
#[must_use = "an op's result is only seen through wait or test"]
pub struct ScopedHandle<'scope, C: Completion> {
    id: sys::hvd_handle_t,
    live: &'scope Mutex<Vec<sys::hvd_handle_t>>,
    completion: Option<C>,
}

impl Hvdc {
    /// Runs `f` with a scope for async collectives over borrowed buffers, then waits for and
    /// frees every op started in it that no handle has waited for. Returns `f`'s value, or the
    /// first error among those ops (an op whose handle was waited or dropped reports there).
    /// If `f` panics, the scope still waits for its ops before the panic goes on.
    pub fn scope<'env, F, R>(&'env self, f: F) -> Result<R>
    where
        F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> R,
    {
        let scope = Scope {
            hvdc: self,
            live: Mutex::new(Vec::new()),
            scope: PhantomData,
            env: PhantomData,
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| f(&scope)));
        let leftover = scope.finish_all();
        match outcome {
            Err(panic) => resume_unwind(panic),
            Ok(value) => leftover.map(|_| value),
        }
    }
}

fn lock(live: &Mutex<Vec<sys::hvd_handle_t>>) -> MutexGuard<'_, Vec<sys::hvd_handle_t>> {
    live.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<'scope, 'env> Scope<'scope, 'env> {
    fn finish_all(&self) -> Result<()> {
        let ids = std::mem::take(&mut *lock(&self.live));
        let mut first_error = None;
        for id in ids {
            if let Err(e) = handle::wait_id(id) {
                first_error.get_or_insert(e);
            }
            unsafe { sys::hvd_handle_free(id) };
        }
        first_error.map_or(Ok(()), Err)
    }

    fn adopt<C: Completion>(
        &'scope self,
        raw: RawHandle,
        completion: C,
    ) -> ScopedHandle<'scope, C> {
        let id = raw.into_id();
        lock(&self.live).push(id);
        ScopedHandle {
            id,
            live: &self.live,
            completion: Some(completion),
        }
    }

    /// The engine this scope belongs to.
    pub fn hvdc(&self) -> &'env Hvdc {
        self.hvdc
    }

    /// Reduces `input` over all ranks into `output` (same length).
    pub fn allreduce<T: Element>(
        &'scope self,
        input: &'scope [T],
        output: &'scope mut [T],
        op: ReduceOp,
        opts: &Options,
    ) -> Result<ScopedHandle<'scope, Filled<'scope, T>>> {
        submit::same_length("allreduce", input.len(), output.len())?;
        let raw = unsafe {
            submit::allreduce(input.as_ptr(), output.as_mut_ptr(), input.len(), op, opts)?
        };
        Ok(self.adopt(raw, Filled(output)))
    }

    /// Reduces `data` over all ranks in place.
    pub fn allreduce_in_place<T: Element>(
        &'scope self,
        data: &'scope mut [T],
        op: ReduceOp,
        opts: &Options,
    ) -> Result<ScopedHandle<'scope, Filled<'scope, T>>> {
        let raw =
            unsafe { submit::allreduce(data.as_ptr(), data.as_mut_ptr(), data.len(), op, opts)? };
        Ok(self.adopt(raw, Filled(data)))
    }

    /// Reduces every member in place, behind one handle.
    pub fn grouped_allreduce<T: Element>(
        &'scope self,
        mut members: Vec<&'scope mut [T]>,
        op: ReduceOp,
        opts: &Options,
    ) -> Result<ScopedHandle<'scope, FilledGroup<'scope, T>>> {
        let raw = unsafe { submit::grouped_allreduce(&mut members, op, opts)? };
        Ok(self.adopt(raw, FilledGroup(members)))
    }

    /// Concatenates every rank's `input` in rank order; `wait` gives the vector.
    pub fn allgather<T: Element>(
        &'scope self,
        input: &'scope [T],
        opts: &Options,
    ) -> Result<ScopedHandle<'scope, Gathered<T>>> {
        let slot = SlotPtr::new();
        let raw = unsafe { submit::allgather(input, &slot, opts)? };
        Ok(self.adopt(raw, Gathered(slot)))
    }

    /// Overwrites `data` with `root_rank`'s `data` on every rank.
    pub fn broadcast<T: Element>(
        &'scope self,
        data: &'scope mut [T],
        root_rank: i32,
        opts: &Options,
    ) -> Result<ScopedHandle<'scope, Filled<'scope, T>>> {
        let raw = unsafe { submit::broadcast(data.as_mut_ptr(), data.len(), root_rank, opts)? };
        Ok(self.adopt(raw, Filled(data)))
    }

    /// Sends `splits[i]` elements of `input` to rank i (even split when `None`); `wait` gives the
    /// received elements and how many came from each rank.
    pub fn alltoall<T: Element>(
        &'scope self,
        input: &'scope [T],
        splits: Option<&[i32]>,
        opts: &Options,
    ) -> Result<ScopedHandle<'scope, Exchanged<T>>> {
        let (_, ranks) = position(opts.process_set_id())?;
        let slot = SlotPtr::new();
        let raw = unsafe { submit::alltoall(input, splits, ranks, &slot, opts)? };
        Ok(self.adopt(raw, Exchanged { slot, ranks }))
    }

    /// Reduces `input` (same length on every rank) and leaves this rank's share in `output`:
    /// `reducescatter_rows(rows, rank, size)` rows (rows of `Options::row_len` elements).
    pub fn reducescatter<T: Element>(
        &'scope self,
        input: &'scope [T],
        output: &'scope mut [T],
        op: ReduceOp,
        opts: &Options,
    ) -> Result<ScopedHandle<'scope, Filled<'scope, T>>> {
        check_share(input.len(), output.len(), opts)?;
        let raw = unsafe { submit::reducescatter(input, output.as_mut_ptr(), op, opts)? };
        Ok(self.adopt(raw, Filled(output)))
    }

    /// Completes once every rank of the process set has called it.
    pub fn barrier(&'scope self, opts: &Options) -> Result<ScopedHandle<'scope, Reached>> {
        let raw = submit::barrier(opts)?;
        Ok(self.adopt(raw, Reached))
    }
}

/// Checks that a reducescatter output holds exactly this rank's share.
pub(crate) fn check_share(input: usize, output: usize, opts: &Options) -> Result<()> {
    let (rank, ranks) = position(opts.process_set_id())?;
    if rank < 0 {
        return Ok(()); // not a member: the library refuses the op with its own message
    }
    let rows = submit::Shape::of(input, opts)?.rows();
    let share = submit::reducescatter_rows(rows, rank, ranks) * opts.row_elements();
    if share == output {
        return Ok(());
    }
    Err(Error::invalid_argument(format!(
        "reducescatter: output has {} elements but rank {} of {} gets {} of the input's {} \
         (rows of {})",
        output,
        rank,
        ranks,
        share,
        input,
        opts.row_elements()
    )))
}

impl<'scope, C: Completion> ScopedHandle<'scope, C> {
    /// Blocks until the op ends; what it produced, or its error.
    pub fn wait(mut self) -> Result<C::Output> {
        let output = match handle::wait_id(self.id) {
            Ok(()) => self
                .completion
                .take()
                .expect("a handle completes once")
                .finish(self.id),
            Err(e) => Err(e),
        };
        drop(self); // frees the id; an unused completion (and its output slot) goes after it
        output
    }

    /// Never blocks: Ok(true) once the op has succeeded, Ok(false) while it runs.
    pub fn test(&self) -> Result<bool> {
        handle::test_id(self.id)
    }

    /// The raw `hvd_handle_t`, valid until this handle is waited or dropped (or, if it is
    /// forgotten, until the scope ends).
    pub fn id(&self) -> u64 {
        self.id
    }
}

impl<'scope, C: Completion> Drop for ScopedHandle<'scope, C> {
    fn drop(&mut self) {
        // Wait (inside free) before the completion, which may own the op's output memory, goes.
        lock(self.live).retain(|&id| id != self.id);
        unsafe { sys::hvd_handle_free(self.id) };
    }
}
