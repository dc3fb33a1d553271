//! Element types of kernel arguments: numpy names (the test format), C types (the kernel signature) and the
//! checks that a scalar value fits the parameter it is passed to.

use serde::{Deserialize, Serialize};

use crate::error::RecordError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    Float16,
    /// bfloat16 (`__nv_bfloat16`): numpy has no such type, so .npy files carry its bits as `<u2`.
    Bfloat16,
    Float32,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
}

impl DType {
    pub fn size(self) -> usize {
        match self {
            DType::Int8 | DType::Uint8 => 1,
            DType::Float16 | DType::Bfloat16 | DType::Int16 | DType::Uint16 => 2,
            DType::Float32 | DType::Int32 | DType::Uint32 => 4,
            DType::Float64 | DType::Int64 | DType::Uint64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            DType::Float16 | DType::Bfloat16 | DType::Float32 | DType::Float64
        )
    }

    /// The value of one element given its little-endian bits (the low `size()` bytes of `bits`).
    pub fn bits_to_f64(self, bits: u64) -> f64 {
        match self {
            DType::Float16 => half_to_f64(bits as u16),
            DType::Bfloat16 => f32::from_bits((bits as u32 & 0xffff) << 16) as f64,
            DType::Float32 => f32::from_bits(bits as u32) as f64,
            DType::Float64 => f64::from_bits(bits),
            DType::Int8 => bits as u8 as i8 as f64,
            DType::Int16 => bits as u16 as i16 as f64,
            DType::Int32 => bits as u32 as i32 as f64,
            DType::Int64 => bits as i64 as f64,
            DType::Uint8 | DType::Uint16 | DType::Uint32 | DType::Uint64 => bits as f64,
        }
    }

