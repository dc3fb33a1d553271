//! What a generator must produce: the kernel's parameters and the `__constant__` symbols it reads, as
//! kt-sandbox sees them (independent of kt-cuda; the pipeline maps what it parsed to [`ArgSpec`] and
//! [`ConstantSpec`]), checked and rendered for the harness.

use serde::Serialize;

use super::element::{ElementType, element_type};
use super::error::GeneratorError;

/// The most bytes a `__constant__` symbol can hold: all of constant memory.
pub const CONSTANT_MEMORY_BYTES: u64 = 64 << 10;

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

/// One `__constant__` symbol the kernel reads: an input that no argument carries, which the generator fills
/// too (`generate` then returns `{"args": [...], "constants": {name: array}}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstantSpec {
    /// The symbol's name; also the .npy file name under `constants/`.
    pub name: String,
    /// The element type as declared, typedefs followed: `float`, `float4`.
    pub element_type: String,
    /// Elements (of the C type; structs count once) the declaration gives; `None` when the length is known
    /// only when compiling (a tunable macro): then any non-empty array within constant memory.
    pub length: Option<u64>,
}

impl ConstantSpec {
    pub fn new(name: &str, element_type: &str, length: Option<u64>) -> Self {
        Self {
            name: name.into(),
            element_type: element_type.into(),
            length,
        }
    }

    /// The numpy element type the generator's array must have.
    pub fn element(&self) -> Result<ElementType, GeneratorError> {
        element_type(&self.element_type).ok_or_else(|| GeneratorError::SpecInvalid {
            detail: format!(
                "the kernel reads `__constant__ {} {}`, whose type has no numpy equivalent kt knows (scalars, \
                 float2/3/4-like vectors of them), so no generator can fill it; describe it in a sidecar instead",
                self.element_type, self.name
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
    /// The `__constant__` symbols the kernel reads (empty for most kernels).
    pub constants: Vec<ConstantSpec>,
    /// Pointer parameters the kernel writes.
    pub outputs: Vec<String>,
    /// Problem size (x, y, z) as expressions over the scalar parameters; fewer than 3 are padded with 1.
    pub problem_size: Option<Vec<String>>,
    /// Refuse to write arguments larger than this in total (checked before anything is written).
    pub max_total_bytes: u64,
}

/// The spec as the harness reads it (kt_spec.json).
#[derive(Debug, Serialize)]
pub(crate) struct HarnessSpec<'a> {
    pub kernel: &'a str,
    pub seed: u64,
    pub max_total_bytes: u64,
    pub problem_size: Option<&'a [String]>,
    pub params: Vec<HarnessParam<'a>>,
    pub constants: Vec<HarnessConstant<'a>>,
}

#[derive(Debug, Serialize)]
pub(crate) struct HarnessConstant<'a> {
    pub name: &'a str,
    pub dtype: &'static str,
    pub lanes: u32,
    #[serde(rename = "struct")]
    pub struct_name: Option<&'static str>,
    /// Elements (structs count once), when the declaration fixes them.
    pub length: Option<u64>,
    pub max_bytes: u64,
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
            if !is_identifier(&p.name) {
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
            constants: self.harness_constants()?,
        })
    }

    fn harness_constants(&self) -> Result<Vec<HarnessConstant<'_>>, GeneratorError> {
        let invalid = |detail: String| GeneratorError::SpecInvalid { detail };
        let mut out = Vec::with_capacity(self.constants.len());
        for c in &self.constants {
            if !is_identifier(&c.name) {
                return Err(invalid(format!(
                    "constant name `{}` is not a C identifier",
                    c.name
                )));
            }
            if self.constants.iter().filter(|d| d.name == c.name).count() > 1 {
                return Err(invalid(format!("constant `{}` appears twice", c.name)));
            }
            let element = c.element()?;
            out.push(HarnessConstant {
                name: &c.name,
                dtype: element.dtype,
                lanes: element.lanes,
                struct_name: element.struct_name,
                length: c.length,
                max_bytes: CONSTANT_MEMORY_BYTES,
            });
        }
        Ok(out)
    }
}

fn is_identifier(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_with_a_bad_output_name_is_rejected_before_running_anything() {
        let spec = GeneratorSpec {
            kernel: "k".into(),
            params: vec![
                ArgSpec::array("a", "float", None),
                ArgSpec::scalar("n", "int"),
            ],
            constants: Vec::new(),
            outputs: vec!["n".into()],
            problem_size: None,
            max_total_bytes: 1 << 20,
        };
        assert!(matches!(
            spec.for_harness(1),
            Err(GeneratorError::SpecInvalid { .. })
        ));
    }

    #[test]
    fn constants_go_to_the_harness_typed_and_one_of_a_type_kt_cannot_fill_is_refused() {
        let mut spec = GeneratorSpec {
            kernel: "k".into(),
            params: vec![ArgSpec::array("a", "float", None)],
            constants: vec![
                ConstantSpec::new("coeffs", "float", Some(16)),
                ConstantSpec::new("taps", "float4", None),
            ],
            outputs: vec!["a".into()],
            problem_size: None,
            max_total_bytes: 1 << 20,
        };
        let json = serde_json::to_value(spec.for_harness(1).unwrap()).unwrap();
        assert_eq!(json["constants"][0]["name"], "coeffs");
        assert_eq!(json["constants"][0]["dtype"], "float32");
        assert_eq!(json["constants"][0]["length"], 16);
        assert_eq!(json["constants"][1]["lanes"], 4);
        assert_eq!(json["constants"][1]["length"], serde_json::Value::Null);
        spec.constants
            .push(ConstantSpec::new("table", "float *", Some(1)));
        let err = spec.for_harness(1).unwrap_err().to_string();
        assert!(err.contains("`__constant__ float * table`"), "{err}");
    }
}
