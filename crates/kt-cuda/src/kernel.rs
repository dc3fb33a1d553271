//! What kt knows about one `__global__` function after parsing: its signature and the static facts the
//! strategies and the tuner need (launch assumptions, helpers, macros, intrinsics).

use serde::{Deserialize, Serialize};

use crate::location::{Location, Span};

/// One parameter of a kernel, in declaration order.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct KernelParam {
    pub name: String,
    /// The full type text as written (whitespace collapsed), e.g. `const float * __restrict__`.
    pub type_text: String,
    /// The element type without qualifiers or pointers, e.g. `float`, `float3`, `unsigned int`, `uint8_t`.
    /// Object-like macros that name qualifiers or builtin types are expanded here.
    pub base_type: String,
    /// Number of `*` (array parameters decay to pointers but are counted in `array_dims`, not here).
    pub pointer_depth: u8,
    /// `const` applies to the pointee or to the value anywhere in the declaration.
    pub is_const: bool,
    pub is_restrict: bool,
    /// Dimensions of `float a[16]`-style parameters, as written (`""` for `a[]`).
    pub array_dims: Vec<String>,
    /// `volatile` anywhere in the declaration.
    #[serde(default)]
    pub is_volatile: bool,
    /// The element type as a numpy-style name when kt knows it, typedefs followed: `float32`, `float16`
    /// (`half`, `__half`), `bfloat16` (`__nv_bfloat16`), `int32`, and `float32x3` for a `float3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    /// For a struct or vector type passed by value: its layout under the CUDA ABI, so a tuner can marshal it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<StructLayout>,
    /// For a by-value parameter whose layout kt could not compute: what is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout_problem: Option<String>,
}

impl KernelParam {
    /// A parameter the host passes as device memory (pointer or array).
    pub fn is_pointer(&self) -> bool {
        self.pointer_depth > 0 || !self.array_dims.is_empty()
    }
}

/// `__launch_bounds__(max_threads[, min_blocks])` as written (the arguments may be macros or expressions).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LaunchBounds {
    pub max_threads_per_block: String,
    pub min_blocks_per_sm: Option<String>,
}

/// One template parameter of a templated kernel, e.g. `int BLOCK` or `typename T`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TemplateParam {
    pub name: String,
    /// `typename`/`class` for type parameters, otherwise the value's type text (`int`, `unsigned`).
    pub kind: String,
    pub default: Option<String>,
}

/// Why a literal in the kernel looks like a hard-coded launch assumption.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum AssumptionKind {
    /// A literal multiplied with or dividing `blockIdx`/`threadIdx` (`blockIdx.x * 256`): the kernel assumes
    /// that block size instead of reading `blockDim`.
    LiteralBlockSize,
    /// A `__shared__` array whose size is a literal or macro: the block size it fits is fixed at compile time.
    FixedSharedArray,
    /// A comparison of `threadIdx` with a literal (`if (threadIdx.x < 128)`).
    LiteralThreadBound,
    /// A literal multiplied with `blockIdx` that is the size of the block's tile of work, not its thread
    /// count (`blockIdx.x * 128` without `+ threadIdx.x`): the block size is free, the tile is not.
    TileSize,
}

/// A relation between launch parameters the code assumes, in the tuner's restriction syntax
/// (`block_size_x == BLOCK`, `block_size_x % 32 == 0`), with why kt believes it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Restriction {
    pub expr: String,
    pub reason: String,
    pub location: Location,
}

/// A grid dimension whose blocks each cover a tile larger than their threads (`blockIdx.y * TILE_DIM +
/// threadIdx.y` with a loop stepping by BLOCK_ROWS over the tile's rows): the grid is the problem size divided
/// by the tile, not by the block (Kernel Tuner's `grid_div_y`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GridDivisor {
    /// 0, 1, 2 for x, y, z.
    pub dim: usize,
    /// The tile's size as a number or a tunable template parameter (`32`, `TILE`).
    pub value: String,
    pub reason: String,
    pub location: Location,
}

/// A spot where the kernel assumes a launch configuration instead of reading it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LaunchAssumption {
    pub kind: AssumptionKind,
    /// The expression or declaration as written.
    pub text: String,
    /// The literal or macro size involved (`256`, `TILE`).
    pub value: String,
    pub location: Location,
}

/// Which CUDA built-ins and features the kernel's body (and its helpers) use.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct KernelFeatures {
    pub uses_block_dim: bool,
    pub uses_grid_dim: bool,
    /// Static `__shared__` arrays or `extern __shared__` (dynamic) declarations.
    pub uses_shared_memory: bool,
    pub uses_dynamic_shared_memory: bool,
    pub uses_syncthreads: bool,
    /// Atomic functions called, sorted, e.g. `["atomicAdd"]`.
    pub atomics: Vec<String>,
    /// Warp-level intrinsics called, sorted, e.g. `["__shfl_down_sync"]`.
    pub warp_intrinsics: Vec<String>,
    /// Block-wide barriers written in the code: `__syncthreads*`, cooperative groups' `cg::sync(block)`,
    /// `block.sync()`, `this_thread_block().sync()`, `grid.sync()`.
    #[serde(default)]
    pub barriers: usize,
    /// Warp-level barriers: `__syncwarp`, a tile's `.sync()`.
    #[serde(default)]
    pub warp_barriers: usize,
    /// Uses cooperative groups (`cooperative_groups::`, `cg::`, `this_thread_block`).
    #[serde(default)]
    pub uses_cooperative_groups: bool,
}

