//! [`TunableKernel`]: what the tuner tunes — a kernel's source and name, its tunable parameters and
//! restrictions, its launch geometry and the default launch — and the NVRTC name expression that reaches it
//! at one configuration (templates instantiated with the tuned values).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::input::arg_map::ArgBinding;
use crate::model::geometry::Geometry;
use crate::model::space::{Config, Restriction, TunableParam};

/// A kernel with named tunable parameters.
#[derive(Debug, Clone)]
pub struct TunableKernel {
    pub source: String,
    pub kernel_name: String,
    /// The name with its namespaces (`blas::saxpy`) when the kernel is declared inside one: the name
    /// expression must use it. None: `kernel_name` as it is.
    pub qualified_name: Option<String>,
    pub params: Vec<TunableParam>,
    pub restrictions: Vec<Restriction>,
    pub geometry: Geometry,
    /// Extra NVRTC options (the architecture is added by the tuner).
    pub compiler_options: Vec<String>,
    /// The default launch (e.g. the sidecar's `default_block`): the reference for expected outputs and the
    /// baseline for speed-ups. None: the first configuration of the space.
    pub reference: Option<Config>,
    /// Floating-point operations and bytes moved per launch, as expressions over scalar arguments.
    pub flops: Option<String>,
    pub bytes: Option<String>,
    /// Whether `flops` are done whatever the data (the sidecar's `flops_exact`): times are then also held
    /// to the floor the FP32 rate sets.
    pub flops_exact: bool,
    /// Template arguments of a templated kernel, in order (`["TILE"]`, `["float", "BLOCK"]`): a tunable
    /// parameter named here is instantiated per configuration (`&k<16>`) instead of becoming a `#define`.
    pub template_args: Vec<String>,
    /// Directories NVRTC searches for the kernel's own headers (`#include "common.h"`): the kernel file's
    /// directory and the user's `--include` directories.
    pub include_dirs: Vec<PathBuf>,
    /// Where each parameter's argument comes from when the tests were written for another signature (a
    /// candidate verified against a reference, see `arg_map`); None: the tests' arguments in order.
    pub arguments: Option<Vec<ArgBinding>>,
    /// Writes the source per configuration (Kernel Tuner's code generators: a function of the parameters, a
    /// template's `render`); `source` then stands for the kernel wherever one text is needed (its signature,
    /// the results cache's scope). None: `source` is compiled for every configuration.
    pub generator: Option<SourceGenerator>,
}

/// What a source generator is: the configuration to its source, or to a message.
pub type GenerateSource = dyn Fn(&Config) -> Result<String, String> + Send + Sync;

/// A function that writes a kernel's source for one configuration; its error is a message.
#[derive(Clone)]
pub struct SourceGenerator(pub Arc<GenerateSource>);

impl SourceGenerator {
    pub fn new(f: impl Fn(&Config) -> Result<String, String> + Send + Sync + 'static) -> Self {
        SourceGenerator(Arc::new(f))
    }
}

impl fmt::Debug for SourceGenerator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SourceGenerator(..)")
    }
}

impl TunableKernel {
    pub fn new(
        source: impl Into<String>,
        kernel_name: impl Into<String>,
        problem_size: Vec<String>,
    ) -> Self {
        TunableKernel {
            source: source.into(),
            kernel_name: kernel_name.into(),
            qualified_name: None,
            params: Vec::new(),
            restrictions: Vec::new(),
            geometry: Geometry::new(problem_size),
            compiler_options: Vec::new(),
            reference: None,
            flops: None,
            bytes: None,
            flops_exact: false,
            template_args: Vec::new(),
            include_dirs: Vec::new(),
            arguments: None,
            generator: None,
        }
    }

    /// The source compiled at `config`: the generator's text, else `source`.
    pub fn source_at(
        &self,
        config: &Config,
    ) -> Result<std::borrow::Cow<'_, str>, crate::error::TunerError> {
        match &self.generator {
            Some(g) => (g.0)(config).map(std::borrow::Cow::Owned).map_err(|e| {
                crate::error::TunerError::Source(format!(
                    "the source generator of kernel `{}` failed at {config}: {e}",
                    self.kernel_name
                ))
            }),
            None => Ok(std::borrow::Cow::Borrowed(&self.source)),
        }
    }

    /// The NVRTC name expression of the kernel at `config`: `&name`, or `&name<args>` with the tunable
    /// parameters among the template arguments replaced by their values. C++ linkage, namespaces
    /// (`ns::k`) and `extern "C"` kernels all resolve through it.
    pub fn name_expression(&self, config: &Config) -> String {
        let name = self.qualified_name.as_deref().unwrap_or(&self.kernel_name);
        if self.template_args.is_empty() {
            return format!("&{name}");
        }
        let args: Vec<String> = self
            .template_args
            .iter()
            .map(|a| substitute_params(a, config))
            .collect();
        format!("&{name}<{}>", args.join(", "))
    }

    /// Whether a tunable parameter is a template argument (then it is not `#define`d: the macro would
    /// replace the template parameter's own name in the kernel).
    pub fn is_template_param(&self, name: &str) -> bool {
        self.template_args
            .iter()
            .any(|a| identifiers(a).any(|(id, _)| id == name))
    }

    /// Whether the kernel calls tensor-core instructions (WMMA, `mma.sync`, `wgmma`): its arithmetic may
    /// then outrun the FP32 units, and its compute floor is the tensor cores' (`check::floor`).
    pub fn uses_tensor_cores(&self) -> bool {
        [
            "wmma::",
            "mma_sync",
            "mma.sync",
            "wgmma",
            "__hmma",
            "nvcuda::wmma",
        ]
        .iter()
        .any(|w| self.source.contains(w))
    }

    /// Whether the kernel writes `__device__` or `__managed__` variables, state that outlives a launch (as
    /// kt-cuda's parser finds them): such a kernel is sampled and checked past the launches a launch counter
    /// could still treat as the first few (`TimingPolicy::for_stateful_kernel`). A source the parser
    /// cannot read is taken as keeping state: the check costs time, missing it costs correctness.
    pub fn keeps_state(&self) -> bool {
        let Ok(parsed) = kt_cuda::parse_tolerant(&self.source) else {
            return true;
        };
        match parsed.kernels().iter().find(|k| k.name == self.kernel_name) {
            Some(k) => !k.mutable_globals.is_empty(),
            None => parsed
                .kernels()
                .iter()
                .any(|k| !k.mutable_globals.is_empty()),
        }
    }
}

