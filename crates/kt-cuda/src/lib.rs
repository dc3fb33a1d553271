//! kt-cuda reads CUDA source the way kt's pipeline needs it. With tree-sitter-cuda it finds every `__global__`
//! kernel — in the file and in the user headers it includes — with its exact parameter list (types with
//! typedefs followed to a known element type such as `float16`/`bfloat16`, pointer depth, `const`,
//! `__restrict__`, `volatile`, arrays, and the ABI layout of structs and vector types passed by value), its
//! launch bounds, template parameters (offered as tunables), the `__device__` helpers, macros and constants
//! it uses, the CUDA features it touches (barriers, cooperative groups, warp intrinsics), the literal sizes that
//! tie it to a launch configuration and the relations between launch parameters it assumes (as restriction
//! strings). It extracts a kernel's own compilation unit from a whole program (no host code) and puts a new
//! kernel back into a copy of that program. It also holds the source rewrites every strategy relies on
//! (prepending `#define`s like Kernel Tuner, finding and removing names that collide with tunable parameters,
//! comparing two versions' signatures) and the kernel suite's sidecar format.
//!
//! It deliberately does not compile, launch or time anything (that is kt-tuner), does not run the C
//! preprocessor (only macros that name qualifiers, types or another name are substituted so the grammar can
//! parse declarations, and `__align__` is read as `alignas`; positions are mapped back to the user's text),
//! does not follow system headers (`<stdio.h>`, `<cuda_fp16.h>`) that no include directory holds, and knows
//! nothing of LLMs.
//!
//! Main types, in reading order: [`SourceFile`] (a file with its followed headers and the line map back to
//! them) → [`parse_source_file`] / [`parse`] → [`CudaSource`] (kernels, helpers, defines) → [`Kernel`] with
//! its [`KernelParam`]s ([`StructLayout`] for by-value structs), [`LaunchAssumption`]s and [`Restriction`]s →
//! [`extract_unit`] → [`KernelUnit`] (the device-only source kt compiles, with its [`UnitItem`]s) →
//! [`splice_kernel_into_program`] / [`splice_kernel_into_file`] (a new kernel back into the user's program).
//! Around them: [`InspectReport`] (`kt inspect`), [`Sidecar`], [`compare_signatures`] /
//! [`require_same_signature`], [`prepend_defines`] and the other rewrites, and the one error type
//! [`CudaError`].
//!
//! Unit extraction, the core other crates build on:
//!
//! ```
//! let program = "#include <stdio.h>\n\
//!     __device__ float twice(float v) { return 2 * v; }\n\
//!     __global__ void k(float *a) { a[threadIdx.x] = twice(a[threadIdx.x]); }\n\
//!     int main() { float *a; cudaMalloc(&a, 4); k<<<1, 1>>>(a); printf(\"ok\\n\"); }\n";
//! let file = kt_cuda::SourceFile::from_text("prog.cu", program, &[]);
//! let unit = kt_cuda::extract_unit(&file, "k")?;
//! assert!(unit.text.contains("__device__ float twice") && !unit.text.contains("main"));
//! let new_kernel = unit.text.replace("2 * v", "v + v");
//! let whole = kt_cuda::splice_kernel_into_program(program, "k", &new_kernel)?;
//! assert!(whole.contains("v + v") && whole.contains("int main()"));
//! # Ok::<(), kt_cuda::CudaError>(())
//! ```
//!
//! Reading one kernel's signature:
//!
//! ```
//! let source = kt_cuda::parse(
//!     "#define RESTRICT __restrict__\n\
//!      extern \"C\" __global__ void scale(float *RESTRICT x, float a, int n) {\n\
//!          int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
//!          if (i < n) x[i] *= a;\n\
//!      }\n",
//! )?;
//! let kernel = source.select_kernel(None)?;
//! assert!(kernel.extern_c && kernel.params[0].is_restrict && kernel.params[0].is_pointer());
//! assert_eq!(kernel.params[2].base_type, "int");
//!
//! let tuned = kt_cuda::prepend_defines("/* kernel */", &[("block_size_x", 128)])?;
//! assert_eq!(tuned, "#define block_size_x 128\n#line 1\n/* kernel */");
//! # Ok::<(), kt_cuda::CudaError>(())
//! ```

// tests may unwrap: a panic there is a failing test with its message
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod conditional_branches;
mod conflicts;
mod constant_memory;
mod constant_symbol;
mod diagnostics;
mod error;
mod globals;
mod grammar_parse;
mod host_expr;
mod host_launch;
mod host_syntax;
mod includes;
mod inspect;
mod instantiations;
mod kernel;
mod kernel_facts;
mod layout;
mod lexer;
mod location;
mod macro_kernels;
mod parse;
mod preprocess;
mod relations;
mod rewrite;
mod scope;
mod shared_helpers;
mod sidecar;
mod sidecar_compare;
mod sidecar_constants;
mod sidecar_text;
mod sidecar_values;
mod signature;
mod signature_diff;
mod size_rules;
mod source;
mod splice;
mod statement_macros;
mod unit;
mod unit_items;

pub use conflicts::{ConflictKind, NameConflict, find_name_conflicts, normalize_name};
pub use constant_symbol::ConstantSymbol;
pub use error::{CudaError, SyntaxProblem};
pub use host_launch::{GridFact, HostLaunch, SizeAssert, host_launches};
pub use includes::{IncludeRecord, SourceFile, decode};
pub use inspect::{INSPECT_SCHEMA_VERSION, InspectReport};
pub use instantiations::host_instantiations;
pub use kernel::{
    AssumptionKind, GridDivisor, Kernel, KernelFeatures, KernelParam, LaunchAssumption,
    LaunchBounds, MutableGlobal, Restriction, StructField, StructLayout, TemplateParam,
};
pub use location::{Location, Span};
pub use macro_kernels::MacroKernel;
pub use parse::{parse, parse_file, parse_named, parse_source_file, parse_tolerant};
pub use rewrite::{prepend_defines, remove_defines, rename_identifiers};
pub use sidecar::{
    LAUNCH_NAMES, OutputCompare, SIDECAR_DTYPES, ScalarValue, Sidecar, SidecarProblem, SizeExpr,
    expression_identifiers, is_sidecar_dtype,
};
pub use signature_diff::{
    SignatureChange, compare_params, compare_signatures, require_same_signature,
};
pub use size_rules::{SizeRule, apply_size_rules};
pub use source::{CudaSource, DeviceFunction, MacroDefinition};
pub use splice::{splice_kernel_into_file, splice_kernel_into_program};
pub use unit::{KernelUnit, UnitItem, extract_unit};
pub use unit_items::ItemKind;
