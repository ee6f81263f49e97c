//! Shared host memory: `SharedVec<T>` owns one buffer of `hvd_mem_alloc`, which the ranks on
//! this host can map, so that a collective on it reads and reduces the local peers' data in
//! place. It needs no engine: a `SharedVec` may be made before `Hvdc::init` and stays valid
//! after shutdown, until it is dropped.
use crate::element::Element;
use crate::error::{check, Error, Result};
use hvdc_sys as sys;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::os::raw::c_void;
use std::ptr::NonNull;

/// A fixed-length vector of `T` in shared host memory, zeroed when made. Derefs to `[T]`, so
/// every collective that takes a slice takes it; dropping it frees the memory.
///
/// `Send`, not `Sync`: moving the owner to another thread is as safe as moving a `Vec`, and
/// nothing is lost without `Sync` since `&[T]` borrowed from it can still be shared.
pub struct SharedVec<T: Element> {
    ptr: NonNull<T>,
    len: usize,
    _owns: PhantomData<T>,
}

// The buffer belongs to this value alone (no other handle to it exists in this process).
unsafe impl<T: Element> Send for SharedVec<T> {}

/// Where a buffer of `hvd_mem_alloc` lies: its start and the size it was made with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemRegion {
    pub base: *mut u8,
    pub bytes: usize,
}

/// The shared buffer that holds `ptr` (any address inside it). An address in no such buffer
/// is an `InvalidArgument` error. Reads no memory, so it takes any pointer.
pub fn mem_region<P>(ptr: *const P) -> Result<MemRegion> {
    let mut base: *mut c_void = std::ptr::null_mut();
    let mut bytes = 0usize;
    check(unsafe { sys::hvd_mem_size(ptr as *const c_void, &mut base, &mut bytes) })?;
    Ok(MemRegion {
        base: base as *mut u8,
        bytes,
    })
}

impl<T: Element> SharedVec<T> {
    /// `len` zeroed elements (every `Element` is valid as all-zero bytes). `len == 0` is an
    /// `InvalidArgument` error, as `hvd_mem_alloc` gives for 0 bytes.
    pub fn zeroed(len: usize) -> Result<SharedVec<T>> {
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
            Error::invalid_argument(format!("len is {}: more bytes than usize holds", len))
        })?;
        let mut out: *mut c_void = std::ptr::null_mut();
        check(unsafe { sys::hvd_mem_alloc(bytes, &mut out) })?;
        // Page-aligned, so aligned for every element type.
        let ptr = NonNull::new(out as *mut T)
            .ok_or_else(|| Error::new(sys::HVD_ERR_INTERNAL, "hvd_mem_alloc gave NULL"))?;
        Ok(SharedVec {
            ptr,
            len,
            _owns: PhantomData,
        })
    }

    /// A copy of `values` (not empty) in shared memory.
    pub fn from_slice(values: &[T]) -> Result<SharedVec<T>> {
        let mut vec = SharedVec::zeroed(values.len())?;
        vec.copy_from_slice(values);
        Ok(vec)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: shared buffers hold at least one element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_ptr(&self) -> *const T {
        self.ptr.as_ptr()
    }

    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.ptr.as_ptr()
    }

    /// Frees now and reports the library's status (dropping does the same and ignores it).
    pub fn free(self) -> Result<()> {
        let ptr = self.ptr.as_ptr() as *mut c_void;
        std::mem::forget(self);
        check(unsafe { sys::hvd_mem_free(ptr) }).map(|_| ())
    }
}

impl<T: Element> Deref for SharedVec<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Element> DerefMut for SharedVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Element> Drop for SharedVec<T> {
    fn drop(&mut self) {
        unsafe { sys::hvd_mem_free(self.ptr.as_ptr() as *mut c_void) };
    }
}

impl<T: Element + fmt::Debug> fmt::Debug for SharedVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
