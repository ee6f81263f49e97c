//! Blocking collectives: each enqueues, waits, and frees its handle before returning, so plain
//! borrows of the buffers are enough.
use crate::context::Hvdc;
use crate::element::Element;
use crate::error::{check, Result};
use crate::handle::{Alltoall, Completion, Exchanged, Gathered, OwnedHandle};
use crate::options::{Options, ReduceOp};
use crate::output_slot::SlotPtr;
use crate::process_set::position;
use crate::scope::check_share;
use crate::submit;
use hvdc_sys as sys;

impl Hvdc {
    /// Reduces `input` over all ranks into `output` (same length).
    pub fn allreduce<T: Element>(
        &self,
        input: &[T],
        output: &mut [T],
        op: ReduceOp,
        opts: &Options,
    ) -> Result<()> {
        submit::same_length("allreduce", input.len(), output.len())?;
        unsafe { submit::allreduce(input.as_ptr(), output.as_mut_ptr(), input.len(), op, opts)? }
            .wait()
    }

    /// Reduces `data` over all ranks in place.
    pub fn allreduce_in_place<T: Element>(
        &self,
        data: &mut [T],
        op: ReduceOp,
        opts: &Options,
    ) -> Result<()> {
        unsafe { submit::allreduce(data.as_ptr(), data.as_mut_ptr(), data.len(), op, opts)? }.wait()
    }

    /// Starts an in-place allreduce over a vector the handle owns until the op ends.
    pub fn allreduce_owned<T: Element>(
        &self,
        mut data: Vec<T>,
        op: ReduceOp,
        opts: &Options,
    ) -> Result<OwnedHandle<'_, T>> {
        let raw =
            unsafe { submit::allreduce(data.as_ptr(), data.as_mut_ptr(), data.len(), op, opts)? };
        Ok(OwnedHandle::new(raw, data, self))
    }

    /// Reduces every member in place as one grouped op (members named `<name>.<i>`).
    pub fn grouped_allreduce<T: Element>(
        &self,
        members: &mut [&mut [T]],
        op: ReduceOp,
        opts: &Options,
    ) -> Result<()> {
        unsafe { submit::grouped_allreduce(members, op, opts)? }.wait()
    }

    /// Every rank's `input` concatenated in rank order (lengths may differ per rank).
    pub fn allgather<T: Element>(&self, input: &[T], opts: &Options) -> Result<Vec<T>> {
        let slot = SlotPtr::new();
        let raw = unsafe { submit::allgather(input, &slot, opts)? };
        raw.wait()?;
        Gathered(slot).finish(raw.id())
    }

    /// Overwrites `data` with `root_rank`'s `data` (same length everywhere).
    pub fn broadcast<T: Element>(
        &self,
        data: &mut [T],
        root_rank: i32,
        opts: &Options,
    ) -> Result<()> {
        unsafe { submit::broadcast(data.as_mut_ptr(), data.len(), root_rank, opts)? }.wait()
    }

    /// Sends `splits[i]` elements of `input` to rank i of the set (an even split when `None`) and
    /// returns what this rank received, with the count from each rank.
    pub fn alltoall<T: Element>(
        &self,
        input: &[T],
        splits: Option<&[i32]>,
        opts: &Options,
    ) -> Result<Alltoall<T>> {
        let (_, ranks) = position(opts.process_set_id())?;
        let slot = SlotPtr::new();
        let raw = unsafe { submit::alltoall(input, splits, ranks, &slot, opts)? };
        raw.wait()?;
        Exchanged { slot, ranks }.finish(raw.id())
    }

    /// Reduces `input` and leaves this rank's share in `output`:
    /// `reducescatter_rows(rows, rank, size)` rows (rows of `Options::row_len` elements).
    pub fn reducescatter<T: Element>(
        &self,
        input: &[T],
        output: &mut [T],
        op: ReduceOp,
        opts: &Options,
    ) -> Result<()> {
        check_share(input.len(), output.len(), opts)?;
        unsafe { submit::reducescatter(input, output.as_mut_ptr(), op, opts)? }.wait()
    }

    /// Returns once every rank of the set has called it.
    pub fn barrier(&self, opts: &Options) -> Result<()> {
        submit::barrier(opts)?.wait()
    }

    /// For a rank out of data: blocks until every rank has joined, contributing zeros to the
    /// others' allreduces meanwhile. Returns the last rank to join.
    pub fn join(&self) -> Result<i32> {
        let mut last = -1;
        check(unsafe { sys::hvd_join(&mut last) })?;
        Ok(last)
    }
}
