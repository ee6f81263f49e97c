//! Settings for `Hvdc::with_config`, over the library's opaque config object. They override the
//! `HVDC_*` environment variables.
use crate::context::read_lifecycle;
use crate::error::{check, Result};
use crate::options::c_string;
use hvdc_sys as sys;

/// The keys of `hvd_config_set_*`, named after `HVD_CFG_*`; each says its value type.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigKey {
    /// int: 0 trace .. 5 off.
    LogLevel,
    /// str: host identity for the local/cross topology.
    Hostname,
    /// str: "auto", "singleton", "mpi" or "store".
    Bootstrap,
    /// int: microseconds the engine spins before it sleeps.
    SpinMicros,
    /// int: bytes fused into one allreduce; 0 disables fusion.
    FusionThreshold,
    /// int: response-cache entries; 0 disables the cache.
    CacheCapacity,
    /// int: 1 = results independent of fusion and timing.
    Deterministic,
    /// str: static process sets, e.g. "0,2;1,3".
    ProcessSets,
    /// int: this rank (with `Size`).
    Rank,
    /// int: the number of ranks.
    Size,
    /// str: address of rank 0's rendezvous store.
    MasterAddr,
    /// int: its port.
    MasterPort,
    /// str: the job's rendezvous secret.
    Secret,
    /// str: interface the rendezvous store binds to.
    Iface,
}

impl ConfigKey {
    fn code(self) -> i32 {
        match self {
            ConfigKey::LogLevel => sys::HVD_CFG_LOG_LEVEL,
            ConfigKey::Hostname => sys::HVD_CFG_HOSTNAME,
            ConfigKey::Bootstrap => sys::HVD_CFG_BOOTSTRAP,
            ConfigKey::SpinMicros => sys::HVD_CFG_SPIN_MICROS,
            ConfigKey::FusionThreshold => sys::HVD_CFG_FUSION_THRESHOLD,
            ConfigKey::CacheCapacity => sys::HVD_CFG_CACHE_CAPACITY,
            ConfigKey::Deterministic => sys::HVD_CFG_DETERMINISTIC,
            ConfigKey::ProcessSets => sys::HVD_CFG_PROCESS_SETS,
            ConfigKey::Rank => sys::HVD_CFG_RANK,
            ConfigKey::Size => sys::HVD_CFG_SIZE,
            ConfigKey::MasterAddr => sys::HVD_CFG_MASTER_ADDR,
            ConfigKey::MasterPort => sys::HVD_CFG_MASTER_PORT,
            ConfigKey::Secret => sys::HVD_CFG_SECRET,
            ConfigKey::Iface => sys::HVD_CFG_IFACE,
        }
    }
}

/// An owned `hvd_config_t`.
#[derive(Debug)]
pub struct Config {
    raw: *mut sys::hvd_config_t,
}

// The object is owned by this value alone and the library keeps no reference to it; the config
// functions may be called from any thread.
unsafe impl Send for Config {}
unsafe impl Sync for Config {}

impl Config {
    pub fn new() -> Result<Config> {
        let mut raw = std::ptr::null_mut();
        let _shared = read_lifecycle();
        check(unsafe { sys::hvd_config_create(&mut raw) })?;
        Ok(Config { raw })
    }

    /// Sets an integer setting; the library rejects a key of the wrong type or a bad value.
    pub fn set_int(self, key: ConfigKey, value: i64) -> Result<Config> {
        let _shared = read_lifecycle();
        check(unsafe { sys::hvd_config_set_int(self.raw, key.code(), value) })?;
        Ok(self)
    }

    /// Sets a text setting.
    pub fn set_str(self, key: ConfigKey, value: &str) -> Result<Config> {
        let value = c_string("config value", value)?;
        let _shared = read_lifecycle();
        check(unsafe { sys::hvd_config_set_str(self.raw, key.code(), value.as_ptr()) })?;
        Ok(self)
    }

    /// Static process sets (ids 1, 2, ... in this order), e.g. `&[&[0, 2], &[1, 3]]`.
    pub fn process_sets(self, sets: &[&[i32]]) -> Result<Config> {
        let text: Vec<String> = sets
            .iter()
            .map(|set| {
                set.iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect();
        self.set_str(ConfigKey::ProcessSets, &text.join(";"))
    }

    pub(crate) fn as_ptr(&self) -> *const sys::hvd_config_t {
        self.raw
    }
}

impl Drop for Config {
    fn drop(&mut self) {
        let _shared = read_lifecycle();
        unsafe { sys::hvd_config_destroy(self.raw) }
    }
}
