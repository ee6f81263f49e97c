//! Async ops over borrowed buffers: the scope waits for every op, even for leaked handles.
mod common;

use hvdc::{ErrorKind, Options, ReduceOp};

#[test]
fn scope_waits_for_a_forgotten_handle_before_its_buffer_is_released() {
    let (_lock, hvdc) = common::start();
    let mut data = vec![1.0f32; 4 << 20];
    let mut forgotten_id = 0;
    hvdc.scope(|s| {
        let handle = s
            .allreduce_in_place(&mut data, ReduceOp::Sum, &Options::new().prescale(2.0))
            .unwrap();
        forgotten_id = handle.id();
        std::mem::forget(handle);
    })
    .unwrap();
    // The scope freed the handle (a free waits for the op): the id is stale now, ...
    let mut done = 0;
    let status = unsafe { hvdc::sys::hvd_test(forgotten_id, &mut done) };
    assert_eq!(status, hvdc::sys::HVD_ERR_INVALID_HANDLE);
    // ... and every element was written before the buffer came back to us.
    assert!(data.iter().all(|&x| x == 2.0));
    drop(data);
}

#[test]
fn handles_give_back_their_outputs() {
    let (_lock, hvdc) = common::start();
    let input = vec![1u8, 2, 3];
    let mut out = vec![0u8; 3];
    let (mut g1, mut g2) = (vec![1i16], vec![2i16, 3]);
    let mut bcast = vec![7i64];
    let mut share = vec![0.0f64; 3];
    let rs_input = vec![0.5f64; 3];
    hvdc.scope(|s| -> hvdc::Result<()> {
        let reduce = s.allreduce(&input, &mut out, ReduceOp::Max, &Options::new())?;
        let group = s.grouped_allreduce(
            vec![&mut g1[..], &mut g2[..]],
            ReduceOp::Sum,
            &Options::new(),
        )?;
        let gather = s.allgather(&input, &Options::new())?;
        let cast = s.broadcast(&mut bcast, 0, &Options::new())?;
        let exchange = s.alltoall(&input, None, &Options::new())?;
        let scatter = s.reducescatter(&rs_input, &mut share, ReduceOp::Average, &Options::new())?;
        let barrier = s.barrier(&Options::new())?;
        barrier.wait()?;
        assert_eq!(exchange.wait()?.received_splits, [3]);
        assert_eq!(scatter.wait()?, &[0.5; 3]);
        assert_eq!(cast.wait()?, &[7]);
        assert_eq!(gather.wait()?, [1, 2, 3]);
        assert_eq!(group.wait()?.len(), 2);
        assert_eq!(reduce.wait()?, &[1, 2, 3]);
        Ok(())
    })
    .unwrap()
    .unwrap();
    assert_eq!((out, g1, g2), (vec![1, 2, 3], vec![1], vec![2, 3]));
}

#[test]
fn an_unwaited_failure_comes_back_from_the_scope() {
    let (_lock, hvdc) = common::start();
    hvdc.abort("fail the pending ones").unwrap();
    // The engine stops asynchronously: the barrier is either refused at submission or accepted
    // and failed later; in that case only the scope can report it, since its handle is leaked.
    let scoped = hvdc.scope(|s| s.barrier(&Options::new()).map(std::mem::forget));
    let err = match scoped {
        Err(from_scope) => from_scope,
        Ok(Err(from_submission)) => from_submission,
        Ok(Ok(())) => panic!("a scope whose op failed after abort reported success"),
    };
    assert_eq!(err.kind(), ErrorKind::Aborted, "{}", err);
}

#[test]
fn a_panic_in_the_scope_still_waits_for_its_ops() {
    let (_lock, hvdc) = common::start();
    let mut data = vec![3i32; 1 << 20];
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        hvdc.scope(|s| {
            let h = s
                .allreduce_in_place(&mut data, ReduceOp::Sum, &Options::new().postscale(2.0))
                .unwrap();
            std::mem::forget(h);
            panic!("inside the scope");
        })
    }));
    assert!(outcome.is_err());
    assert!(data.iter().all(|&x| x == 6));
}

#[test]
fn handles_move_to_other_threads() {
    let (_lock, hvdc) = common::start();
    let mut data = vec![5u16; 1000];
    hvdc.scope(|s| {
        let handle = s
            .allreduce_in_place(&mut data, ReduceOp::Sum, &Options::new())
            .unwrap();
        std::thread::scope(|threads| {
            threads.spawn(move || assert_eq!(handle.wait().unwrap()[0], 5));
        });
    })
    .unwrap();
}
