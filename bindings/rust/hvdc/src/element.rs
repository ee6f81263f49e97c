//! The element types a collective accepts, each tied to its hvdc dtype code.
use crate::half;
use hvdc_sys as sys;

mod sealed {
    pub trait Sealed {}
}

/// A plain value type hvdc can reduce and move: every bit pattern a peer can send is a valid
/// value of the type (which is why booleans travel as [`Bool`], never as `bool`).
pub trait Element: Copy + Send + Sync + 'static + sealed::Sealed {
    /// The `HVD_*` dtype code.
    const DTYPE: i32;
}

macro_rules! element {
    ($t:ty, $code:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: i32 = $code;
        }
    };
}

element!(u8, sys::HVD_UINT8);
element!(i8, sys::HVD_INT8);
element!(u16, sys::HVD_UINT16);
element!(i16, sys::HVD_INT16);
element!(i32, sys::HVD_INT32);
element!(i64, sys::HVD_INT64);
element!(f32, sys::HVD_FLOAT32);
element!(f64, sys::HVD_FLOAT64);
element!(F16, sys::HVD_FLOAT16);
element!(BF16, sys::HVD_BFLOAT16);
element!(Bool, sys::HVD_BOOL);

/// IEEE 754 binary16, stored as its bits.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct F16(pub u16);

/// bfloat16 (the upper half of a binary32), stored as its bits.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BF16(pub u16);

/// One byte on the wire. hvdc writes 0 or 1, but a peer could send any byte, so the value is a
/// `u8` and reads as true when it is not 0.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Bool(pub u8);

impl F16 {
    /// Rounds to nearest, ties to even.
    pub fn from_f32(value: f32) -> F16 {
        F16(half::f32_to_f16_bits(value))
    }

    pub fn to_f32(self) -> f32 {
        half::f16_bits_to_f32(self.0)
    }
}

impl BF16 {
    /// Rounds to nearest, ties to even.
    pub fn from_f32(value: f32) -> BF16 {
        BF16(half::f32_to_bf16_bits(value))
    }

    pub fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }
}

impl Bool {
    pub const FALSE: Bool = Bool(0);
    pub const TRUE: Bool = Bool(1);

    pub fn get(self) -> bool {
        self.0 != 0
    }
}

impl From<bool> for Bool {
    fn from(value: bool) -> Bool {
        Bool(value as u8)
    }
}

impl From<Bool> for bool {
    fn from(value: Bool) -> bool {
        value.get()
    }
}