/// The template arguments of a kernel whose template parameters are `(name, default)`: a tuned parameter
/// by its name, one given in `given` by that value, else its default; a parameter with none of these is an
/// error that says how to give it.
pub fn template_args_for(
    kernel: &str,
    template_params: &[(String, Option<String>)],
    tuned: &[TunableParam],
    given: &std::collections::BTreeMap<String, String>,
) -> Result<Vec<String>, crate::error::TunerError> {
    template_params
        .iter()
        .map(|(name, default)| {
            if tuned.iter().any(|p| &p.name == name) {
                Ok(name.clone())
            } else if let Some(v) = given.get(name) {
                Ok(v.clone())
            } else if let Some(d) = default {
                Ok(d.clone())
            } else {
                Err(crate::error::TunerError::Source(format!(
                    "template parameter `{name}` of kernel `{kernel}` has no default and is not tuned: tune it (--param {name}=8,16,32) or give its value"
                )))
            }
        })
        .collect()
}

/// The identifiers of an expression with their byte offsets.
fn identifiers(text: &str) -> impl Iterator<Item = (&str, usize)> {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            let c = bytes[i];
            if c.is_ascii_alphabetic() || c == b'_' {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                return Some((&text[start..i], start));
            }
            if c.is_ascii_digit() {
                // a number's suffix (16u) is not an identifier
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                continue;
            }
            i += 1;
        }
        None
    })
}

/// `text` with every identifier that names a parameter of `config` replaced by its value.
fn substitute_params(text: &str, config: &Config) -> String {
    let mut out = String::new();
    let mut last = 0;
    for (id, at) in identifiers(text) {
        if let Some((_, v)) = config.0.iter().find(|(n, _)| n == id) {
            out.push_str(&text[last..at]);
            out.push_str(&v.to_string());
            last = at + id.len();
        }
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_counter_is_state_a_pure_kernel_keeps_none() {
        let counter = TunableKernel::new(
            "__device__ unsigned int launches = 0;\n\
             __global__ void twice(const float* in, float* out, int n) {\n\
                 if (atomicAdd(&launches, 1u) > 3u) return;\n\
                 int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
                 if (i < n) out[i] = 2.0f * in[i];\n\
             }\n",
            "twice",
            vec!["n".into()],
        );
        assert!(counter.keeps_state());
        let pure = TunableKernel::new(
            "__constant__ float scale[1];\n\
             __global__ void twice(const float* in, float* out, int n) {\n\
                 int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
                 if (i < n) out[i] = scale[0] * in[i];\n\
             }\n",
            "twice",
            vec!["n".into()],
        );
        assert!(!pure.keeps_state());
    }

    fn config(values: &[(&str, i64)]) -> Config {
        Config::ints(values.iter().copied())
    }

    #[test]
    fn a_plain_or_namespaced_kernel_is_named_by_its_address() {
        let k = TunableKernel::new("", "matrixAdd", vec![]);
        assert_eq!(
            k.name_expression(&config(&[("block_size_x", 32)])),
            "&matrixAdd"
        );
        let k = TunableKernel::new("", "ops::scale", vec![]);
        assert_eq!(k.name_expression(&config(&[])), "&ops::scale");
        let mut k = TunableKernel::new("", "saxpy", vec![]);
        k.qualified_name = Some("blas::saxpy".into());
        k.template_args = vec!["T".into()];
        assert_eq!(k.name_expression(&config(&[("T", 4)])), "&blas::saxpy<4>");
    }

    #[test]
    fn a_tuned_template_parameter_is_instantiated_per_configuration() {
        let mut k = TunableKernel::new("", "tiled", vec![]);
        k.template_args = vec!["float".into(), "TILE".into(), "TILE*2u".into()];
        let c = config(&[("TILE", 16), ("block_size_x", 64)]);
        assert_eq!(k.name_expression(&c), "&tiled<float, 16, 16*2u>");
        assert!(k.is_template_param("TILE"));
        assert!(!k.is_template_param("block_size_x"));
    }

    #[test]
    fn template_parameters_come_from_the_space_the_user_or_their_defaults() {
        let tuned = vec![TunableParam::new("TILE", [8, 16])];
        let mut given = std::collections::BTreeMap::new();
        given.insert("T".to_string(), "float".to_string());
        let params = vec![
            ("T".to_string(), None),
            ("TILE".to_string(), None),
            ("UNROLL".to_string(), Some("4".to_string())),
        ];
        assert_eq!(
            template_args_for("k", &params, &tuned, &given).unwrap(),
            vec!["float", "TILE", "4"]
        );
        let err = template_args_for("k", &params, &tuned, &Default::default()).unwrap_err();
        assert!(
            err.to_string().contains("`T` of kernel `k` has no default"),
            "{err}"
        );
    }
}
