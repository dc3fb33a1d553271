//! [`CudaSource`]: what the analysis of a whole file (`parse.rs`) found — every `__global__` definition, the
//! file-scope things kernels refer to (`__device__` helpers, `#define`s, constants), the syntax problems and
//! the kernels they cost — and the choice of one kernel by name.

use serde::{Deserialize, Serialize};

use crate::error::{CudaError, SyntaxProblem};
use crate::kernel::Kernel;
use crate::location::{Location, Span};

/// A `#define` found in the file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MacroDefinition {
    pub name: String,
    /// Parameters are not recorded; `function_like` says whether there are any.
    pub function_like: bool,
    /// The body, tokens joined by single spaces.
    pub body: String,
    pub location: Location,
    /// The file it is defined in (the main file or a followed header); absent when parsed from text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_file: Option<String>,
}

/// A `__device__` function (not `__global__`) defined in the file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeviceFunction {
    pub name: String,
    pub span: Span,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_file: Option<String>,
}

/// Everything kt learned from one CUDA file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CudaSource {
    /// Every `__global__` definition in source order (kernels with syntax errors left out).
    pub kernels: Vec<Kernel>,
    pub device_functions: Vec<DeviceFunction>,
    pub defines: Vec<MacroDefinition>,
    /// File-scope `constexpr` / `const` variables with an initializer.
    pub constants: Vec<String>,
    /// File-scope `__constant__` variables, in source order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constant_symbols: Vec<crate::constant_symbol::ConstantSymbol>,
    /// ERROR/MISSING nodes. From [`parse`] only those outside every usable kernel (and its helpers): a
    /// broken host function or struct does not hide the kernels. [`parse_tolerant`] keeps them all.
    pub syntax_problems: Vec<SyntaxProblem>,
    /// Kernels left out because a syntax error sits in them or in a helper they call, with those problems.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub broken_kernels: Vec<(String, Vec<SyntaxProblem>)>,
    /// "followed includes: …; includes not found: …" for messages; empty without includes.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub includes_note: String,
    /// Kernels defined through a macro invocation: listed, not analysed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub macro_kernels: Vec<crate::macro_kernels::MacroKernel>,
}

impl CudaSource {
    pub fn kernels(&self) -> &[Kernel] {
        &self.kernels
    }

    /// Kernel names in source order, each once.
    pub fn kernel_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for k in &self.kernels {
            if !names.contains(&k.name) {
                names.push(k.name.clone());
            }
        }
        names
    }

    /// One kernel → it (a name, if given, must match); several → `name` picks one, else an error that lists them.
    pub fn select_kernel(&self, name: Option<&str>) -> Result<&Kernel, CudaError> {
        self.select_kernel_in(name, "the source")
    }

    /// [`CudaSource::select_kernel`] with the file's name in the error messages.
    pub fn select_kernel_in(&self, name: Option<&str>, what: &str) -> Result<&Kernel, CudaError> {
        if let Some(wanted) = name
            && !self.kernels.iter().any(|k| k.name == wanted)
            && let Some(m) = self.macro_kernels.iter().find(|m| m.name == wanted)
        {
            return Err(CudaError::MacroKernel {
                what: what.to_string(),
                name: m.name.clone(),
                macro_name: m.macro_name.clone(),
                line: m.location.line,
            });
        }
        if let Some(wanted) = name
            && let Some((_, problems)) = self.broken_kernels.iter().find(|(k, _)| k == wanted)
            && !self.kernels.iter().any(|k| k.name == wanted)
        {
            return Err(CudaError::Syntax {
                what: format!("kernel `{wanted}` of {what}"),
                problems: problems.clone(),
            });
        }
        match (name, self.kernels.as_slice()) {
            (_, []) => Err(CudaError::NoKernel {
                what: what.to_string(),
                includes: self.includes_note.clone(),
            }),
            (None, [only]) => Ok(only),
            // the same kernel in two `#if` branches is one kernel to the user: take the first definition
            (None, [first, rest @ ..]) if rest.iter().all(|k| k.name == first.name) => Ok(first),
            (None, _) => Err(CudaError::KernelNotChosen {
                what: what.to_string(),
                available: self.kernel_names(),
            }),
            (Some(wanted), kernels) => {
                kernels
                    .iter()
                    .find(|k| k.name == wanted)
                    .ok_or_else(|| CudaError::KernelNotFound {
                        what: what.to_string(),
                        requested: wanted.to_string(),
                        available: self.kernel_names(),
                    })
            }
        }
    }
}
