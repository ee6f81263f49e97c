//! SharedVec and mem_region as a single rank: zeroed buffers of the asked length, lookups from
//! interior pointers, clear errors, and one buffer used before init, by a collective, and after
//! shutdown. Every test holds the engine's lock: a buffer another test allocates on a parallel
//! thread can take the address of one just freed, which the lookups after a free would find.
mod common;

use hvdc::{mem_region, ErrorKind, Options, ReduceOp, SharedVec, F16};
use std::os::raw::c_void;

#[test]
fn zeroed_has_the_asked_length_and_is_found_from_inside() {
    let _serial = common::exclusive();
    let mut v = SharedVec::<f64>::zeroed(1000).unwrap();
    assert_eq!(v.len(), 1000);
    assert!(!v.is_empty());
    assert!(v.iter().all(|&x| x == 0.0));
    v[999] = 7.5;
    assert_eq!(v.iter().sum::<f64>(), 7.5);
    let region = mem_region(&v[500]).unwrap();
    assert_eq!(region.base, v.as_ptr() as *mut u8);
    assert_eq!(region.bytes, 8000);
    let halves = SharedVec::<F16>::zeroed(3).unwrap();
    assert_eq!(&halves[..], &[F16(0); 3][..]);
}

#[test]
fn from_slice_copies_and_drop_frees() {
    let _serial = common::exclusive();
    let v = SharedVec::from_slice(&[3i32, 4, 5]).unwrap();
    assert_eq!(&v[..], &[3, 4, 5]);
    assert_eq!(format!("{:?}", v), "[3, 4, 5]");
    let start = v.as_ptr();
    drop(v);
    assert_eq!(
        mem_region(start).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let w = SharedVec::from_slice(&[1u8]).unwrap();
    let start = w.as_ptr();
    w.free().unwrap();
    assert!(mem_region(start).is_err());
}

#[test]
fn moves_to_another_thread() {
    let _serial = common::exclusive();
    let v = SharedVec::from_slice(&[1i64, 2]).unwrap();
    let sum = std::thread::spawn(move || v.iter().sum::<i64>())
        .join()
        .unwrap();
    assert_eq!(sum, 3);
}

#[test]
fn bad_input_is_a_clear_error() {
    let _serial = common::exclusive();
    let err = SharedVec::<f32>::zeroed(0).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message().contains("bytes is 0"), "{}", err);
    let err = SharedVec::<f32>::from_slice(&[]).unwrap_err();
    assert!(err.message().contains("bytes is 0"), "{}", err);
    let err = SharedVec::<i64>::zeroed(usize::MAX / 4).unwrap_err();
    assert!(err.message().contains("more bytes than usize"), "{}", err);
    // More than any address space holds: the system refuses it.
    let err = SharedVec::<u8>::zeroed(1 << 60).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OutOfMemory, "{}", err);
    let on_stack = [0u8; 4];
    let err = mem_region(on_stack.as_ptr()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(
        err.message().contains("in no buffer of hvd_mem_alloc"),
        "{}",
        err
    );
    // The safe API never frees a pointer it does not own; the library refuses foreign and
    // interior pointers with this status.
    let v = SharedVec::<u16>::zeroed(8).unwrap();
    for foreign in [
        on_stack.as_ptr() as *mut c_void,
        v[4..].as_ptr() as *mut c_void,
    ] {
        assert_eq!(
            unsafe { hvdc::sys::hvd_mem_free(foreign) },
            hvdc::sys::HVD_ERR_INVALID_ARGUMENT
        );
    }
    assert_eq!(mem_region(v.as_ptr()).unwrap().bytes, 16);
}

#[test]
fn a_buffer_outlives_the_engine() {
    let mut v = SharedVec::from_slice(&[1.0f32, 2.0, 3.0]).unwrap();
    let (_lock, hvdc) = common::start();
    hvdc.allreduce_in_place(&mut v, ReduceOp::Sum, &Options::new().name("shm"))
        .unwrap();
    let mut out = SharedVec::<f32>::zeroed(3).unwrap();
    hvdc.allreduce(
        &v,
        &mut out,
        ReduceOp::Average,
        &Options::new().name("shm.avg"),
    )
    .unwrap();
    assert_eq!(&out[..], &[1.0, 2.0, 3.0]);
    hvdc.shutdown().unwrap();
    v[0] = 9.0;
    assert_eq!(&v[..], &[9.0, 2.0, 3.0]);
    assert_eq!(mem_region(&v[2]).unwrap().bytes, 12);
}
