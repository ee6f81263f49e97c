//! Collectives whose buffers are SharedVecs (shared host memory), checked at any number of
//! ranks (`hvdcrun -np 2`, `mpirun -np 3`): allreduce sum and average, in place and out of
//! place, broadcast, allgather, and a buffer made before init that is still readable and
//! writable after shutdown, then freed.
#[path = "common/check.rs"]
mod check;

use check::{value, Checker};
use hvdc::{mem_region, Hvdc, Options, ReduceOp, SharedVec};

const LEN: usize = 4099; // not a multiple of a page or of a vector width

fn sum_of(size: i32, i: usize) -> i64 {
    (0..size).map(|r| value(r, i)).sum()
}

fn allreduces(hvdc: &Hvdc, check: &mut Checker) {
    let (rank, size) = (hvdc.rank(), hvdc.size());
    let mut grad = SharedVec::<i64>::zeroed(LEN).unwrap();
    for (i, x) in grad.iter_mut().enumerate() {
        *x = value(rank, i);
    }
    hvdc.allreduce_in_place(&mut grad, ReduceOp::Sum, &Options::new().name("shm.sum"))
        .unwrap();
    let want: Vec<i64> = (0..LEN).map(|i| sum_of(size, i)).collect();
    check.equal("in-place sum", &grad[..], &want[..]);

    let input = SharedVec::from_slice(&vec![rank as f64; LEN]).unwrap();
    let mut output = SharedVec::<f64>::zeroed(LEN).unwrap();
    let opts = Options::new().name("shm.avg");
    hvdc.allreduce(&input, &mut output, ReduceOp::Average, &opts)
        .unwrap();
    let mean = (size - 1) as f64 / 2.0;
    check.expect(output.iter().all(|&x| x == mean), || {
        format!("average: got {:?}.., want {}", &output[..4], mean)
    });
    check.expect(input.iter().all(|&x| x == rank as f64), || {
        "the average changed its input".to_string()
    });
}

fn broadcast_and_allgather(hvdc: &Hvdc, check: &mut Checker) {
    let (rank, size) = (hvdc.rank(), hvdc.size());
    let mut data = SharedVec::from_slice(&[rank * 10, rank * 10 + 1, rank * 10 + 2]).unwrap();
    hvdc.broadcast(&mut data, 1, &Options::new().name("shm.bcast"))
        .unwrap();
    check.equal("broadcast from rank 1", &data[..], &[10, 11, 12][..]);

    let mine = SharedVec::from_slice(&vec![rank as u16; rank as usize + 1]).unwrap();
    let gathered = hvdc
        .allgather(&mine, &Options::new().name("shm.gather"))
        .unwrap();
    let want: Vec<u16> = (0..size)
        .flat_map(|r| vec![r as u16; r as usize + 1])
        .collect();
    check.equal("allgather", gathered, want);
}

fn main() {
    let mut survivor = SharedVec::<i32>::zeroed(16).unwrap(); // no engine needed
    let hvdc = Hvdc::init().expect("hvdc init");
    let (rank, size) = (hvdc.rank(), hvdc.size());
    let mut check = Checker::new(rank);
    allreduces(&hvdc, &mut check);
    broadcast_and_allgather(&hvdc, &mut check);
    for (i, x) in survivor.iter_mut().enumerate() {
        *x = rank + i as i32;
    }
    let opts = Options::new().name("shm.survivor");
    hvdc.allreduce_in_place(&mut survivor, ReduceOp::Sum, &opts)
        .unwrap();
    hvdc.shutdown().expect("hvdc shutdown");

    let want: Vec<i32> = (0..16).map(|i| size * i + size * (size - 1) / 2).collect();
    check.equal("after shutdown", &survivor[..], &want[..]);
    survivor[15] = -5;
    check.equal("written after shutdown", survivor[15], -5);
    let start = survivor.as_ptr();
    check.equal(
        "region after shutdown",
        mem_region(&survivor[15]).map(|m| m.bytes),
        Ok(64),
    );
    check.equal("free after shutdown", survivor.free(), Ok(()));
    check.expect(mem_region(start).is_err(), || {
        "freed, yet still found".to_string()
    });
    check.finish("shared_memory", size);
}
