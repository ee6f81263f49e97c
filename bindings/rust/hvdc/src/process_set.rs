//! Process sets: subsets of the ranks with their own negotiation (set 0 holds every rank).
use crate::context::Hvdc;
use crate::error::{check, Error, Result};
use hvdc_sys as sys;

/// A process set of the running engine. It borrows the `Hvdc` guard, so the engine outlives it.
#[derive(Debug, Clone, Copy)]
pub struct ProcessSet<'h> {
    id: i32,
    _hvdc: &'h Hvdc,
}

impl Hvdc {
    /// Creates a set of these ranks. Collective over all ranks, members or not, each passing the
    /// same ranks; blocks until the set exists.
    pub fn process_set_create(&self, ranks: &[i32]) -> Result<ProcessSet<'_>> {
        let count = i32::try_from(ranks.len()).map_err(|_| {
            Error::invalid_argument(format!("ranks: {} entries is too many", ranks.len()))
        })?;
        let mut id = 0;
        check(unsafe { sys::hvd_process_set_create(ranks.as_ptr(), count, &mut id) })?;
        Ok(ProcessSet { id, _hvdc: self })
    }

    /// The set with this id (0 = every rank; static sets from the configuration are 1, 2, ...).
    pub fn process_set(&self, id: i32) -> Result<ProcessSet<'_>> {
        let set = ProcessSet { id, _hvdc: self };
        set.size()?; // fails with the library's message for an id that does not exist
        Ok(set)
    }

    /// The ids of every set, ascending (0 first).
    pub fn process_set_ids(&self) -> Result<Vec<i32>> {
        read_list(|ids, capacity, count| unsafe { sys::hvd_process_set_ids(ids, capacity, count) })
    }
}

impl<'h> ProcessSet<'h> {
    pub fn id(&self) -> i32 {
        self.id
    }

    /// This rank's rank in the set, or -1 when it is not a member.
    pub fn rank(&self) -> Result<i32> {
        let mut rank = 0;
        check(unsafe { sys::hvd_process_set_rank(self.id, &mut rank) })?;
        Ok(rank)
    }

    pub fn size(&self) -> Result<i32> {
        let mut size = 0;
        check(unsafe { sys::hvd_process_set_size(self.id, &mut size) })?;
        Ok(size)
    }

    pub fn included(&self) -> Result<bool> {
        let mut included = 0;
        check(unsafe { sys::hvd_process_set_included(self.id, &mut included) })?;
        Ok(included != 0)
    }

    /// The members, ascending.
    pub fn ranks(&self) -> Result<Vec<i32>> {
        let id = self.id;
        read_list(|ranks, capacity, count| unsafe {
            sys::hvd_process_set_ranks(id, ranks, capacity, count)
        })
    }

    /// Removes the set; collective over all ranks like create.
    pub fn destroy(self) -> Result<()> {
        check(unsafe { sys::hvd_process_set_destroy(self.id) }).map(|_| ())
    }
}

/// Asks for the length, then reads the list (the conventions of hvd_process_set_ranks/_ids).
fn read_list(read: impl Fn(*mut i32, i32, *mut i32) -> i32) -> Result<Vec<i32>> {
    let mut count = 0;
    check(read(std::ptr::null_mut(), 0, &mut count))?;
    let mut list = vec![0i32; count as usize];
    check(read(list.as_mut_ptr(), count, &mut count))?;
    list.truncate(count as usize);
    Ok(list)
}

/// This rank's rank in the set and the set's size.
pub(crate) fn position(set_id: i32) -> Result<(i32, i32)> {
    let (mut rank, mut size) = (0, 0);
    check(unsafe { sys::hvd_process_set_rank(set_id, &mut rank) })?;
    check(unsafe { sys::hvd_process_set_size(set_id, &mut size) })?;
    Ok((rank, size))
}
