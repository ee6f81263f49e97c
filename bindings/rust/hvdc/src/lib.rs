//! Safe Rust API over hvdc, a Horovod-style distributed training engine.
//!
//! ```no_run
//! use hvdc::{Hvdc, Options, ReduceOp};
//! let hvdc = Hvdc::init()?;
//! let mut grad = vec![hvdc.rank() as f32 + 1.0; 4];
//! hvdc.allreduce_in_place(&mut grad, ReduceOp::Sum, &Options::new())?;
//! println!("rank {}: {:?}", hvdc.rank(), grad);
//! # Ok::<(), hvdc::Error>(())
//! ```
//!
//! Launch it on several ranks with `hvdcrun -np 2 ./program` or `mpirun -np 2 ./program`; alone,
//! it runs as a single rank.
//!
//! # Async ops over borrowed buffers
//!
//! [`Hvdc::scope`] bounds async ops the way `std::thread::scope` bounds threads: the buffers are
//! borrowed for the whole scope, and the scope waits for every op before it returns.
//!
//! ```
//! use hvdc::{Hvdc, Options, ReduceOp};
//! let hvdc = Hvdc::init()?;
//! let (mut a, mut b) = (vec![1i32, 2], vec![3.0f64]);
//! hvdc.scope(|s| -> hvdc::Result<()> {
//!     let ha = s.allreduce_in_place(&mut a, ReduceOp::Sum, &Options::new().name("a"))?;
//!     let hb = s.allreduce_in_place(&mut b, ReduceOp::Max, &Options::new().name("b"))?;
//!     assert_eq!(ha.wait()?, &[hvdc.size(), 2 * hvdc.size()]);
//!     assert_eq!(hb.wait()?, &[3.0]);
//!     Ok(())
//! })??;
//! # Ok::<(), hvdc::Error>(())
//! ```
//!
//! A handle cannot leave its scope, so it can never outlive the buffers it borrows:
//!
//! ```compile_fail
//! use hvdc::{Hvdc, Options, ReduceOp};
//! let hvdc = Hvdc::init().unwrap();
//! let mut data = vec![1.0f32; 4];
//! let escaped = hvdc.scope(|s| s.allreduce_in_place(&mut data, ReduceOp::Sum, &Options::new()).unwrap());
//! drop(data);
//! escaped.unwrap().wait();
//! ```
//!
//! Nor can a scope borrow a buffer that dies before the scope has waited:
//!
//! ```compile_fail
//! use hvdc::{Hvdc, Options, ReduceOp};
//! let hvdc = Hvdc::init().unwrap();
//! hvdc.scope(|s| {
//!     let mut local = vec![1.0f32; 4];
//!     let handle = s.allreduce_in_place(&mut local, ReduceOp::Sum, &Options::new()).unwrap();
//!     std::mem::forget(handle);
//! }).unwrap();
//! ```
//!
//! # Shared host memory
//!
//! [`SharedVec`] holds its elements in memory the ranks on this host map, so that collectives
//! on it read and reduce the local peers' data in place. It derefs to a slice, so it goes
//! wherever a buffer does; it needs no engine and outlives shutdown until it is dropped.
//!
//! ```
//! use hvdc::{Hvdc, Options, ReduceOp, SharedVec};
//! let mut grad = SharedVec::<f32>::from_slice(&[1.0, 2.0])?;
//! let hvdc = Hvdc::init()?;
//! hvdc.allreduce_in_place(&mut grad, ReduceOp::Sum, &Options::new().name("grad"))?;
//! let n = hvdc.size() as f32;
//! drop(hvdc); // shut down: grad stays valid until it is dropped
//! assert_eq!(&grad[..], &[n, 2.0 * n][..]);
//! # Ok::<(), hvdc::Error>(())
//! ```
//!
//! # Threads
//!
//! [`Hvdc`] is `Send + Sync`: the C header lets every call except init and shutdown come from
//! any thread at any time, and shutdown happens only when the guard is dropped, which the
//! borrow checker allows only once no thread uses it. No Rust closure runs on the engine thread
//! except behind `catch_unwind` (the output allocator of allgather and alltoall, and the log
//! callback).

mod collectives;
mod config;
mod context;
mod diagnostics;
mod element;
mod error;
mod half;
mod handle;
mod log;
mod options;
mod output_slot;
mod process_set;
mod scope;
mod shared_vec;
mod submit;

pub use config::{Config, ConfigKey};
pub use context::{
    abi_version, device_count, has_feature, is_initialized, version_string, Feature, Hvdc,
};
pub use diagnostics::Stats;
pub use element::{Bool, Element, BF16, F16};
pub use error::{status_string, Error, ErrorKind, Result};
pub use handle::{
    Alltoall, Completion, Exchanged, Filled, FilledGroup, Gathered, OwnedHandle, Reached,
};
pub use log::{clear_log_callback, set_log_callback};
pub use options::{Options, ReduceOp};
pub use process_set::ProcessSet;
pub use scope::{Scope, ScopedHandle};
pub use shared_vec::{mem_region, MemRegion, SharedVec};
pub use submit::reducescatter_rows;

/// The raw C declarations.
pub use hvdc_sys as sys;
