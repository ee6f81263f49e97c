//! binary32 <-> binary16 / bfloat16 conversions (round to nearest, ties to even), so that users
//! and tests can build and read 16-bit float data without an outside crate.

pub(crate) fn f32_to_bf16_bits(value: f32) -> u16 {
    let bits = value.to_bits();
    if value.is_nan() {
        // Keep it a NaN (quiet) whatever the dropped payload bits were.
        return ((bits >> 16) as u16) | 0x0040;
    }
    let round = 0x7fff + ((bits >> 16) & 1);
    (bits.wrapping_add(round) >> 16) as u16
}

pub(crate) fn f32_to_f16_bits(value: f32) -> u16 {
    let bits = value.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exponent = ((bits >> 23) & 0xff) as i32;
    let mantissa = bits & 0x007f_ffff;
    if exponent == 0xff {
        let nan = if mantissa != 0 { 0x0200 } else { 0 };
        return sign | 0x7c00 | nan;
    }
    let unbiased = exponent - 127;
    if unbiased > 15 {
        return sign | 0x7c00; // overflow to infinity
    }
    if unbiased >= -14 {
        // Normal: 10 mantissa bits kept, 13 dropped; a carry may bump the exponent (even to inf).
        let half_bits = (((unbiased + 15) as u32) << 10) | (mantissa >> 13);
        return sign | round_shifted(half_bits, mantissa & 0x1fff, 13) as u16;
    }
    if unbiased < -25 {
        return sign; // below half the smallest subnormal: zero
    }
    // Subnormal: the implicit 1 joins the mantissa, shifted right past the exponent floor.
    let full = mantissa | 0x0080_0000;
    let shift = (-14 - unbiased + 13) as u32;
    let kept = full >> shift;
    let dropped = full & ((1u32 << shift) - 1);
    sign | round_shifted(kept, dropped, shift) as u16
}

// Rounds `kept` by the `shift` dropped bits, to nearest with ties to even.
fn round_shifted(kept: u32, dropped: u32, shift: u32) -> u32 {
    let halfway = 1u32 << (shift - 1);
    if dropped > halfway || (dropped == halfway && kept & 1 == 1) {
        kept + 1
    } else {
        kept
    }
}

pub(crate) fn f16_bits_to_f32(bits: u16) -> f32 {
    let sign = ((bits & 0x8000) as u32) << 16;
    let exponent = ((bits >> 10) & 0x1f) as u32;
    let mantissa = (bits & 0x03ff) as u32;
    let out = match (exponent, mantissa) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: value = m * 2^-24, exact in binary32.
            let magnitude = m as f32 * f32::from_bits(0x3380_0000);
            return if sign != 0 { -magnitude } else { magnitude };
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, m) => sign | 0x7fc0_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_known_values() {
        assert_eq!(f32_to_f16_bits(1.0), 0x3c00);
        assert_eq!(f32_to_f16_bits(-2.0), 0xc000);
        assert_eq!(f32_to_f16_bits(65504.0), 0x7bff);
        assert_eq!(f32_to_f16_bits(65520.0), 0x7c00); // rounds up to infinity
        assert_eq!(f32_to_f16_bits(5.960_464_5e-8), 0x0001); // smallest subnormal
        assert_eq!(f32_to_f16_bits(2.980_232_2e-8), 0x0000); // tie to even: zero
        assert_eq!(f32_to_f16_bits(1.0 + 1.0 / 2048.0), 0x3c00); // tie to even: down
        assert_eq!(f32_to_f16_bits(1.0 + 3.0 / 2048.0), 0x3c02); // tie to even: up
        assert_eq!(f32_to_f16_bits(f32::INFINITY), 0x7c00);
        assert!(f16_bits_to_f32(f32_to_f16_bits(f32::NAN)).is_nan());
    }

    #[test]
    fn f16_round_trips_every_finite_value() {
        for bits in 0u16..=0xffff {
            if (bits & 0x7c00) == 0x7c00 {
                continue; // inf and NaN: checked above
            }
            assert_eq!(
                f32_to_f16_bits(f16_bits_to_f32(bits)),
                bits,
                "bits {:#06x}",
                bits
            );
        }
        assert_eq!(f16_bits_to_f32(0x0001), 5.960_464_5e-8);
        assert_eq!(f16_bits_to_f32(0x3555), 0.333_251_95);
    }

    #[test]
    fn bf16_rounds_to_nearest_even() {
        assert_eq!(f32_to_bf16_bits(1.0), 0x3f80);
        assert_eq!(f32_to_bf16_bits(f32::from_bits(0x3f80_8000)), 0x3f80); // tie, even stays
        assert_eq!(f32_to_bf16_bits(f32::from_bits(0x3f81_8000)), 0x3f82); // tie, odd rounds up
        assert_eq!(f32_to_bf16_bits(f32::from_bits(0x3f80_8001)), 0x3f81);
        assert!(f32::from_bits((f32_to_bf16_bits(f32::NAN) as u32) << 16).is_nan());
    }
}
