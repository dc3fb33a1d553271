//! kt-cuda reads CUDA source the way kt's pipeline needs it: with tree-sitter-cuda it finds every `__global__`
//! kernel, its exact parameter list (types, pointer depth, `const`, `__restrict__`, arrays), its launch
//! bounds, template parameters, the `__device__` helpers, macros and constants it uses, the CUDA features it
//! touches and the literal sizes that tie it to one launch configuration. It also holds the source rewrites
//! every strategy relies on (prepending `#define`s like Kernel Tuner, finding and removing names that collide
//! with tunable parameters, comparing two versions' signatures) and the kernel suite's sidecar format.
//!
//! It deliberately does not compile, launch or time anything (that is kt-tuner), does not run the C
//! preprocessor (only macros that name qualifiers, types or another name are substituted so the grammar can
//! parse declarations; positions are mapped back to the user's text), and knows nothing of LLMs.
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

mod conflicts;
mod error;
mod inspect;
mod kernel;
mod kernel_facts;
mod lexer;
mod preprocess;
mod rewrite;
mod sidecar;
mod signature;
mod signature_diff;
mod source;

pub use conflicts::{ConflictKind, NameConflict, find_name_conflicts, normalize_name};
pub use error::{CudaError, SyntaxProblem};
pub use inspect::{INSPECT_SCHEMA_VERSION, InspectReport};
pub use kernel::{
    AssumptionKind, Kernel, KernelFeatures, KernelParam, LaunchAssumption, LaunchBounds, Location,
    Span, TemplateParam,
};
pub use rewrite::{prepend_defines, remove_defines, rename_identifiers};
pub use sidecar::{
    LAUNCH_NAMES, ScalarValue, Sidecar, SidecarProblem, SizeExpr, expression_identifiers,
};
pub use signature_diff::{SignatureChange, compare_params, compare_signatures};
pub use source::{
    CudaSource, DeviceFunction, MacroDefinition, decode, parse, parse_file, parse_named,
    parse_tolerant,
};
