//! A `__constant__` variable as kt describes it (what `constant_memory` finds in a file): the data alone,
//! so that the kernel and source descriptions can name it without the parser's dependencies.

use serde::{Deserialize, Serialize};

use crate::location::Location;

/// One `__constant__` variable of a file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ConstantSymbol {
    pub name: String,
    /// The element type, typedefs followed (`float`, `float4`); a pointer keeps its `*`.
    pub element_type: String,
    /// The element type as a numpy-style name when kt knows it (`float32`, `float32x4` for a `float4`);
    /// absent for structs and pointers, which kt cannot generate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    /// Array dimensions as written, outermost first (`["FILTER_H*FILTER_W"]`); empty for a scalar.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dims: Vec<String>,
    /// Elements in all (1 for a scalar) when every dimension is a literal or a macro with a fixed value;
    /// absent when a dimension depends on something known only when compiling (a tunable macro).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<u64>,
    pub location: Location,
}

impl std::fmt::Display for ConstantSymbol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "__constant__ {} {}", self.element_type, self.name)?;
        for d in &self.dims {
            write!(f, "[{d}]")?;
        }
        match (self.length, self.dims.is_empty()) {
            (Some(n), false) => write!(f, " ({n} elements)"),
            (None, false) => write!(f, " (length known when compiled)"),
            _ => Ok(()),
        }
    }
}
