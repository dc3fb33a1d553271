//! What a generator must produce: the kernel's parameters as kt-sandbox sees them (independent of kt-cuda; the
//! pipeline maps its parsed parameters to [`ArgSpec`]), and the C-type → numpy-dtype rules.

use serde::Serialize;

use super::error::GeneratorError;

/// One kernel parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgSpec {
    /// The C identifier; also the .npy file name.
    pub name: String,
    /// The base C type without pointer, `const` or `__restrict__`: `float`, `unsigned int`, `float3`, `uint8_t`.
    pub base_type: String,
    /// 0 for a scalar passed by value, 1 for a pointer (an array argument). Deeper pointers are not supported.
    pub pointer_depth: u8,
    /// For pointers: the number of elements (of the C type; structs count once) as an expression over the scalar
    /// parameters, e.g. `"n * m"`. `None`: any non-empty size.
    pub size: Option<String>,
}

impl ArgSpec {
    pub fn scalar(name: &str, base_type: &str) -> Self {
        Self {
            name: name.into(),
            base_type: base_type.into(),
            pointer_depth: 0,
            size: None,
        }
    }

    pub fn array(name: &str, base_type: &str, size: Option<&str>) -> Self {
        Self {
            name: name.into(),
            base_type: base_type.into(),
            pointer_depth: 1,
            size: size.map(String::from),
        }
    }

    /// The numpy element type this parameter's argument must have.
    pub fn element(&self) -> Result<ElementType, GeneratorError> {
        element_type(&self.base_type).ok_or_else(|| GeneratorError::SpecInvalid {
            detail: format!(
                "parameter `{}` has C type `{}`, which has no numpy equivalent kt knows (scalars, \
                 float2/3/4-like vectors of them)",
                self.name, self.base_type
            ),
        })
    }
}

/// What a generator run must produce.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratorSpec {
    /// The kernel's name (written to the manifest).
    pub kernel: String,
    /// Parameters in the kernel's order.
    pub params: Vec<ArgSpec>,
    /// Pointer parameters the kernel writes.
    pub outputs: Vec<String>,
    /// Problem size (x, y, z) as expressions over the scalar parameters; fewer than 3 are padded with 1.
    pub problem_size: Option<Vec<String>>,
    /// Refuse to write arguments larger than this in total (checked before anything is written).
    pub max_total_bytes: u64,
}

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

/// The spec as the harness reads it (kt_spec.json).
#[derive(Debug, Serialize)]
pub(crate) struct HarnessSpec<'a> {
    pub kernel: &'a str,
    pub seed: u64,
    pub max_total_bytes: u64,
    pub problem_size: Option<&'a [String]>,
    pub params: Vec<HarnessParam<'a>>,
}

#[derive(Debug, Serialize)]
pub(crate) struct HarnessParam<'a> {
    pub name: &'a str,
    pub kind: &'static str,
    pub dtype: &'static str,
    pub lanes: u32,
    #[serde(rename = "struct")]
    pub struct_name: Option<&'static str>,
    pub size: Option<&'a str>,
}

impl GeneratorSpec {
    /// Checks the spec itself (kt's side, before any generator runs) and renders it for the harness.
    pub(crate) fn for_harness(&self, seed: u64) -> Result<HarnessSpec<'_>, GeneratorError> {
        let invalid = |detail: String| GeneratorError::SpecInvalid { detail };
        let mut params = Vec::with_capacity(self.params.len());
        for p in &self.params {
            let valid_name = p
                .name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && p.name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid_name {
                return Err(invalid(format!(
                    "parameter name `{}` is not a C identifier",
                    p.name
                )));
            }
            if self.params.iter().filter(|q| q.name == p.name).count() > 1 {
                return Err(invalid(format!("parameter `{}` appears twice", p.name)));
            }
            if p.pointer_depth > 1 {
                return Err(invalid(format!(
                    "parameter `{}` is a pointer to a pointer, which kt cannot fill",
                    p.name
                )));
            }
            let element = p.element()?;
            if p.pointer_depth == 0 && element.lanes > 1 {
                return Err(invalid(format!(
                    "parameter `{}` passes a `{}` struct by value, which kt cannot fill yet",
                    p.name, p.base_type
                )));
            }
            params.push(HarnessParam {
                name: &p.name,
                kind: if p.pointer_depth == 1 {
                    "array"
                } else {
                    "scalar"
                },
                dtype: element.dtype,
                lanes: element.lanes,
                struct_name: element.struct_name,
                size: p.size.as_deref().filter(|_| p.pointer_depth == 1),
            });
        }
        for out in &self.outputs {
            if !self
                .params
                .iter()
                .any(|p| &p.name == out && p.pointer_depth == 1)
            {
                return Err(invalid(format!(
                    "output `{out}` is not a pointer parameter of {}",
                    self.kernel
                )));
            }
        }
        Ok(HarnessSpec {
            kernel: &self.kernel,
            seed,
            max_total_bytes: self.max_total_bytes,
            problem_size: self.problem_size.as_deref(),
            params,
        })
    }
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

    #[test]
    fn a_spec_with_a_bad_output_name_is_rejected_before_running_anything() {
        let spec = GeneratorSpec {
            kernel: "k".into(),
            params: vec![
                ArgSpec::array("a", "float", None),
                ArgSpec::scalar("n", "int"),
            ],
            outputs: vec!["n".into()],
            problem_size: None,
            max_total_bytes: 1 << 20,
        };
        assert!(matches!(
            spec.for_harness(1),
            Err(GeneratorError::SpecInvalid { .. })
        ));
    }
}
