//! Status codes become `Error { code, kind, message }`; the message is read from
//! `hvd_last_error_message` at once, on the thread that made the failing call.
use hvdc_sys as sys;
use std::ffi::CStr;
use std::fmt;
use std::os::raw::c_char;

/// What went wrong, by family. New status codes may be added to the library: match with a
/// wildcard arm; a code this crate does not know is `Unknown` (the number stays in `Error::code`).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    InvalidArgument,
    InvalidUsage,
    NotInitialized,
    Unsupported,
    System,
    Internal,
    InvalidHandle,
    Mismatch,
    DuplicateName,
    Aborted,
    Timeout,
    PeerFailure,
    ShutDown,
    OutOfMemory,
    Transport,
    Bootstrap,
    Forked,
    /// CUDA or NCCL failed (the message carries its text).
    Device,
    Unknown,
}

impl ErrorKind {
    /// The kind of a (negative) status code.
    pub fn from_code(code: i32) -> ErrorKind {
        match code {
            sys::HVD_ERR_INVALID_ARGUMENT => ErrorKind::InvalidArgument,
            sys::HVD_ERR_INVALID_USAGE => ErrorKind::InvalidUsage,
            sys::HVD_ERR_NOT_INITIALIZED => ErrorKind::NotInitialized,
            sys::HVD_ERR_UNSUPPORTED => ErrorKind::Unsupported,
            sys::HVD_ERR_SYSTEM => ErrorKind::System,
            sys::HVD_ERR_INTERNAL => ErrorKind::Internal,
            sys::HVD_ERR_INVALID_HANDLE => ErrorKind::InvalidHandle,
            sys::HVD_ERR_MISMATCH => ErrorKind::Mismatch,
            sys::HVD_ERR_DUPLICATE_NAME => ErrorKind::DuplicateName,
            sys::HVD_ERR_ABORTED => ErrorKind::Aborted,
            sys::HVD_ERR_TIMEOUT => ErrorKind::Timeout,
            sys::HVD_ERR_PEER_FAILURE => ErrorKind::PeerFailure,
            sys::HVD_ERR_SHUT_DOWN => ErrorKind::ShutDown,
            sys::HVD_ERR_OUT_OF_MEMORY => ErrorKind::OutOfMemory,
            sys::HVD_ERR_TRANSPORT => ErrorKind::Transport,
            sys::HVD_ERR_BOOTSTRAP => ErrorKind::Bootstrap,
            sys::HVD_ERR_FORKED => ErrorKind::Forked,
            sys::HVD_ERR_DEVICE => ErrorKind::Device,
            _ => ErrorKind::Unknown,
        }
    }
}

/// A failed hvdc call: the library's status code, its kind, and the detail message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    code: i32,
    kind: ErrorKind,
    message: String,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error with this code and message (used for checks the binding makes itself).
    pub fn new(code: i32, message: impl Into<String>) -> Error {
        Error {
            code,
            kind: ErrorKind::from_code(code),
            message: message.into(),
        }
    }

    /// An error for `code` with the calling thread's `hvd_last_error_message`.
    pub(crate) fn last(code: i32) -> Error {
        let message = unsafe { text(sys::hvd_last_error_message()) };
        Error::new(code, message)
    }

    pub(crate) fn invalid_argument(message: impl Into<String>) -> Error {
        Error::new(sys::HVD_ERR_INVALID_ARGUMENT, message)
    }

    pub fn code(&self) -> i32 {
        self.code
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = status_string(self.code);
        if self.message.is_empty() {
            write!(f, "hvdc error {} ({})", self.code, name)
        } else {
            write!(f, "hvdc error {} ({}): {}", self.code, name, self.message)
        }
    }
}

impl std::error::Error for Error {}

/// `Ok(status)` for success and in-progress codes, else the error with its message.
pub(crate) fn check(status: i32) -> Result<i32> {
    if status < 0 {
        Err(Error::last(status))
    } else {
        Ok(status)
    }
}

/// The library's static text for a status code.
pub fn status_string(code: i32) -> String {
    let _shared = crate::context::read_lifecycle();
    unsafe { text(sys::hvd_status_string(code)) }
}

/// Copies a NUL-terminated C string; NULL reads as "".
pub(crate) unsafe fn text(ptr: *const c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    CStr::from_ptr(ptr).to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_to_kinds_and_unknown_codes_stay_readable() {
        assert_eq!(
            ErrorKind::from_code(sys::HVD_ERR_MISMATCH),
            ErrorKind::Mismatch
        );
        assert_eq!(ErrorKind::from_code(sys::HVD_ERR_FORKED), ErrorKind::Forked);
        assert_eq!(ErrorKind::from_code(sys::HVD_ERR_DEVICE), ErrorKind::Device);
        let e = Error::new(-999, "x");
        assert_eq!(e.kind(), ErrorKind::Unknown);
        assert_eq!(e.code(), -999);
        assert!(e.to_string().contains("-999"), "{}", e);
    }
}
