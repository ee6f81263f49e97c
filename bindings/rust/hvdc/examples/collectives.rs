//! Every blocking collective at any number of ranks, each result checked against a reference
//! computed here from every rank's deterministic input. Run with `hvdcrun -np 2` or
//! `mpirun -np 3`; prints one line per rank and exits 1 if any check failed.
#[path = "common/check.rs"]
mod check;

use check::{close, value, Checker, Sample};
use hvdc::{Bool, Hvdc, Options, ReduceOp, BF16, F16};

const LEN: usize = 13;

/// The float64 reference of reducing value(r, i) (or the product inputs) over `size` ranks.
fn reference(op: ReduceOp, size: i32, i: usize, integer: bool) -> f64 {
    let inputs: Vec<f64> = (0..size).map(|r| input(op, r, i) as f64).collect();
    match op {
        ReduceOp::Sum => inputs.iter().sum(),
        ReduceOp::Min => inputs.iter().cloned().fold(f64::INFINITY, f64::min),
        ReduceOp::Max => inputs.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
        ReduceOp::Product => inputs.iter().product(),
        ReduceOp::Average if integer => (inputs.iter().sum::<f64>() / size as f64).trunc(),
        ReduceOp::Average => inputs.iter().sum::<f64>() / size as f64,
    }
}

// Products use 1..=3 so that they stay exact in every type at np <= 4.
fn input(op: ReduceOp, rank: i32, i: usize) -> i64 {
    match op {
        ReduceOp::Product => (rank as i64 + i as i64) % 3 + 1,
        _ => value(rank, i),
    }
}

fn allreduce_type<T: Sample>(hvdc: &Hvdc, check: &mut Checker, type_name: &str) {
    let (rank, size) = (hvdc.rank(), hvdc.size());
    for op in [
        ReduceOp::Sum,
        ReduceOp::Average,
        ReduceOp::Min,
        ReduceOp::Max,
        ReduceOp::Product,
    ] {
        let data: Vec<T> = (0..LEN).map(|i| T::from_i64(input(op, rank, i))).collect();
        let mut out = vec![T::from_i64(0); LEN];
        let name = format!("allreduce.{}.{:?}", type_name, op);
        if let Err(e) = hvdc.allreduce(&data, &mut out, op, &Options::new().name(&name)) {
            check.expect(false, || format!("{}: {}", name, e));
            continue;
        }
        let wrong: Vec<usize> = (0..LEN)
            .filter(|&i| !close(out[i], reference(op, size, i, T::INTEGER)))
            .collect();
        check.expect(wrong.is_empty(), || {
            format!(
                "{} at {:?}: got {:?}, want {}",
                name,
                wrong,
                out[wrong[0]],
                reference(op, size, wrong[0], T::INTEGER)
            )
        });
    }
}

fn allreduce_bool(hvdc: &Hvdc, check: &mut Checker) {
    let (rank, size) = (hvdc.rank(), hvdc.size());
    // Element i is true on rank r when bit r of i is set: OR is "i has any of the low bits".
    let data: Vec<Bool> = (0..16).map(|i| Bool::from(i >> rank & 1 == 1)).collect();
    let low = (1 << size) - 1;
    for (op, want) in [
        (
            ReduceOp::Sum,
            (0..16).map(|i| i & low != 0).collect::<Vec<_>>(),
        ),
        (ReduceOp::Max, (0..16).map(|i| i & low != 0).collect()),
        (ReduceOp::Product, (0..16).map(|i| i & low == low).collect()),
        (ReduceOp::Min, (0..16).map(|i| i & low == low).collect()),
    ] {
        let mut out = data.clone();
        let result = hvdc.allreduce_in_place(&mut out, op, &Options::new());
        check.equal(
            &format!("bool allreduce {:?} status", op),
            result.map_err(|e| e.to_string()),
            Ok(()),
        );
        let got: Vec<bool> = out.iter().map(|b| b.get()).collect();
        check.equal(&format!("bool allreduce {:?}", op), got, want);
    }
}

fn scaled_allreduce(hvdc: &Hvdc, check: &mut Checker) {
    let size = hvdc.size() as f64;
    let mut data = vec![hvdc.rank() as f64 + 1.0; 5];
    let opts = Options::new().name("scaled").prescale(0.5).postscale(4.0);
    hvdc.allreduce_in_place(&mut data, ReduceOp::Sum, &opts)
        .unwrap();
    let want = 0.5 * 4.0 * size * (size + 1.0) / 2.0;
    check.equal("prescale 0.5 postscale 4 sum", data, vec![want; 5]);
}

