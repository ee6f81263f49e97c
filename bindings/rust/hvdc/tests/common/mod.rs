//! The engine is process-wide and the test harness runs tests on parallel threads: each test
//! takes this lock, then starts (and at its end stops) its own engine.
use std::sync::{Mutex, MutexGuard};

static ENGINE: Mutex<()> = Mutex::new(());

pub fn exclusive() -> MutexGuard<'static, ()> {
    ENGINE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub fn start() -> (MutexGuard<'static, ()>, hvdc::Hvdc) {
    let lock = exclusive();
    let engine = hvdc::Hvdc::init().expect("hvdc init as a single rank");
    assert_eq!(engine.size(), 1, "run the cargo tests without a launcher");
    (lock, engine)
}