    pub fn numpy_name(self) -> &'static str {
        match self {
            DType::Float16 => "float16",
            DType::Bfloat16 => "bfloat16",
            DType::Float32 => "float32",
            DType::Float64 => "float64",
            DType::Int8 => "int8",
            DType::Int16 => "int16",
            DType::Int32 => "int32",
            DType::Int64 => "int64",
            DType::Uint8 => "uint8",
            DType::Uint16 => "uint16",
            DType::Uint32 => "uint32",
            DType::Uint64 => "uint64",
        }
    }

    /// A numpy name, optionally with a struct lane suffix (`float32x3` is a float3). Returns (dtype, lanes).
    pub fn parse_numpy(name: &str) -> Result<(DType, u32), RecordError> {
        let (base, lanes) = match name.rsplit_once('x') {
            Some((b, l)) if !l.is_empty() && l.chars().all(|c| c.is_ascii_digit()) => {
                (b, l.parse::<u32>().unwrap_or(1))
            }
            _ => (name, 1),
        };
        let d = match base {
            "float16" | "half" => DType::Float16,
            "bfloat16" | "bf16" => DType::Bfloat16,
            "float32" | "float" => DType::Float32,
            "float64" | "double" => DType::Float64,
            "int8" => DType::Int8,
            "int16" => DType::Int16,
            "int32" => DType::Int32,
            "int64" => DType::Int64,
            "uint8" | "bool" => DType::Uint8,
            "uint16" => DType::Uint16,
            "uint32" => DType::Uint32,
            "uint64" => DType::Uint64,
            _ => {
                return Err(RecordError::Dtype(format!(
                    "unknown dtype `{name}` (use numpy names such as float32, int32, uint8, or float32x3 for a float3)"
                )));
            }
        };
        Ok((d, lanes.max(1)))
    }

    /// The little-endian .npy `descr` of this dtype (`<f4`); single bytes have no byte order (`|i1`).
    pub fn npy_descr(self) -> &'static str {
        match self {
            DType::Float16 => "<f2",
            // numpy has no bfloat16: its bits are stored as uint16
            DType::Bfloat16 => "<u2",
            DType::Float32 => "<f4",
            DType::Float64 => "<f8",
            DType::Int8 => "|i1",
            DType::Int16 => "<i2",
            DType::Int32 => "<i4",
            DType::Int64 => "<i8",
            DType::Uint8 => "|u1",
            DType::Uint16 => "<u2",
            DType::Uint32 => "<u4",
            DType::Uint64 => "<u8",
        }
    }

    /// The dtype a .npy file holding this dtype's elements declares (bfloat16's bits are uint16).
    pub fn storage(self) -> DType {
        match self {
            DType::Bfloat16 => DType::Uint16,
            d => d,
        }
    }

    /// The dtype of a .npy `descr` such as `<f4`.
    pub fn from_npy_descr(descr: &str) -> Option<DType> {
        let (endian, rest) = descr.split_at(1.min(descr.len()));
        if endian == ">" {
            return None;
        }
        Some(match rest {
            "f2" => DType::Float16,
            "f4" => DType::Float32,
            "f8" => DType::Float64,
            "i1" => DType::Int8,
            "i2" => DType::Int16,
            "i4" => DType::Int32,
            "i8" => DType::Int64,
            "u1" | "b1" => DType::Uint8,
            "u2" => DType::Uint16,
            "u4" => DType::Uint32,
            "u8" => DType::Uint64,
            _ => return None,
        })
    }

    /// The dtype of a C scalar type as written in a kernel signature, and the lanes of CUDA vector types.
    pub fn from_c_type(base_type: &str) -> Option<(DType, u32)> {
        let t: Vec<&str> = base_type
            .split_whitespace()
            .filter(|w| !matches!(*w, "const" | "volatile" | "__restrict__" | "restrict"))
            .collect();
        let t = t.join(" ");
        let vector = |prefix: &str, d: DType| -> Option<(DType, u32)> {
            let lanes: u32 = t.strip_prefix(prefix)?.parse().ok()?;
            Some((d, lanes))
        };
        Some(match t.as_str() {
            "float" => (DType::Float32, 1),
            "double" => (DType::Float64, 1),
            "half" | "__half" => (DType::Float16, 1),
            "half2" | "__half2" => (DType::Float16, 2),
            "__nv_bfloat16" | "nv_bfloat16" => (DType::Bfloat16, 1),
            "__nv_bfloat162" | "nv_bfloat162" => (DType::Bfloat16, 2),
            "int" | "signed" | "signed int" | "int32_t" => (DType::Int32, 1),
            "unsigned" | "unsigned int" | "uint32_t" | "uint" => (DType::Uint32, 1),
            "long" | "long int" | "long long" | "long long int" | "signed long" | "int64_t"
            | "ssize_t" | "ptrdiff_t" => (DType::Int64, 1),
            "unsigned long"
            | "unsigned long int"
            | "unsigned long long"
            | "unsigned long long int"
            | "size_t"
            | "uint64_t" => (DType::Uint64, 1),
            "short" | "short int" | "int16_t" => (DType::Int16, 1),
            "unsigned short" | "unsigned short int" | "uint16_t" => (DType::Uint16, 1),
            "char" | "signed char" | "int8_t" => (DType::Int8, 1),
            "unsigned char" | "uint8_t" | "bool" => (DType::Uint8, 1),
            _ => {
                return vector("float", DType::Float32)
                    .or_else(|| vector("double", DType::Float64))
                    .or_else(|| vector("int", DType::Int32))
                    .or_else(|| vector("uint", DType::Uint32))
                    .or_else(|| vector("longlong", DType::Int64))
                    .or_else(|| vector("ulonglong", DType::Uint64))
                    .or_else(|| vector("char", DType::Int8))
                    .or_else(|| vector("uchar", DType::Uint8));
            }
        })
    }

    /// Encodes a scalar value as the little-endian bytes the kernel parameter expects; a value that does not
    /// fit the type (3.5 for an int, 300 for a uint8, -1 for a size_t) is an error, never silently wrapped.
    pub fn encode_scalar(self, name: &str, value: f64) -> Result<Vec<u8>, RecordError> {
        let bad = || {
            RecordError::Dtype(format!(
                "scalar `{name}` = {value} does not fit its type {}",
                self.numpy_name()
            ))
        };
        if !self.is_float() {
            if value.fract() != 0.0 || !value.is_finite() {
                return Err(bad());
            }
            let (lo, hi): (f64, f64) = match self {
                DType::Int8 => (i8::MIN as f64, i8::MAX as f64),
                DType::Int16 => (i16::MIN as f64, i16::MAX as f64),
                DType::Int32 => (i32::MIN as f64, i32::MAX as f64),
                DType::Int64 => (i64::MIN as f64, i64::MAX as f64),
                DType::Uint8 => (0.0, u8::MAX as f64),
                DType::Uint16 => (0.0, u16::MAX as f64),
                DType::Uint32 => (0.0, u32::MAX as f64),
                _ => (0.0, u64::MAX as f64),
            };
            if value < lo || value > hi {
                return Err(bad());
            }
        }
        Ok(match self {
            DType::Float16 => {
                if value.abs() > 65504.0 {
                    return Err(bad());
                }
                f32_to_f16(value as f32).to_le_bytes().to_vec()
            }
            DType::Bfloat16 => {
                if value.is_finite() && value.abs() > f32::MAX as f64 {
                    return Err(bad());
                }
                f32_to_bf16(value as f32).to_le_bytes().to_vec()
            }
            DType::Float32 => {
                if value.is_finite() && value.abs() > f32::MAX as f64 {
                    return Err(bad());
                }
                (value as f32).to_le_bytes().to_vec()
            }
            DType::Float64 => value.to_le_bytes().to_vec(),
            DType::Int8 => (value as i8).to_le_bytes().to_vec(),
            DType::Int16 => (value as i16).to_le_bytes().to_vec(),
            DType::Int32 => (value as i32).to_le_bytes().to_vec(),
            DType::Int64 => (value as i64).to_le_bytes().to_vec(),
            DType::Uint8 => (value as u8).to_le_bytes().to_vec(),
            DType::Uint16 => (value as u16).to_le_bytes().to_vec(),
            DType::Uint32 => (value as u32).to_le_bytes().to_vec(),
            DType::Uint64 => (value as u64).to_le_bytes().to_vec(),
        })
    }
}

