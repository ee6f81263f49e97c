//! The process-wide engine as a guard value: `Hvdc::init` starts it, dropping the guard shuts it
//! down. The header forbids hvd_init/hvd_shutdown from racing with any other hvdc call; a
//! borrow of the guard is what every collective needs, so no call made through it can be in
//! flight when the guard is dropped, and the free functions of this crate take a shared lock that
//! init and shutdown take exclusively.
use crate::config::Config;
use crate::error::{check, text, Error, Result};
use hvdc_sys as sys;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

// Held exclusively by init and shutdown, shared by the free functions that reach the library.
static LIFECYCLE: RwLock<bool> = RwLock::new(false);

fn write_lifecycle() -> RwLockWriteGuard<'static, bool> {
    LIFECYCLE
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) fn read_lifecycle() -> RwLockReadGuard<'static, bool> {
    LIFECYCLE
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The running engine. `Send + Sync`: the header lets every call other than init and shutdown
/// come from any thread at any time, and shutdown (in `Drop`) needs the guard by value, which
/// no thread can take while another still borrows it.
#[derive(Debug)]
pub struct Hvdc {
    _private: (),
}

impl Hvdc {
    /// Starts the engine from the environment (`HVDC_*`, the launcher's variables). Collective
    /// over all ranks. A second `init` while a guard exists fails with `InvalidUsage`.
    pub fn init() -> Result<Hvdc> {
        Hvdc::start(|| unsafe { sys::hvd_init() })
    }

    /// Starts the engine with settings that override the environment.
    pub fn with_config(config: Config) -> Result<Hvdc> {
        Hvdc::start(|| unsafe { sys::hvd_init_with_config(config.as_ptr()) })
    }

    fn start(init: impl FnOnce() -> i32) -> Result<Hvdc> {
        let mut running = write_lifecycle();
        if *running || unsafe { sys::hvd_is_initialized() } != 0 {
            return Err(Error::new(
                sys::HVD_ERR_INVALID_USAGE,
                "hvdc is already initialized in this process: drop the existing Hvdc first",
            ));
        }
        check(init())?;
        *running = true;
        Ok(Hvdc { _private: () })
    }

    /// Shuts down now and reports the library's status (dropping the guard does the same and
    /// ignores it).
    pub fn shutdown(self) -> Result<()> {
        let status = self.stop();
        std::mem::forget(self);
        check(status).map(|_| ())
    }

    fn stop(&self) -> i32 {
        let mut running = write_lifecycle();
        *running = false;
        unsafe { sys::hvd_shutdown() }
    }

    pub fn rank(&self) -> i32 {
        unsafe { sys::hvd_rank() }
    }

    pub fn size(&self) -> i32 {
        unsafe { sys::hvd_size() }
    }

    pub fn local_rank(&self) -> i32 {
        unsafe { sys::hvd_local_rank() }
    }

    pub fn local_size(&self) -> i32 {
        unsafe { sys::hvd_local_size() }
    }

    pub fn cross_rank(&self) -> i32 {
        unsafe { sys::hvd_cross_rank() }
    }

    pub fn cross_size(&self) -> i32 {
        unsafe { sys::hvd_cross_size() }
    }
}

impl Drop for Hvdc {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether an engine is running in this process.
pub fn is_initialized() -> bool {
    let _shared = read_lifecycle();
    unsafe { sys::hvd_is_initialized() != 0 }
}

/// "0.1.0 +ucx +mpi ...": the loaded library's version and compiled features.
pub fn version_string() -> String {
    let _shared = read_lifecycle();
    unsafe { text(sys::hvd_version_string()) }
}

/// The loaded library's ABI version (compare with `hvdc_sys::HVDC_ABI_VERSION`).
pub fn abi_version() -> i32 {
    let _shared = read_lifecycle();
    unsafe { sys::hvd_abi_version() }
}

/// The CUDA devices usable now. Without a GPU or driver, or in a library built without CUDA,
/// an `Unsupported` error that says why.
pub fn device_count() -> Result<i32> {
    let _shared = read_lifecycle();
    let mut count = 0i32;
    check(unsafe { sys::hvd_device_count(&mut count) })?;
    Ok(count)
}

/// A feature compiled into the loaded library.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    Ucx,
    Mpi,
    Cuda,
    Nccl,
}

/// Whether the loaded library was built with `feature`.
pub fn has_feature(feature: Feature) -> bool {
    let code = match feature {
        Feature::Ucx => sys::HVD_FEATURE_UCX,
        Feature::Mpi => sys::HVD_FEATURE_MPI,
        Feature::Cuda => sys::HVD_FEATURE_CUDA,
        Feature::Nccl => sys::HVD_FEATURE_NCCL,
    };
    let _shared = read_lifecycle();
    unsafe { sys::hvd_has_feature(code) != 0 }
}