// CPU tensors ignore the device options (the C layer applies them to CUDA tensors only): the
// result is the plain sum, and the op still matches across ranks.
fn host_path_allreduce(hvdc: &Hvdc, check: &mut Checker) {
    let size = hvdc.size() as f32;
    let mut data = vec![hvdc.rank() as f32 + 1.0; 5];
    let opts = Options::new()
        .name("host_path")
        .host_path(true)
        .stream_ordered(true)
        .cuda_stream(std::ptr::null_mut());
    hvdc.allreduce_in_place(&mut data, ReduceOp::Sum, &opts).unwrap();
    check.equal("host_path sum", data, vec![size * (size + 1.0) / 2.0; 5]);
}

fn grouped(hvdc: &Hvdc, check: &mut Checker) {
    let (rank, size) = (hvdc.rank(), hvdc.size());
    let lens = [1usize, 7, 300];
    let mut members: Vec<Vec<i32>> = lens
        .iter()
        .map(|&n| (0..n).map(|i| value(rank, i) as i32).collect())
        .collect();
    let mut views: Vec<&mut [i32]> = members.iter_mut().map(|m| &mut m[..]).collect();
    hvdc.grouped_allreduce(&mut views, ReduceOp::Sum, &Options::new().name("grouped"))
        .unwrap();
    for (m, &n) in members.iter().zip(&lens) {
        let want: Vec<i32> = (0..n)
            .map(|i| (0..size).map(|r| value(r, i) as i32).sum())
            .collect();
        check.equal(&format!("grouped member of {}", n), m.clone(), want);
    }
}

fn allgather(hvdc: &Hvdc, check: &mut Checker) {
    let (rank, size) = (hvdc.rank(), hvdc.size());
    // Rank r sends r + 1 values r * 100 + j: the first dimension differs per rank.
    let mine: Vec<i16> = (0..=rank).map(|j| (rank * 100 + j) as i16).collect();
    let got = hvdc
        .allgather(&mine, &Options::new().name("allgather"))
        .unwrap();
    let want: Vec<i16> = (0..size)
        .flat_map(|r| (0..=r).map(move |j| (r * 100 + j) as i16))
        .collect();
    check.equal("allgather of uneven parts", got, want);
    let halves: Vec<BF16> = vec![BF16::from_f32(rank as f32 + 0.5); 3];
    let got = hvdc.allgather(&halves, &Options::new()).unwrap();
    let want: Vec<f32> = (0..size).flat_map(|r| vec![r as f32 + 0.5; 3]).collect();
    check.equal(
        "allgather bf16",
        got.iter().map(|x| x.to_f32()).collect::<Vec<_>>(),
        want,
    );
}

fn broadcast(hvdc: &Hvdc, check: &mut Checker) {
    let (rank, size) = (hvdc.rank(), hvdc.size());
    for root in 0..size {
        let mut data: Vec<f64> = (0..9).map(|i| (rank * 10 + i) as f64).collect();
        hvdc.broadcast(
            &mut data,
            root,
            &Options::new().name(&format!("broadcast.{}", root)),
        )
        .unwrap();
        let want: Vec<f64> = (0..9).map(|i| (root * 10 + i) as f64).collect();
        check.equal(&format!("broadcast from {}", root), data, want);
    }
    let mut halves = vec![F16::from_f32(rank as f32); 4];
    hvdc.broadcast(&mut halves, size - 1, &Options::new())
        .unwrap();
    check.equal(
        "broadcast f16",
        halves,
        vec![F16::from_f32((size - 1) as f32); 4],
    );
}

// Rank s sends splits(s)[d] values s * 1000 + d * 100 + k to rank d.
fn splits_of(source: i32, size: i32) -> Vec<i32> {
    (0..size).map(|d| (source + d) % 3 + 1).collect()
}

fn alltoall(hvdc: &Hvdc, check: &mut Checker) {
    let (rank, size) = (hvdc.rank(), hvdc.size());
    let splits = splits_of(rank, size);
    let input: Vec<i64> = (0..size)
        .flat_map(|d| (0..splits[d as usize]).map(move |k| (rank * 1000 + d * 100 + k) as i64))
        .collect();
    let got = hvdc
        .alltoall(&input, Some(&splits), &Options::new().name("alltoall"))
        .unwrap();
    let want_splits: Vec<i32> = (0..size)
        .map(|s| splits_of(s, size)[rank as usize])
        .collect();
    let want: Vec<i64> = (0..size)
        .flat_map(|s| (0..want_splits[s as usize]).map(move |k| (s * 1000 + rank * 100 + k) as i64))
        .collect();
    check.equal("alltoall received splits", got.received_splits, want_splits);
    check.equal("alltoall data", got.data, want);
    let even: Vec<u8> = (0..size * 2).map(|i| (rank * 10 + i) as u8).collect();
    let got = hvdc.alltoall(&even, None, &Options::new()).unwrap();
    let want: Vec<u8> = (0..size)
        .flat_map(|s| (0..2).map(move |k| (s * 10 + rank * 2 + k) as u8))
        .collect();
    check.equal("alltoall even split", got.data, want);
}

