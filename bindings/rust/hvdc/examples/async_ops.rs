//! Async ops in scopes and owned handles, join, process sets and a mismatch error, checked at
//! any number of ranks (`hvdcrun -np 2`, `mpirun -np 3`).
#[path = "common/check.rs"]
mod check;

use check::{value, Checker};
use hvdc::{ErrorKind, Hvdc, Options, ReduceOp};
use std::time::{Duration, Instant};

fn sum_of(size: i32, i: usize) -> i64 {
    (0..size).map(|r| value(r, i)).sum()
}

fn scoped_ops(hvdc: &Hvdc, check: &mut Checker) {
    let (rank, size) = (hvdc.rank(), hvdc.size());
    let mut a: Vec<i64> = (0..100).map(|i| value(rank, i)).collect();
    let mut b = vec![rank as f32; 3];
    let mine = vec![rank as u16; 2];
    let mut root = vec![rank; 4];
    let result = hvdc.scope(|s| -> hvdc::Result<()> {
        // Submitted in a different order on odd ranks: names let the ranks agree anyway.
        let (ha, hb) = if rank % 2 == 0 {
            let ha =
                s.allreduce_in_place(&mut a, ReduceOp::Sum, &Options::new().name("scoped.a"))?;
            (
                ha,
                s.allreduce_in_place(&mut b, ReduceOp::Max, &Options::new().name("scoped.b"))?,
            )
        } else {
            let hb =
                s.allreduce_in_place(&mut b, ReduceOp::Max, &Options::new().name("scoped.b"))?;
            (
                s.allreduce_in_place(&mut a, ReduceOp::Sum, &Options::new().name("scoped.a"))?,
                hb,
            )
        };
        let hg = s.allgather(&mine, &Options::new().name("scoped.gather"))?;
        let hr = s.broadcast(&mut root, 0, &Options::new().name("scoped.bcast"))?;
        let want_a: Vec<i64> = (0..100).map(|i| sum_of(size, i)).collect();
        check.equal("scoped allreduce sum", ha.wait()?.to_vec(), want_a);
        check.equal(
            "scoped allreduce max",
            hb.wait()?.to_vec(),
            vec![(size - 1) as f32; 3],
        );
        let want_g: Vec<u16> = (0..size).flat_map(|r| vec![r as u16; 2]).collect();
        check.equal("scoped allgather", hg.wait()?, want_g);
        check.equal("scoped broadcast", hr.wait()?.to_vec(), vec![0; 4]);
        Ok(())
    });
    check.equal(
        "scoped ops",
        result.and_then(|r| r).map_err(|e| e.to_string()),
        Ok(()),
    );
}

/// Rank 0 leaks its handle; rank 1 submits its part only after a delay. The scope must not
/// return on rank 0 before the op has ended, so the buffer comes back complete.
fn forgotten_handle_waits_for_a_late_peer(hvdc: &Hvdc, check: &mut Checker) {
    let (rank, size) = (hvdc.rank(), hvdc.size());
    let delay = Duration::from_millis(300);
    let mut data = vec![rank + 1; 1 << 16];
    // Start together, so that rank 1's delay is what rank 0 waits for.
    hvdc.barrier(&Options::new().name("late.start")).unwrap();
    let start = Instant::now();
    let scope = hvdc.scope(|s| {
        if rank == 1 {
            std::thread::sleep(delay);
        }
        let h = s
            .allreduce_in_place(&mut data, ReduceOp::Sum, &Options::new().name("late"))
            .unwrap();
        std::mem::forget(h);
    });
    let elapsed = start.elapsed();
    check.equal(
        "scope with a forgotten handle",
        scope.map_err(|e| e.to_string()),
        Ok(()),
    );
    let want = size * (size + 1) / 2;
    check.expect(data.iter().all(|&x| x == want), || {
        format!("late allreduce: {} != {}", data[0], want)
    });
    if rank == 0 && size > 1 {
        check.expect(elapsed >= delay / 2, || {
            format!("scope returned after {:?}, before the peer came", elapsed)
        });
    }
}

fn owned(hvdc: &Hvdc, check: &mut Checker) {
    let size = hvdc.size();
    let handles: Vec<_> = (0..4)
        .map(|k| {
            let data = vec![k as f64 + hvdc.rank() as f64; 1000];
            let name = format!("owned.{}", k);
            hvdc.allreduce_owned(data, ReduceOp::Average, &Options::new().name(&name))
                .unwrap()
        })
        .collect();
    for (k, handle) in handles.into_iter().enumerate() {
        let want = k as f64 + (size - 1) as f64 / 2.0;
        let got = handle.wait().unwrap();
        check.expect(got.iter().all(|&x| (x - want).abs() < 1e-12), || {
            format!("owned {}: {} != {}", k, got[0], want)
        });
    }
}

