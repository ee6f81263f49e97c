//! Init, shutdown, configuration, and the calls around them, as a single rank.
mod common;

use hvdc::{Config, ConfigKey, ErrorKind, Hvdc};

#[test]
fn second_init_is_an_error_and_init_works_again_after_drop() {
    let (_lock, hvdc) = common::start();
    assert!(hvdc::is_initialized());
    let err = Hvdc::init().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidUsage);
    assert!(err.message().contains("already initialized"), "{}", err);
    drop(hvdc);
    assert!(!hvdc::is_initialized());
    let again = Hvdc::init().expect("init after shutdown");
    assert_eq!(again.rank(), 0);
    again.shutdown().expect("explicit shutdown");
    assert!(!hvdc::is_initialized());
}

#[test]
fn config_settings_reach_the_engine() {
    let _lock = common::exclusive();
    let config = Config::new()
        .unwrap()
        .set_str(ConfigKey::Bootstrap, "singleton")
        .unwrap()
        .set_int(ConfigKey::FusionThreshold, 0)
        .unwrap()
        .set_int(ConfigKey::LogLevel, 4)
        .unwrap();
    let hvdc = Hvdc::with_config(config).expect("init with a config");
    assert_eq!(
        (
            hvdc.rank(),
            hvdc.size(),
            hvdc.local_rank(),
            hvdc.local_size()
        ),
        (0, 1, 0, 1)
    );
    assert_eq!((hvdc.cross_rank(), hvdc.cross_size()), (0, 1));
}

#[test]
fn bad_config_values_are_reported_with_the_library_message() {
    let _lock = common::exclusive();
    let err = Config::new()
        .unwrap()
        .set_int(ConfigKey::Hostname, 3)
        .unwrap_err();
    assert!(err.code() < 0);
    assert!(!err.message().is_empty(), "{:?}", err);
    let err = Config::new()
        .unwrap()
        .set_str(ConfigKey::Hostname, "a\0b")
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message().contains("NUL"), "{}", err);
}

#[test]
fn version_abi_and_features() {
    let _lock = common::exclusive();
    assert_eq!(hvdc::abi_version(), hvdc::sys::HVDC_ABI_VERSION);
    assert!(
        hvdc::version_string().starts_with("0.1.0"),
        "{}",
        hvdc::version_string()
    );
    assert!(hvdc::has_feature(hvdc::Feature::Ucx));
    assert!(!hvdc::status_string(hvdc::sys::HVD_ERR_TIMEOUT).is_empty());
    // A count, or the reason there is none.
    match hvdc::device_count() {
        Ok(count) => assert!(count > 0, "{}", count),
        Err(err) => {
            assert_eq!(err.kind(), ErrorKind::Unsupported, "{}", err);
            assert!(!err.message().is_empty(), "{:?}", err);
        }
    }
}

#[test]
fn calls_before_init_fail_with_not_initialized() {
    let _lock = common::exclusive();
    // Reaching the library needs the guard; through the raw API the status is the library's.
    let status =
        unsafe { hvdc::sys::hvd_barrier_async(std::ptr::null(), std::ptr::null(), &mut 0) };
    assert_eq!(status, hvdc::sys::HVD_ERR_NOT_INITIALIZED);
    assert_eq!(unsafe { hvdc::sys::hvd_rank() }, -1);
}

#[test]
fn log_callback_receives_lines_and_survives_a_panicking_sink() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let _lock = common::exclusive();
    let lines = Arc::new(AtomicUsize::new(0));
    let seen = lines.clone();
    hvdc::set_log_callback(move |_level, _text| {
        if seen.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("a sink that panics must not take the engine down");
        }
    })
    .unwrap();
    let config = Config::new()
        .unwrap()
        .set_int(ConfigKey::LogLevel, 0)
        .unwrap();
    let hvdc = Hvdc::with_config(config).expect("init with trace logging");
    hvdc.barrier(&hvdc::Options::new())
        .expect("a barrier after a panicking log line");
    drop(hvdc);
    hvdc::clear_log_callback().unwrap();
    assert!(
        lines.load(Ordering::SeqCst) > 0,
        "trace logging produced no line"
    );
}

#[test]
fn thread_safety_follows_the_header() {
    // Every call but init and shutdown may come from any thread: the guard, handles, process
    // sets, configs and errors may move and be shared between threads.
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Hvdc>();
    send_sync::<Config>();
    send_sync::<hvdc::Error>();
    send_sync::<hvdc::OwnedHandle<'static, f32>>();
    send_sync::<hvdc::ProcessSet<'static>>();
    send_sync::<hvdc::Scope<'static, 'static>>();
    send_sync::<hvdc::ScopedHandle<'static, hvdc::Filled<'static, hvdc::F16>>>();
    send_sync::<hvdc::ScopedHandle<'static, hvdc::Gathered<i64>>>();
    send_sync::<hvdc::ScopedHandle<'static, hvdc::Exchanged<hvdc::Bool>>>();
}
