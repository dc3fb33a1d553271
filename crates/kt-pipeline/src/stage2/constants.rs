//! The `__constant__` symbols a kernel reads, as Stage 2 presents them: inputs no argument carries, so the
//! generator fills them too. The harness checks each against its declaration ([`generator_constants`]) and
//! the prompt lists each with its type and length ([`prompt_constants`]).

use kt_cuda::Kernel;
use kt_sandbox::generator::{ConstantSpec, element_type};
use serde::Serialize;

/// What the generator must return for each `__constant__` symbol `kernel` (or a helper it calls) reads.
pub fn generator_constants(kernel: &Kernel) -> Vec<ConstantSpec> {
    kernel
        .constant_memory
        .iter()
        .map(|c| ConstantSpec::new(&c.name, &c.element_type, c.length))
        .collect()
}

/// One `__constant__` symbol in a Stage 2 prompt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct PromptConstant {
    pub name: String,
    /// The declaration as written (`__constant__ float coeffs[16]`).
    pub declaration: String,
    /// The element type, typedefs followed (`float`, `float4`).
    pub element_type: String,
    /// The numpy dtype of the array (`float32`); absent for a type kt cannot fill.
    pub dtype: Option<String>,
    /// Lanes of a vector struct (`float4`: 4): the array's last dimension; 1 for scalars.
    pub lanes: u32,
    /// Elements as declared (structs count once); absent when a macro the configuration may set decides it.
    pub length: Option<u64>,
}

/// The symbols of [`generator_constants`] as the prompt describes them.
pub(crate) fn prompt_constants(kernel: &Kernel) -> Vec<PromptConstant> {
    kernel
        .constant_memory
        .iter()
        .map(|c| {
            let element = element_type(&c.element_type);
            let dims: String = c.dims.iter().map(|d| format!("[{d}]")).collect();
            PromptConstant {
                name: c.name.clone(),
                declaration: format!("__constant__ {} {}{dims}", c.element_type, c.name),
                element_type: c.element_type.clone(),
                dtype: element.map(|e| e.dtype.to_string()),
                lanes: element.map_or(1, |e| e.lanes),
                length: c.length,
            }
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn each_symbol_read_is_described_with_its_type_and_length() {
        let src = "#define TAPS 4\n__constant__ float coeffs[16];\n__constant__ float4 taps[TAPS];\n\
                   __constant__ int unread[2];\n\
                   __global__ void fir(float *o, const float *i) { o[0] = coeffs[1] * i[0] + taps[0].x; }\n";
        let kernel = kt_cuda::parse(src).unwrap().kernels[0].clone();
        let specs = generator_constants(&kernel);
        assert_eq!(
            specs,
            [
                ConstantSpec::new("coeffs", "float", Some(16)),
                ConstantSpec::new("taps", "float4", Some(4)),
            ]
        );
        let shown = prompt_constants(&kernel);
        assert_eq!(shown[0].declaration, "__constant__ float coeffs[16]");
        assert_eq!(
            (shown[1].dtype.as_deref(), shown[1].lanes, shown[1].length),
            (Some("float32"), 4, Some(4))
        );
    }
}