/// Rank 0 joins at once; the others allreduce first (rank 0 contributes zeros), then join.
fn join(hvdc: &Hvdc, check: &mut Checker) {
    let (rank, size) = (hvdc.rank(), hvdc.size());
    if rank != 0 {
        let mut data = vec![rank * 3; 8];
        hvdc.allreduce_in_place(&mut data, ReduceOp::Average, &Options::new().name("uneven"))
            .unwrap();
        let want = (1..size).map(|r| r * 3).sum::<i32>() / size;
        check.equal("allreduce with a joined rank", data, vec![want; 8]);
    }
    let last = hvdc.join().unwrap();
    let ok = if size == 1 {
        last == 0
    } else {
        (1..size).contains(&last)
    };
    check.expect(ok, || format!("join: last joined rank {}", last));
    let mut agreed = [last, -last];
    hvdc.allreduce_in_place(&mut agreed, ReduceOp::Max, &Options::new())
        .unwrap();
    check.equal(
        "every rank saw the same last joined rank",
        agreed,
        [last, -last],
    );
}

/// A set of every rank except rank 1: members reduce over it, the others are left out.
fn process_sets(hvdc: &Hvdc, check: &mut Checker) {
    let (rank, size) = (hvdc.rank(), hvdc.size());
    if size < 2 {
        return;
    }
    let members: Vec<i32> = (0..size).filter(|&r| r != 1).rev().collect();
    let set = hvdc.process_set_create(&members).unwrap();
    // Engine bug (reported): a coordinator drops requests for a set it has not installed yet,
    // so a member that submits right after create can hang (1 run in 8 at np 3). A barrier over
    // every rank ends only once every rank has run the create. Set HVDC_RUST_SET_RACE=1 to
    // leave it out and reproduce the hang.
    if std::env::var_os("HVDC_RUST_SET_RACE").is_none() {
        hvdc.barrier(&Options::new().name("set.created")).unwrap();
    }
    let mut sorted = members.clone();
    sorted.sort_unstable();
    check.equal("set ranks", set.ranks().unwrap(), sorted.clone());
    check.equal("set size", set.size().unwrap(), sorted.len() as i32);
    check.equal(
        "set ids",
        hvdc.process_set_ids().unwrap(),
        vec![0, set.id()],
    );
    let included = rank != 1;
    check.equal("set included", set.included().unwrap(), included);
    let set_rank = sorted
        .iter()
        .position(|&r| r == rank)
        .map_or(-1, |p| p as i32);
    check.equal("set rank", set.rank().unwrap(), set_rank);
    if included {
        let mut data = vec![rank as i64; 6];
        hvdc.allreduce_in_place(&mut data, ReduceOp::Sum, &Options::new().process_set(&set))
            .unwrap();
        check.equal(
            "allreduce over the set",
            data,
            vec![sorted.iter().map(|&r| r as i64).sum(); 6],
        );
        let got = hvdc
            .allgather(
                &[rank as u8],
                &Options::new().process_set(&set).name("set.gather"),
            )
            .unwrap();
        check.equal(
            "allgather over the set",
            got,
            sorted.iter().map(|&r| r as u8).collect(),
        );
    } else {
        let err = hvdc.barrier(&Options::new().process_set(&set)).unwrap_err();
        check.equal("a non-member's op", err.kind(), ErrorKind::InvalidArgument);
    }
    set.destroy().unwrap();
    check.equal(
        "ids after destroy",
        hvdc.process_set_ids().unwrap(),
        vec![0],
    );
}

/// Ranks submit the same name with different lengths: every rank gets Mismatch, and the next
/// op works.
fn mismatch(hvdc: &Hvdc, check: &mut Checker) {
    let (rank, size) = (hvdc.rank(), hvdc.size());
    if size < 2 {
        return;
    }
    let mut data = vec![1.0f32; 4 + rank as usize];
    let err = hvdc.allreduce_in_place(&mut data, ReduceOp::Sum, &Options::new().name("mismatched"));
    let kind = err.as_ref().err().map(|e| e.kind());
    check.equal("mismatch kind", kind, Some(ErrorKind::Mismatch));
    if let Err(e) = err {
        check.expect(e.message().contains("mismatched"), || {
            format!("message names the tensor: {}", e)
        });
    }
    // The same inside a scope with the handle leaked: the scope reports it.
    let mut leaked = vec![1u8; 2 + rank as usize];
    let scoped = hvdc.scope(|s| {
        let opts = Options::new().name("mismatched.leaked");
        s.allreduce_in_place(&mut leaked, ReduceOp::Max, &opts)
            .map(std::mem::forget)
    });
    let kind = match scoped {
        Ok(submitted) => submitted.map(|_| ()).map_err(|e| e.kind()),
        Err(e) => Err(e.kind()),
    };
    check.equal(
        "mismatch of a leaked handle, from its scope",
        kind,
        Err(ErrorKind::Mismatch),
    );
    let mut after = vec![1i32; 3];
    hvdc.allreduce_in_place(&mut after, ReduceOp::Sum, &Options::new().name("after"))
        .unwrap();
    check.equal("op after a mismatch", after, vec![size; 3]);
}

fn main() {
    let hvdc = Hvdc::init().expect("hvdc init");
    let mut check = Checker::new(hvdc.rank());
    scoped_ops(&hvdc, &mut check);
    forgotten_handle_waits_for_a_late_peer(&hvdc, &mut check);
    owned(&hvdc, &mut check);
    join(&hvdc, &mut check);
    process_sets(&hvdc, &mut check);
    mismatch(&hvdc, &mut check);
    hvdc.barrier(&Options::new().name("end")).unwrap();
    let size = hvdc.size();
    drop(hvdc);
    check.finish("async_ops", size);
}
