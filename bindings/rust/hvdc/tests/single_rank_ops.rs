//! Every collective as a single rank, where each result is known exactly, plus the binding's own
//! argument checks.
mod common;

use hvdc::{Bool, Element, ErrorKind, Options, ReduceOp, BF16, F16};

fn reduce_keeps<T: Element + PartialEq + std::fmt::Debug>(hvdc: &hvdc::Hvdc, values: Vec<T>) {
    for op in [
        ReduceOp::Sum,
        ReduceOp::Min,
        ReduceOp::Max,
        ReduceOp::Product,
    ] {
        let mut out = values.clone();
        hvdc.allreduce(&values, &mut out, op, &Options::new())
            .unwrap();
        assert_eq!(out, values, "{:?}", op);
    }
}

#[test]
fn allreduce_every_element_type() {
    let (_lock, hvdc) = common::start();
    reduce_keeps(&hvdc, vec![0u8, 7, 255]);
    reduce_keeps(&hvdc, vec![-128i8, 0, 127]);
    reduce_keeps(&hvdc, vec![0u16, 65535]);
    reduce_keeps(&hvdc, vec![i16::MIN, 5]);
    reduce_keeps(&hvdc, vec![i32::MIN, -1, i32::MAX]);
    reduce_keeps(&hvdc, vec![i64::MIN, 3, i64::MAX]);
    reduce_keeps(&hvdc, vec![1.5f32, -2.25]);
    reduce_keeps(&hvdc, vec![1e300f64, -0.5]);
    reduce_keeps(&hvdc, vec![F16::from_f32(0.5), F16::from_f32(-3.0)]);
    reduce_keeps(&hvdc, vec![BF16::from_f32(0.5), BF16::from_f32(-3.0)]);
    reduce_keeps(&hvdc, vec![Bool::TRUE, Bool::FALSE]);
    let mut avg = vec![7i32, -7];
    hvdc.allreduce_in_place(&mut avg, ReduceOp::Average, &Options::new())
        .unwrap();
    assert_eq!(avg, [7, -7]);
}

#[test]
fn scale_factors_and_names_apply() {
    let (_lock, hvdc) = common::start();
    let mut data = vec![1.0f64, 2.0];
    let opts = Options::new().name("scaled").prescale(3.0).postscale(0.5);
    hvdc.allreduce_in_place(&mut data, ReduceOp::Sum, &opts)
        .unwrap();
    assert_eq!(data, [1.5, 3.0]);
    let mut empty: Vec<f32> = Vec::new();
    hvdc.allreduce_in_place(&mut empty, ReduceOp::Sum, &Options::new().name("empty"))
        .unwrap();
}

#[test]
fn grouped_allgather_broadcast_alltoall_reducescatter_barrier() {
    let (_lock, hvdc) = common::start();
    let (mut a, mut b) = (vec![1i64, 2], vec![3i64]);
    hvdc.grouped_allreduce(
        &mut [&mut a[..], &mut b[..]],
        ReduceOp::Sum,
        &Options::new().name("g"),
    )
    .unwrap();
    assert_eq!((a, b), (vec![1, 2], vec![3]));
    assert_eq!(hvdc.allgather(&[4u16, 5], &Options::new()).unwrap(), [4, 5]);
    assert_eq!(
        hvdc.allgather::<u8>(&[], &Options::new()).unwrap(),
        Vec::<u8>::new()
    );
    let mut root = vec![F16::from_f32(2.0)];
    hvdc.broadcast(&mut root, 0, &Options::new()).unwrap();
    assert_eq!(root[0].to_f32(), 2.0);
    let exchanged = hvdc
        .alltoall(&[1i8, 2, 3], Some(&[3]), &Options::new())
        .unwrap();
    assert_eq!(
        (exchanged.data, exchanged.received_splits),
        (vec![1, 2, 3], vec![3])
    );
    let even = hvdc
        .alltoall(&[9.0f32, 8.0], None, &Options::new())
        .unwrap();
    assert_eq!(even.data, [9.0, 8.0]);
    let mut share = vec![0i32; 3];
    hvdc.reducescatter(&[5, 6, 7], &mut share, ReduceOp::Sum, &Options::new())
        .unwrap();
    assert_eq!(share, [5, 6, 7]);
    hvdc.barrier(&Options::new().name("b")).unwrap();
    assert_eq!(hvdc.join().unwrap(), 0);
}

