//! Element types of kernel arguments: numpy names (the test format), C types (the kernel signature) and the
//! checks that a scalar value fits the parameter it is passed to.

use serde::{Deserialize, Serialize};

use crate::error::TunerError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    Float16,
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
            DType::Float16 | DType::Int16 | DType::Uint16 => 2,
            DType::Float32 | DType::Int32 | DType::Uint32 => 4,
            DType::Float64 | DType::Int64 | DType::Uint64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::Float16 | DType::Float32 | DType::Float64)
    }

    pub fn numpy_name(self) -> &'static str {
        match self {
            DType::Float16 => "float16",
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
    pub fn parse_numpy(name: &str) -> Result<(DType, u32), TunerError> {
        let (base, lanes) = match name.rsplit_once('x') {
            Some((b, l)) if !l.is_empty() && l.chars().all(|c| c.is_ascii_digit()) => {
                (b, l.parse::<u32>().unwrap_or(1))
            }
            _ => (name, 1),
        };
        let d = match base {
            "float16" | "half" => DType::Float16,
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
                return Err(TunerError::Arguments(format!(
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
    pub fn encode_scalar(self, name: &str, value: f64) -> Result<Vec<u8>, TunerError> {
        let bad = || {
            TunerError::Arguments(format!(
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
