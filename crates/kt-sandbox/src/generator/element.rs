//! C types as numpy sees them: the tests format's dtype of a scalar C type or CUDA vector struct, for the
//! kernel's parameters and its `__constant__` symbols alike.

/// A numpy element type: dtype name, and the lane count of a vector struct (`float3` → float32 × 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElementType {
    pub dtype: &'static str,
    pub lanes: u32,
    /// The struct's name for vector types (`"float3"`), as the manifest records it.
    pub struct_name: Option<&'static str>,
}

impl ElementType {
    pub fn item_size(&self) -> u64 {
        dtype_size(self.dtype).unwrap_or(0)
    }
}

/// Bytes per element of a tests-format dtype.
pub fn dtype_size(dtype: &str) -> Option<u64> {
    kt_record::DType::parse_numpy(dtype)
        .ok()
        .map(|(d, lanes)| d.size() as u64 * u64::from(lanes))
}

/// The numpy dtype of a scalar C type (LP64: `long` is 64-bit).
fn scalar_dtype(c_type: &str) -> Option<&'static str> {
    let normalized = c_type
        .split_whitespace()
        .filter(|w| *w != "const" && *w != "volatile")
        .collect::<Vec<_>>()
        .join(" ");
    Some(match normalized.as_str() {
        "float" => "float32",
        "double" => "float64",
        "half" | "__half" => "float16",
        "int" | "signed" | "signed int" | "int32_t" => "int32",
        "unsigned" | "unsigned int" | "uint32_t" | "uint" => "uint32",
        "long" | "long int" | "long long" | "long long int" | "signed long long" | "int64_t"
        | "ptrdiff_t" => "int64",
        "unsigned long"
        | "unsigned long long"
        | "unsigned long long int"
        | "uint64_t"
        | "size_t" => "uint64",
        "short" | "short int" | "int16_t" => "int16",
        "unsigned short" | "unsigned short int" | "uint16_t" | "ushort" => "uint16",
        "char" | "signed char" | "int8_t" => "int8",
        "unsigned char" | "uint8_t" | "uchar" | "bool" => "uint8",
        _ => return None,
    })
}

/// CUDA's vector types: name prefix → scalar dtype.
const VECTOR_TYPES: [(&str, &str); 10] = [
    ("float", "float32"),
    ("double", "float64"),
    ("int", "int32"),
    ("uint", "uint32"),
    ("longlong", "int64"),
    ("ulonglong", "uint64"),
    ("short", "int16"),
    ("ushort", "uint16"),
    ("char", "int8"),
    ("uchar", "uint8"),
];

const VECTOR_NAMES: [&str; 40] = [
    "float1",
    "float2",
    "float3",
    "float4",
    "double1",
    "double2",
    "double3",
    "double4",
    "int1",
    "int2",
    "int3",
    "int4",
    "uint1",
    "uint2",
    "uint3",
    "uint4",
    "longlong1",
    "longlong2",
    "longlong3",
    "longlong4",
    "ulonglong1",
    "ulonglong2",
    "ulonglong3",
    "ulonglong4",
    "short1",
    "short2",
    "short3",
    "short4",
    "ushort1",
    "ushort2",
    "ushort3",
    "ushort4",
    "char1",
    "char2",
    "char3",
    "char4",
    "uchar1",
    "uchar2",
    "uchar3",
    "uchar4",
];

/// The element type of a C type: a scalar, or a CUDA vector struct (`float3`).
pub fn element_type(c_type: &str) -> Option<ElementType> {
    if let Some(dtype) = scalar_dtype(c_type) {
        return Some(ElementType {
            dtype,
            lanes: 1,
            struct_name: None,
        });
    }
    let name = c_type.trim();
    let struct_name = VECTOR_NAMES.iter().copied().find(|n| *n == name)?;
    let (prefix, lanes) = struct_name.split_at(struct_name.len() - 1);
    let lanes: u32 = lanes.parse().ok()?;
    let dtype = VECTOR_TYPES.iter().find(|(p, _)| *p == prefix)?.1;
    Some(ElementType {
        dtype,
        lanes,
        struct_name: Some(struct_name),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_types_map_to_the_numpy_dtypes_of_the_tests_format() {
        let dt = |c: &str| element_type(c).map(|e| (e.dtype, e.lanes));
        assert_eq!(dt("float"), Some(("float32", 1)));
        assert_eq!(dt("const float"), Some(("float32", 1)));
        assert_eq!(dt("int"), Some(("int32", 1)));
        assert_eq!(dt("double"), Some(("float64", 1)));
        assert_eq!(dt("unsigned char"), Some(("uint8", 1)));
        assert_eq!(dt("unsigned  int"), Some(("uint32", 1)));
        assert_eq!(dt("float3"), Some(("float32", 3)));
        assert_eq!(dt("uchar4"), Some(("uint8", 4)));
        assert_eq!(dt("struct Particle"), None);
    }
}