/// Round-to-nearest-even float → half, enough for scalar arguments.
fn f32_to_f16(v: f32) -> u16 {
    let bits = v.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    let mant = bits & 0x7f_ffff;
    if exp <= 0 {
        return sign;
    }
    if exp >= 31 {
        return sign | 0x7c00;
    }
    let half = sign | ((exp as u16) << 10) | (mant >> 13) as u16;
    if (mant & 0x1fff) > 0x1000 || ((mant & 0x1fff) == 0x1000 && (half & 1) == 1) {
        half + 1
    } else {
        half
    }
}

/// Round-to-nearest-even float → bfloat16 (the upper half of the float's bits); NaN stays a quiet NaN.
pub fn f32_to_bf16(v: f32) -> u16 {
    if v.is_nan() {
        return 0x7fc0;
    }
    let bits = v.to_bits();
    let rounding = 0x7fff + ((bits >> 16) & 1);
    (bits.wrapping_add(rounding) >> 16) as u16
}

/// IEEE binary16 bits to f64.
fn half_to_f64(h: u16) -> f64 {
    let e = ((h >> 10) & 0x1f) as i32;
    let m = (h & 0x3ff) as f64;
    let s = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    match e {
        0 => s * m * 2f64.powi(-24),
        31 => {
            if m == 0.0 {
                s * f64::INFINITY
            } else {
                f64::NAN
            }
        }
        _ => s * (m + 1024.0) * 2f64.powi(e - 25),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_types_map_to_dtypes() {
        assert_eq!(DType::from_c_type("int"), Some((DType::Int32, 1)));
        assert_eq!(
            DType::from_c_type("const unsigned int"),
            Some((DType::Uint32, 1))
        );
        assert_eq!(DType::from_c_type("size_t"), Some((DType::Uint64, 1)));
        assert_eq!(DType::from_c_type("float3"), Some((DType::Float32, 3)));
        assert_eq!(DType::from_c_type("MyStruct"), None);
        assert_eq!(DType::from_c_type("__half"), Some((DType::Float16, 1)));
        assert_eq!(DType::from_c_type("half2"), Some((DType::Float16, 2)));
        assert_eq!(
            DType::from_c_type("const __nv_bfloat16"),
            Some((DType::Bfloat16, 1))
        );
        assert_eq!(
            DType::from_c_type("nv_bfloat16"),
            Some((DType::Bfloat16, 1))
        );
    }

    #[test]
    fn values_that_do_not_fit_are_rejected() {
        assert!(DType::Int32.encode_scalar("n", 3.5).is_err());
        assert!(DType::Uint64.encode_scalar("n", -1.0).is_err());
        assert!(DType::Uint8.encode_scalar("n", 300.0).is_err());
        assert!(DType::Int32.encode_scalar("n", 3e9).is_err());
        assert_eq!(
            DType::Int32.encode_scalar("n", 4096.0).unwrap(),
            4096i32.to_le_bytes()
        );
        assert_eq!(
            DType::Float32.encode_scalar("dt", 0.01).unwrap(),
            0.01f32.to_le_bytes()
        );
        assert_eq!(
            DType::Float16.encode_scalar("h", 1.0).unwrap(),
            0x3c00u16.to_le_bytes()
        );
    }

    #[test]
    fn bfloat16_is_the_upper_half_of_a_float_and_is_stored_as_uint16() {
        assert_eq!(
            DType::parse_numpy("bfloat16").unwrap(),
            (DType::Bfloat16, 1)
        );
        assert_eq!(DType::Bfloat16.size(), 2);
        assert!(DType::Bfloat16.is_float());
        assert_eq!(DType::Bfloat16.npy_descr(), "<u2");
        assert_eq!(DType::Bfloat16.storage(), DType::Uint16);
        assert_eq!(DType::Bfloat16.bits_to_f64(0x3f80), 1.0);
        assert_eq!(DType::Bfloat16.bits_to_f64(0xc040), -3.0);
        assert!(DType::Bfloat16.bits_to_f64(0x7fc0).is_nan());
        // 1 + 2^-8 is halfway between bfloat16 neighbours 1 and 1 + 2^-7: ties go to even (1.0)
        assert_eq!(f32_to_bf16(1.0 + 1.0 / 256.0), 0x3f80);
        assert_eq!(f32_to_bf16(1.0 + 3.0 / 256.0), 0x3f82);
        assert_eq!(
            DType::Bfloat16.encode_scalar("alpha", 0.5).unwrap(),
            0x3f00u16.to_le_bytes()
        );
        assert!(DType::Bfloat16.encode_scalar("alpha", 1e39).is_err());
        assert_eq!(
            serde_json::to_string(&DType::Bfloat16).unwrap(),
            "\"bfloat16\""
        );
    }

    #[test]
    fn half_bits_convert_to_values() {
        assert_eq!(DType::Float16.bits_to_f64(0x3c00), 1.0);
        assert_eq!(DType::Float16.bits_to_f64(0xc000), -2.0);
        assert_eq!(DType::Float16.bits_to_f64(0x0001), 2f64.powi(-24));
    }

    #[test]
    fn numpy_names_with_lanes() {
        assert_eq!(
            DType::parse_numpy("float32x3").unwrap(),
            (DType::Float32, 3)
        );
        assert_eq!(DType::parse_numpy("uint8").unwrap(), (DType::Uint8, 1));
        assert!(DType::parse_numpy("complex64").is_err());
        assert_eq!(DType::from_npy_descr("<f4"), Some(DType::Float32));
        assert_eq!(DType::from_npy_descr("|u1"), Some(DType::Uint8));
    }
}
