//! Shared by the multi-rank examples: deterministic per-rank data, and a checker that counts
//! results, reports every wrong one with its rank, and sets the exit status.
#![allow(dead_code)] // each example uses part of it
use hvdc::{Element, BF16, F16};
use std::fmt::Debug;

pub struct Checker {
    pub rank: i32,
    pub passed: usize,
    pub failed: usize,
}

impl Checker {
    pub fn new(rank: i32) -> Checker {
        Checker {
            rank,
            passed: 0,
            failed: 0,
        }
    }

    pub fn expect(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if ok {
            self.passed += 1;
        } else {
            self.failed += 1;
            eprintln!("rank {}: FAILED {}", self.rank, what());
        }
    }

    pub fn equal<T: PartialEq + Debug>(&mut self, what: &str, got: T, want: T) {
        let ok = got == want;
        self.expect(ok, || format!("{}: got {:?}, want {:?}", what, got, want));
    }

    /// Ends the program: exit status 1 if any check failed.
    pub fn finish(self, program: &str, size: i32) -> ! {
        if self.failed > 0 {
            eprintln!(
                "rank {}: {} {} of {} checks failed at np {}",
                self.rank,
                program,
                self.failed,
                self.failed + self.passed,
                size
            );
            std::process::exit(1);
        }
        println!(
            "rank {}: {} {} checks passed at np {}",
            self.rank, program, self.passed, size
        );
        std::process::exit(0);
    }
}

/// The element types the examples reduce: built from small integers, read back as f64.
pub trait Sample: Element + Debug + PartialEq {
    /// Relative tolerance of a computed result (0 = exact).
    const TOLERANCE: f64;
    const INTEGER: bool;
    fn from_i64(v: i64) -> Self;
    fn to_f64(self) -> f64;
}

macro_rules! integer_sample {
    ($($t:ty),*) => {$(
        impl Sample for $t {
            const TOLERANCE: f64 = 0.0;
            const INTEGER: bool = true;
            fn from_i64(v: i64) -> Self { v as $t }
            fn to_f64(self) -> f64 { self as f64 }
        }
    )*};
}
integer_sample!(u8, i8, u16, i16, i32, i64);

impl Sample for f32 {
    const TOLERANCE: f64 = 1e-6;
    const INTEGER: bool = false;
    fn from_i64(v: i64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}

impl Sample for f64 {
    const TOLERANCE: f64 = 1e-12;
    const INTEGER: bool = false;
    fn from_i64(v: i64) -> Self {
        v as f64
    }
    fn to_f64(self) -> f64 {
        self
    }
}

// The 16-bit floats, through their f32 conversions.
macro_rules! half_sample {
    ($($t:ident: $tolerance:expr),*) => {$(
        impl Sample for $t {
            const TOLERANCE: f64 = $tolerance;
            const INTEGER: bool = false;
            fn from_i64(v: i64) -> Self { $t::from_f32(v as f32) }
            fn to_f64(self) -> f64 { self.to_f32() as f64 }
        }
    )*};
}
half_sample!(F16: 1e-3, BF16: 8e-3);

/// Rank r's i-th value: a small positive integer (1..=11), exact in every element type.
pub fn value(rank: i32, i: usize) -> i64 {
    ((rank as i64) * 7 + (i as i64) * 3) % 11 + 1
}

/// Whether `got` matches the float64 reference `want` within the type's tolerance.
pub fn close<T: Sample>(got: T, want: f64) -> bool {
    let got = got.to_f64();
    if T::INTEGER {
        return got == want;
    }
    (got - want).abs() <= T::TOLERANCE * want.abs().max(1.0)
}
