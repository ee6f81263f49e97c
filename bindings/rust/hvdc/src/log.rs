//! Routes the library's log lines to a Rust closure instead of stderr.
use crate::context::read_lifecycle;
use crate::error::{check, Result};
use hvdc_sys as sys;
use std::ffi::CStr;
use std::os::raw::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

type LogSink = dyn Fn(i32, &str) + Send + Sync;

/// Sends each log line at or above the configured level (0 trace .. 4 error) to `sink`, on
/// whatever thread logs it (often the engine thread). `sink` must not call hvdc; a panic in it
/// is caught and the line dropped. A replaced sink is never freed, because a line may still be
/// running through it on another thread; install one for the process, not one per op.
pub fn set_log_callback(sink: impl Fn(i32, &str) + Send + Sync + 'static) -> Result<()> {
    let boxed: Box<Box<LogSink>> = Box::new(Box::new(sink));
    let user_data = Box::into_raw(boxed) as *mut c_void;
    let _shared = read_lifecycle();
    check(unsafe { sys::hvd_set_log_callback(Some(forward), user_data) }).map(|_| ())
}

/// Restores logging to stderr (the previous sink is leaked, as above).
pub fn clear_log_callback() -> Result<()> {
    let _shared = read_lifecycle();
    check(unsafe { sys::hvd_set_log_callback(None, std::ptr::null_mut()) }).map(|_| ())
}

unsafe extern "C" fn forward(user_data: *mut c_void, level: i32, message: *const c_char) {
    // Unwinding out of an extern "C" function is undefined behaviour: stop every panic here.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let sink = &*(user_data as *const Box<LogSink>);
        let text = if message.is_null() {
            Default::default()
        } else {
            CStr::from_ptr(message).to_string_lossy()
        };
        sink(level, &text);
    }));
}