/// A file-scope variable that lives in device memory across launches and that the kernel writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MutableGlobal {
    pub name: String,
    /// `__device__` or `__managed__`.
    pub space: String,
    /// The first write in the kernel or its helpers.
    pub written_at: Location,
}

/// One `__global__` function.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Kernel {
    pub name: String,
    pub params: Vec<KernelParam>,
    /// Declared inside `extern "C"` (block or prefix): the symbol is not mangled. When false, a tuner must
    /// resolve the C++-mangled name (NVRTC's name expressions) before looking the kernel up.
    pub extern_c: bool,
    pub launch_bounds: Option<LaunchBounds>,
    /// Template parameters; empty when the kernel is not a template.
    pub template_params: Vec<TemplateParam>,
    /// `__device__` functions called, transitively, in first-call order.
    pub helpers: Vec<String>,
    /// Object-like and function-like `#define`s the kernel (or its helpers) refers to, sorted.
    pub macros_used: Vec<String>,
    /// File-scope `constexpr`/`const` variables the kernel (or its helpers) refers to, sorted.
    pub constexprs_used: Vec<String>,
    pub launch_assumptions: Vec<LaunchAssumption>,
    pub features: KernelFeatures,
    /// From the first token of the definition (template or qualifiers included) to its closing brace.
    pub span: Span,
    /// Where the name is written.
    pub name_location: Location,
    /// The file the kernel is defined in (the main file or a followed header); absent when parsed from text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_file: Option<String>,
    /// The name with its namespaces (`blas::saxpy`); the same as `name` outside any namespace.
    #[serde(default)]
    pub qualified_name: String,
    /// Non-type template parameters (`template <int TILE>`): candidates for tunable parameters, instantiated
    /// per configuration.
    #[serde(default)]
    pub tunable_template_params: Vec<String>,
    /// Relations between launch parameters the code assumes, offered as tuner restrictions.
    #[serde(default)]
    pub restrictions: Vec<Restriction>,
    /// Grid dimensions divided by a tile rather than by the block (see [`GridDivisor`]); absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grid_divisors: Vec<GridDivisor>,
    /// File-scope `__device__`/`__managed__` variables the kernel (or a helper) writes: state that
    /// outlives a launch.
    #[serde(default)]
    pub mutable_globals: Vec<MutableGlobal>,
    /// File-scope `__constant__` variables the kernel (or a helper) reads: inputs no argument carries, which
    /// a tuner fills in the loaded module before launching.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constant_memory: Vec<crate::constant_symbol::ConstantSymbol>,
    /// The file's own launches of the kernel (`kernel<<<grid, block, shmem>>>` in host code), in source order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_launches: Vec<crate::host_launch::HostLaunch>,
    /// Macros the kernel uses that the file gives a default under their own `#ifndef` (Kernel Tuner's
    /// convention for a tunable parameter), name to default value: tuned when the space names them, their
    /// default otherwise.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub macro_defaults: std::collections::BTreeMap<String, String>,
}

impl Kernel {
    pub fn is_template(&self) -> bool {
        !self.template_params.is_empty()
    }

    /// `name(const float *a, int n)`: the signature as written, for messages.
    pub fn signature_text(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|p| {
                if p.name.is_empty() {
                    p.type_text.clone()
                } else if p.array_dims.is_empty() {
                    format!("{} {}", p.type_text, p.name).replace("* ", "*")
                } else {
                    p.type_text.clone()
                }
            })
            .collect();
        format!("{}({})", self.name, params.join(", "))
    }

    pub fn param(&self, name: &str) -> Option<&KernelParam> {
        self.params.iter().find(|p| p.name == name)
    }

    /// The expression NVRTC needs (`nvrtcAddNameExpression`, then `nvrtcGetLoweredName`) to find the mangled
    /// symbol of a kernel with C++ linkage: `&name`, or `&name<args>` for a template instantiated with
    /// `template_args`. `None` for `extern "C"` kernels, whose symbol is simply `name`.
    pub fn name_expression(&self, template_args: &[&str]) -> Option<String> {
        if self.extern_c {
            None
        } else {
            let name = if self.qualified_name.is_empty() {
                &self.name
            } else {
                &self.qualified_name
            };
            if template_args.is_empty() {
                Some(format!("&{name}"))
            } else {
                Some(format!("&{name}<{}>", template_args.join(", ")))
            }
        }
    }
}

/// One field of a by-value struct.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StructField {
    pub name: String,
    /// The field's type as written (a pointer field ends in `*`).
    pub type_text: String,
    /// Byte offset from the start of the struct.
    pub offset: u64,
    /// Bytes of the whole field (all elements of an array field).
    pub size: u64,
    pub align: u64,
    /// Elements: 1, or the product of an array field's dimensions.
    pub count: u64,
    /// numpy-style element type (`float32`, `int32`, `float32x3`); `None` for pointers and nested structs.
    pub dtype: Option<String>,
    /// A device pointer (8 bytes): the tuner passes a buffer's address.
    pub pointer: bool,
    /// A nested struct's own layout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nested: Option<Box<StructLayout>>,
}

/// A struct or vector type's memory layout.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StructLayout {
    pub type_name: String,
    pub size: u64,
    pub align: u64,
    pub fields: Vec<StructField>,
}