#[test]
fn binding_checks_name_the_argument_and_value() {
    let (_lock, hvdc) = common::start();
    let err = hvdc
        .allreduce(
            &[1.0f32, 2.0],
            &mut [0.0f32; 3],
            ReduceOp::Sum,
            &Options::new(),
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(
        err.message().contains("3 elements") && err.message().contains("input has 2"),
        "{}",
        err
    );
    let err = hvdc
        .reducescatter(&[1i32, 2], &mut [0i32; 1], ReduceOp::Sum, &Options::new())
        .unwrap_err();
    assert!(err.message().contains("gets 2"), "{}", err);
    let err = hvdc
        .alltoall(&[1u8, 2], Some(&[1, 1]), &Options::new())
        .unwrap_err();
    assert!(err.message().contains("splits has 2 entries"), "{}", err);
    let err = hvdc.barrier(&Options::new().name("a\0b")).unwrap_err();
    assert!(err.message().contains("NUL"), "{}", err);
}

#[test]
fn library_errors_carry_code_kind_and_message() {
    let (_lock, hvdc) = common::start();
    let err = hvdc.broadcast(&mut [1u8], 5, &Options::new()).unwrap_err();
    assert_eq!(
        (err.code(), err.kind()),
        (
            hvdc::sys::HVD_ERR_INVALID_ARGUMENT,
            ErrorKind::InvalidArgument
        )
    );
    assert!(err.message().contains('5'), "{}", err);
    assert!(err.to_string().contains(&err.message().to_string()));
    let err = hvdc
        .allreduce_in_place(&mut [Bool::TRUE], ReduceOp::Average, &Options::new())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{}", err);
    let err = hvdc.process_set(42).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{}", err);
}

#[test]
fn process_sets_as_a_single_rank() {
    let (_lock, hvdc) = common::start();
    assert_eq!(hvdc.process_set_ids().unwrap(), [0]);
    let all = hvdc.process_set(0).unwrap();
    assert_eq!(
        (
            all.rank().unwrap(),
            all.size().unwrap(),
            all.included().unwrap()
        ),
        (0, 1, true)
    );
    assert_eq!(all.ranks().unwrap(), [0]);
    let err = hvdc.process_set_create(&[0]).unwrap_err(); // a set of the same ranks exists
    assert!(err.code() < 0 && !err.message().is_empty(), "{}", err);
}

#[test]
fn owned_allreduce_gives_the_vector_back() {
    let (_lock, hvdc) = common::start();
    let handle = hvdc
        .allreduce_owned(
            vec![1.0f32; 1 << 16],
            ReduceOp::Sum,
            &Options::new().postscale(2.0),
        )
        .unwrap();
    let _ = handle.test().unwrap();
    let data = handle.wait().unwrap();
    assert!(data.iter().all(|&x| x == 2.0));
    // Dropped without waiting: the drop waits, then frees the vector.
    drop(
        hvdc.allreduce_owned(vec![1u8; 1000], ReduceOp::Max, &Options::new())
            .unwrap(),
    );
    // Leaked: the vector leaks with the handle, so the op never writes into freed memory.
    std::mem::forget(
        hvdc.allreduce_owned(vec![3i64; 10], ReduceOp::Sum, &Options::new())
            .unwrap(),
    );
}

#[test]
fn diagnostics_report() {
    let (_lock, hvdc) = common::start();
    hvdc.barrier(&Options::new()).unwrap();
    let stats = hvdc.stats().unwrap();
    assert!(stats.tensors >= 1, "{:?}", stats);
    assert!(
        hvdc.stats_format().unwrap().contains("tensors"),
        "{}",
        hvdc.stats_format().unwrap()
    );
    let _report = hvdc.dump_pending().unwrap();
    let path = std::env::temp_dir().join(format!("hvdc-rust-timeline-{}.json", std::process::id()));
    hvdc.timeline_start(path.to_str().unwrap()).unwrap();
    hvdc.allreduce_in_place(&mut [1i32], ReduceOp::Sum, &Options::new().name("timed"))
        .unwrap();
    hvdc.timeline_stop().unwrap();
    let trace = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).ok();
    assert!(trace.contains("timed"), "{}", trace);
    assert!(hvdc.async_error().unwrap().is_none());
}

#[test]
fn abort_fails_later_ops_with_aborted() {
    let (_lock, hvdc) = common::start();
    hvdc.abort("rust test").unwrap();
    let err = hvdc.barrier(&Options::new()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Aborted, "{}", err);
    assert!(err.message().contains("rust test"), "{}", err);
}

#[test]
fn row_len_shapes_every_slice_into_rows() {
    let (_lock, hvdc) = common::start();
    let rows = Options::new().row_len(2);
    let mut data = vec![1i32, 2, 3, 4];
    hvdc.allreduce_in_place(&mut data, ReduceOp::Sum, &rows)
        .unwrap();
    assert_eq!(data, [1, 2, 3, 4]);
    let exchanged = hvdc.alltoall(&[5u8, 6, 7, 8], Some(&[2]), &rows).unwrap();
    assert_eq!(exchanged.received_splits, [2]); // rows, not elements
    let err = hvdc
        .allreduce_in_place(&mut [0i32; 3], ReduceOp::Sum, &rows)
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(
        err.message().contains("3 elements") && err.message().contains("row_len 2"),
        "{}",
        err
    );
    let err = hvdc
        .barrier(&Options::new())
        .and_then(|_| hvdc.allgather(&[1u8], &Options::new().row_len(0)));
    assert_eq!(err.unwrap_err().kind(), ErrorKind::InvalidArgument);
}
