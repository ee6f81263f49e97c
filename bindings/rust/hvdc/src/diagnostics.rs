//! What helps debug a job: counters, the pending-op report, the timeline, abort and the first
//! asynchronous error.
use crate::context::Hvdc;
use crate::error::{check, Error, Result};
use crate::options::c_string;
use hvdc_sys as sys;
use std::os::raw::c_char;

/// The engine's counters (`hvd_stats_t`).
pub type Stats = sys::hvd_stats_t;

impl Hvdc {
    /// This rank's counters since init.
    pub fn stats(&self) -> Result<Stats> {
        let mut stats = Stats {
            struct_size: std::mem::size_of::<Stats>() as u32,
            ..Stats::default()
        };
        check(unsafe { sys::hvd_stats_get(&mut stats) })?;
        Ok(stats)
    }

    /// The counters as "name value" lines.
    pub fn stats_format(&self) -> Result<String> {
        read_text(|buffer, size, length| unsafe { sys::hvd_stats_format(buffer, size, length) })
    }

    /// Logs a report of every op in flight on this rank (warning level) and returns it too.
    pub fn dump_pending(&self) -> Result<String> {
        read_text(|buffer, size, length| unsafe { sys::hvd_dump_pending(buffer, size, length) })
    }

    /// Rank 0 starts (or switches to) a Chrome trace-event timeline at `path`.
    pub fn timeline_start(&self, path: &str) -> Result<()> {
        let path = c_string("path", path)?;
        check(unsafe { sys::hvd_timeline_start(path.as_ptr()) }).map(|_| ())
    }

    /// Finishes the timeline file.
    pub fn timeline_stop(&self) -> Result<()> {
        check(unsafe { sys::hvd_timeline_stop() }).map(|_| ())
    }

    /// Fails every pending and later op on every rank with `Aborted`, carrying `reason`.
    pub fn abort(&self, reason: &str) -> Result<()> {
        let reason = c_string("reason", reason)?;
        check(unsafe { sys::hvd_abort(reason.as_ptr()) }).map(|_| ())
    }

    /// The first asynchronous error the engine met, if any.
    pub fn async_error(&self) -> Result<Option<Error>> {
        let mut status = sys::HVD_SUCCESS;
        check(unsafe { sys::hvd_get_async_error(&mut status) })?;
        Ok(if status < 0 {
            Some(Error::last(status))
        } else {
            None
        })
    }
}

/// Reads text with the (buffer, size, length) convention. The text may change between calls
/// (each report is new), so it reads into a buffer with room to spare and retries larger when
/// the library says the text did not fit.
fn read_text(read: impl Fn(*mut c_char, usize, *mut usize) -> i32) -> Result<String> {
    let mut capacity = 16 * 1024;
    loop {
        let mut buffer = vec![0u8; capacity];
        let mut length = 0usize;
        let status = read(buffer.as_mut_ptr() as *mut c_char, capacity, &mut length);
        if status < 0 && length >= capacity {
            capacity = length + 1 + 1024;
            continue;
        }
        check(status)?;
        buffer.truncate(length);
        return Ok(String::from_utf8_lossy(&buffer).into_owned());
    }
}