fn reducescatter(hvdc: &Hvdc, check: &mut Checker) {
    let (rank, size) = (hvdc.rank(), hvdc.size());
    let total = 2 * size as usize + 1; // uneven: the first rank gets one row more
    let input: Vec<f32> = (0..total).map(|i| value(rank, i) as f32).collect();
    let rows = hvdc::reducescatter_rows(total, rank, size);
    let first: usize = (0..rank)
        .map(|r| hvdc::reducescatter_rows(total, r, size))
        .sum();
    for op in [ReduceOp::Sum, ReduceOp::Average] {
        let mut out = vec![0.0f32; rows];
        hvdc.reducescatter(&input, &mut out, op, &Options::new())
            .unwrap();
        let want: Vec<f64> = (first..first + rows)
            .map(|i| reference(op, size, i, false))
            .collect();
        let ok = out.iter().zip(&want).all(|(&g, &w)| close(g, w));
        check.expect(ok, || {
            format!("reducescatter {:?}: got {:?}, want {:?}", op, out, want)
        });
    }
}

/// Rows of 3 elements: splits, allgather parts and reducescatter shares count rows.
fn row_matrices(hvdc: &Hvdc, check: &mut Checker) {
    let (rank, size) = (hvdc.rank(), hvdc.size());
    let rows = Options::new().row_len(3);
    // Reducescatter of 2 * size + 1 rows: rank 0 gets 3 rows, the others 2.
    let total = 2 * size as usize + 1;
    let input: Vec<i32> = (0..total * 3).map(|i| value(rank, i) as i32).collect();
    let share = hvdc::reducescatter_rows(total, rank, size);
    let first: usize = (0..rank)
        .map(|r| hvdc::reducescatter_rows(total, r, size))
        .sum();
    let mut out = vec![0i32; share * 3];
    hvdc.reducescatter(&input, &mut out, ReduceOp::Sum, &rows.name("rows.scatter"))
        .unwrap();
    let want: Vec<i32> = (first * 3..(first + share) * 3)
        .map(|i| (0..size).map(|r| value(r, i) as i32).sum())
        .collect();
    check.equal("reducescatter of rows", out, want);
    // Alltoall: one row to every rank, rows received counted per source.
    let mine: Vec<i16> = (0..size * 3).map(|i| (rank * 100 + i) as i16).collect();
    let got = hvdc
        .alltoall(&mine, Some(&vec![1; size as usize]), &rows)
        .unwrap();
    let want: Vec<i16> = (0..size)
        .flat_map(|s| (0..3).map(move |k| (s * 100 + rank * 3 + k) as i16))
        .collect();
    check.equal(
        "alltoall of rows: splits",
        got.received_splits,
        vec![1; size as usize],
    );
    check.equal("alltoall of rows: data", got.data, want);
    let err = hvdc.allgather(&[1u8; 4], &rows).unwrap_err();
    check.equal(
        "4 elements in rows of 3",
        err.kind(),
        hvdc::ErrorKind::InvalidArgument,
    );
}

fn main() {
    let hvdc = Hvdc::init().expect("hvdc init");
    let mut check = Checker::new(hvdc.rank());
    allreduce_type::<u8>(&hvdc, &mut check, "u8");
    allreduce_type::<i8>(&hvdc, &mut check, "i8");
    allreduce_type::<u16>(&hvdc, &mut check, "u16");
    allreduce_type::<i16>(&hvdc, &mut check, "i16");
    allreduce_type::<i32>(&hvdc, &mut check, "i32");
    allreduce_type::<i64>(&hvdc, &mut check, "i64");
    allreduce_type::<f32>(&hvdc, &mut check, "f32");
    allreduce_type::<f64>(&hvdc, &mut check, "f64");
    allreduce_type::<F16>(&hvdc, &mut check, "f16");
    allreduce_type::<BF16>(&hvdc, &mut check, "bf16");
    allreduce_bool(&hvdc, &mut check);
    scaled_allreduce(&hvdc, &mut check);
    host_path_allreduce(&hvdc, &mut check);
    grouped(&hvdc, &mut check);
    allgather(&hvdc, &mut check);
    broadcast(&hvdc, &mut check);
    alltoall(&hvdc, &mut check);
    reducescatter(&hvdc, &mut check);
    row_matrices(&hvdc, &mut check);
    hvdc.barrier(&Options::new().name("end")).unwrap();
    let size = hvdc.size();
    drop(hvdc);
    check.finish("collectives", size);
}
