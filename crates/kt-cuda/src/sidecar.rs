//! The sidecar `.toml` beside each kernel of the naive-kernels suite (format in KERNELS.md): the ground truth
//! Stage 1 should recover and the sizes and counts the benchmarks need. kt-cuda owns the type because the
//! check that matters most is against the parsed signature: every name the sidecar mentions must be a
//! parameter of its kernel, and every parameter must get a value.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::CudaError;
use crate::kernel::Kernel;
pub use crate::sidecar_compare::OutputCompare;
pub use crate::sidecar_values::{ScalarValue, SizeExpr};

/// One kernel's sidecar. A key it does not know is refused: a misspelt `rtoll` must not pass silently.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Sidecar {
    /// The `__global__` function's name.
    pub kernel: String,
    pub description: String,
    /// Problem size per dimension, x first: parameter names or expressions.
    pub problem_size: Vec<SizeExpr>,
    /// Pointer parameters the kernel writes.
    pub outputs: Vec<String>,
    /// Block size the naive kernel is launched with, x first.
    pub default_block: Vec<u32>,
    /// A value for every scalar parameter, for benchmarks.
    pub bench: BTreeMap<String, ScalarValue>,
    /// Smaller values for CI-speed checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<BTreeMap<String, ScalarValue>>,
    /// Distribution per pointer parameter (`randn`, `zeros`, `randint:0:256`, …).
    pub inputs: BTreeMap<String, String>,
    /// Distribution per `__constant__` symbol the kernel reads (`d_filter = "randn"`): filled in the loaded
    /// module before each launch. Its dtype is the declaration's unless `dtypes` names it; its element count
    /// is what `sizes` says, else the whole symbol as the compiled module holds it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub constants: BTreeMap<String, String>,
    /// numpy dtype per pointer parameter or constant symbol (`float32`, `int32`, `uint8`, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dtypes: BTreeMap<String, String>,
    /// Element count per pointer parameter or constant symbol, as an expression over scalar parameters.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sizes: BTreeMap<String, SizeExpr>,
    /// Floating-point operations of one launch, as an expression.
    pub flops: SizeExpr,
    /// Whether every one of `flops` is done whatever the data (no early exits or data-dependent loops, as
    /// in a matmul): kt then also holds times to the floor the device's FP32 rate sets. Off by default,
    /// because a kernel whose work depends on the data (mandelbrot's escape) may skip work honestly.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flops_exact: bool,
    /// Bytes moved by one launch, as an expression.
    pub bytes: SizeExpr,
    /// Dynamic shared memory per block in bytes, as an expression (may use `block_size_x`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_mem: Option<SizeExpr>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rtol: BTreeMap<String, f64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub atol: BTreeMap<String, f64>,
    /// Fraction of elements allowed to differ per output (chaotic kernels such as mandelbrot).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub max_mismatch_fraction: BTreeMap<String, f64>,
    /// How each output is compared (`compare = { cross_term = "total" }`): element by element (the default)
    /// or by its total, for outputs of partial sums whose layout depends on the launch.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::sidecar_compare::deserialize"
    )]
    pub compare: BTreeMap<String, OutputCompare>,
    /// Valid values of size scalars (`n = { multiple_of = 4, min = 16 }`): kt's odd-size, large and bench
    /// tests use the nearest valid value above the one they would use.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub size_rules: BTreeMap<String, crate::size_rules::SizeRule>,
    /// Prose on output sizes that depend on the launch (for people; kt does not read it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs_size_note: Option<String>,
}

/// Names in expressions that are functions, not parameters (also recognised by a following `(`).
const EXPRESSION_FUNCTIONS: &[&str] = &[
    "min", "max", "ceil", "floor", "sqrt", "log", "log2", "exp", "abs", "pow", "ceil_div",
    "div_ceil", "int", "float",
];

/// Launch-configuration names an expression may use besides the kernel's parameters (Kernel Tuner's
/// spelling), e.g. `sizes = { output = "ceil_div(n, block_size_x)" }`.
pub const LAUNCH_NAMES: &[&str] = &[
    "block_size_x",
    "block_size_y",
    "block_size_z",
    "grid_size_x",
    "grid_size_y",
    "grid_size_z",
];

/// The identifiers (`[A-Za-z_][A-Za-z0-9_]*`) of an expression in first-use order; function names (known
/// ones, or any name followed by `(`) and numeric suffixes are excluded.
pub fn expression_identifiers(expr: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut chars = expr.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            // a number, with any suffix or exponent (`1e-5`, `2.0f`) swallowed
            while chars
                .peek()
                .is_some_and(|&(_, d)| d.is_ascii_alphanumeric() || d == '.' || d == '_')
            {
                chars.next();
            }
        } else if c.is_ascii_alphabetic() || c == '_' {
            let mut end = start + c.len_utf8();
            while let Some(&(i, d)) = chars.peek() {
                if d.is_ascii_alphanumeric() || d == '_' {
                    end = i + d.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            let word = &expr[start..end];
            let called = expr[end..].trim_start().starts_with('(');
            if !called && !EXPRESSION_FUNCTIONS.contains(&word) && !out.iter().any(|w| w == word) {
                out.push(word.to_string());
            }
        }
    }
    out
}

/// One way a sidecar disagrees with its kernel.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum SidecarProblem {
    KernelNameMismatch {
        sidecar: String,
        kernel: String,
    },
    /// `field` names `name`, which is not a parameter of the kernel.
    UnknownParameter {
        field: String,
        name: String,
    },
    /// `field` expects a pointer (or a scalar) parameter and `name` is the other kind.
    WrongKind {
        field: String,
        name: String,
        expected: String,
    },
    /// A scalar parameter without a value in `bench`.
    MissingBenchValue {
        name: String,
    },
    /// A pointer parameter without an entry in `inputs`.
    MissingInput {
        name: String,
    },
    /// `test` exists but lacks a scalar parameter.
    MissingTestValue {
        name: String,
    },
    EmptyField {
        field: String,
    },
    /// A `__constant__` symbol the kernel reads without an entry in `constants` (`declaration` as written).
    MissingConstant {
        name: String,
        declaration: String,
    },
    /// `constants` names something that is not a `__constant__` symbol the kernel reads.
    UnknownConstant {
        name: String,
        /// The symbols the kernel does read.
        read: Vec<String>,
    },
    /// `field` (a per-output key) names `name`, a pointer parameter that is not one of `outputs`.
    NotAnOutput {
        field: String,
        name: String,
    },
    /// A `dtypes` entry that is not one of [`SIDECAR_DTYPES`] (optionally with `xN` lanes).
    UnknownDtype {
        name: String,
        dtype: String,
    },
}

/// The element types a sidecar's `dtypes` may name (numpy's spelling; `bfloat16` has no numpy type and is
/// carried as its 16 bits). A vector type is `float32x3` (a `float3`).
pub const SIDECAR_DTYPES: &[&str] = &[
    "float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
    "uint16", "uint32", "uint64", "bool",
];

/// Whether `dtype` is a known sidecar dtype, with or without a lane count (`float32x3`).
pub fn is_sidecar_dtype(dtype: &str) -> bool {
    let base = match dtype.rsplit_once('x') {
        Some((b, lanes)) if !lanes.is_empty() && lanes.chars().all(|c| c.is_ascii_digit()) => b,
        _ => dtype,
    };
    SIDECAR_DTYPES.contains(&base)
}

impl std::fmt::Display for SidecarProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SidecarProblem::KernelNameMismatch { sidecar, kernel } => {
                write!(
                    f,
                    "sidecar is for kernel `{sidecar}` but was checked against `{kernel}`"
                )
            }
            SidecarProblem::UnknownParameter { field, name } => {
                write!(
                    f,
                    "`{field}` mentions `{name}`, which is not a parameter of the kernel"
                )
            }
            SidecarProblem::WrongKind {
                field,
                name,
                expected,
            } => {
                write!(
                    f,
                    "`{field}` mentions `{name}`, but `{field}` needs a {expected} parameter"
                )
            }
            SidecarProblem::MissingBenchValue { name } => {
                write!(f, "scalar parameter `{name}` has no value in `bench`")
            }
            SidecarProblem::MissingInput { name } => {
                write!(f, "pointer parameter `{name}` has no entry in `inputs`")
            }
            SidecarProblem::MissingTestValue { name } => {
                write!(f, "scalar parameter `{name}` has no value in `test`")
            }
            SidecarProblem::MissingConstant { name, declaration } => write!(
                f,
                "the kernel reads constant memory `{declaration}` but the sidecar does not describe it: \
                 add `constants = {{ {name} = \"randn\" }}` (any distribution of `inputs`)"
            ),
            SidecarProblem::UnknownConstant { name, read } => write!(
                f,
                "`constants` mentions `{name}`, which is not a `__constant__` symbol the kernel reads (it reads: {})",
                if read.is_empty() {
                    "none".to_string()
                } else {
                    read.join(", ")
                }
            ),
            SidecarProblem::EmptyField { field } => write!(f, "`{field}` is empty"),
            SidecarProblem::NotAnOutput { field, name } => write!(
                f,
                "`{field}` mentions `{name}`, which is not one of `outputs`"
            ),
            SidecarProblem::UnknownDtype { name, dtype } => write!(
                f,
                "`dtypes` gives `{name}` the unknown dtype `{dtype}` (known: {}; `float32x3` for a float3)",
                SIDECAR_DTYPES.join(", ")
            ),
        }
    }
}

/// Deepest nesting of `[`/`{` a sidecar may have (a `[[table]]` header counts 2).
const MAX_SIDECAR_NESTING: usize = 32;

/// The 1-based line where `[`/`{` nesting first passes `limit`, outside strings and comments; None when it never
/// does. A rough count (it does not parse TOML), erring towards refusing only text no sidecar has.
fn nesting_past(text: &str, limit: usize) -> Option<usize> {
    let (mut depth, mut line) = (0usize, 1usize);
    let mut quote: Option<char> = None;
    let mut comment = false;
    let mut escaped = false;
    for c in text.chars() {
        if c == '\n' {
            line += 1;
            comment = false;
            if quote == Some('\'') || quote == Some('"') {
                quote = None;
            }
            continue;
        }
        if comment {
            continue;
        }
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' && q == '"' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                '"' | '\'' => quote = Some(c),
                '#' => comment = true,
                '[' | '{' => {
                    depth += 1;
                    if depth > limit {
                        return Some(line);
                    }
                }
                ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
    }
    None
}

impl Sidecar {
    pub fn load(path: &Path) -> Result<Sidecar, CudaError> {
        let text = std::fs::read_to_string(path).map_err(|source| CudaError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Sidecar::from_toml(&text, path)
    }

    /// Parses sidecar text; `path` is only used in error messages.
    pub fn from_toml(text: &str, path: &Path) -> Result<Sidecar, CudaError> {
        // The toml parser recurses into nested arrays and inline tables: thousands of `[` would overflow
        // the stack. No sidecar needs more than a few levels, so deeper text is refused before parsing.
        if let Some(line) = nesting_past(text, MAX_SIDECAR_NESTING) {
            return Err(CudaError::Sidecar {
                path: PathBuf::from(path),
                message: format!(
                    "line {line}: arrays or inline tables nested more than {MAX_SIDECAR_NESTING} deep; \
                     a sidecar needs a few levels at most"
                ),
            });
        }
        toml::from_str(text).map_err(|e| CudaError::Sidecar {
            path: PathBuf::from(path),
            message: crate::sidecar_text::explain(&e, text),
        })
    }

    /// The `.toml` beside a `.cu` file.
    pub fn path_for(cu_file: &Path) -> PathBuf {
        cu_file.with_extension("toml")
    }

    /// Every name the sidecar mentions must be a parameter of `kernel`, of the right kind (pointer for
    /// outputs/inputs/dtypes/sizes keys, scalar for bench/test keys and expression identifiers); every
    /// scalar parameter needs a `bench` value (and a `test` value when `test` exists), every pointer
    /// parameter an `inputs` entry, every `__constant__` symbol the kernel reads a `constants` entry.
    pub fn check_against(&self, kernel: &Kernel) -> Result<(), Vec<SidecarProblem>> {
        let mut problems = Vec::new();
        self.check_own_fields(kernel, &mut problems);
        self.check_names_are_parameters(kernel, &mut problems);
        self.check_every_parameter_has_a_value(kernel, &mut problems);
        self.check_constants(kernel, &mut problems);
        self.check_compare(kernel, &mut problems);
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }

    /// The kernel's name, the fields that may not be empty, and the dtypes.
    fn check_own_fields(&self, kernel: &Kernel, problems: &mut Vec<SidecarProblem>) {
        if self.kernel != kernel.name {
            problems.push(SidecarProblem::KernelNameMismatch {
                sidecar: self.kernel.clone(),
                kernel: kernel.name.clone(),
            });
        }
        for (field, empty) in [
            ("outputs", self.outputs.is_empty()),
            ("problem_size", self.problem_size.is_empty()),
        ] {
            if empty {
                problems.push(SidecarProblem::EmptyField {
                    field: field.into(),
                });
            }
        }
        for (name, dtype) in &self.dtypes {
            if !is_sidecar_dtype(dtype) {
                problems.push(SidecarProblem::UnknownDtype {
                    name: name.clone(),
                    dtype: dtype.clone(),
                });
            }
        }
    }

    /// Every name the sidecar mentions is a parameter of the kernel, of the right kind (a launch name may stand
    /// for a scalar).
    fn check_names_are_parameters(&self, kernel: &Kernel, problems: &mut Vec<SidecarProblem>) {
        // `dtypes` and `sizes` describe constant symbols too; a parameter of the same name shadows one
        let is_constant = |field: &str, name: &str| {
            matches!(field, "dtypes" | "sizes")
                && kernel.param(name).is_none()
                && self.constants.contains_key(name)
        };
        let mut expect = |field: &str, name: &str, pointer: bool| match kernel.param(name) {
            None if is_constant(field, name) => {}
            None if !pointer && LAUNCH_NAMES.contains(&name) => {}
            None => problems.push(SidecarProblem::UnknownParameter {
                field: field.into(),
                name: name.into(),
            }),
            Some(p) if p.is_pointer() != pointer => problems.push(SidecarProblem::WrongKind {
                field: field.into(),
                name: name.into(),
                expected: if pointer { "pointer" } else { "scalar" }.into(),
            }),
            Some(_) => {}
        };
        for name in &self.outputs {
            expect("outputs", name, true);
        }
        for name in self.inputs.keys() {
            expect("inputs", name, true);
        }
        for name in self.dtypes.keys() {
            expect("dtypes", name, true);
        }
        for name in self.bench.keys() {
            expect("bench", name, false);
        }
        for name in self.test.iter().flat_map(|t| t.keys()) {
            expect("test", name, false);
        }
        for (name, size) in &self.sizes {
            expect("sizes", name, true);
            for id in expression_identifiers(&size.text()) {
                expect("sizes", &id, false);
            }
        }
        for (field, exprs) in [
            ("problem_size", self.problem_size.iter().collect::<Vec<_>>()),
            ("flops", vec![&self.flops]),
            ("bytes", vec![&self.bytes]),
            ("shared_mem", self.shared_mem.iter().collect()),
        ] {
            for expr in exprs {
                for id in expression_identifiers(&expr.text()) {
                    expect(field, &id, false);
                }
            }
        }
        for name in self.size_rules.keys() {
            expect("size_rules", name, false);
        }
        for per_output in [&self.rtol, &self.atol, &self.max_mismatch_fraction] {
            for name in per_output.keys() {
                expect("rtol/atol/max_mismatch_fraction", name, true);
            }
        }
        for name in self.compare.keys() {
            expect("compare", name, true);
        }
    }

    /// Every pointer parameter has inputs, every scalar a bench value (and a test value where tests are given).
    fn check_every_parameter_has_a_value(
        &self,
        kernel: &Kernel,
        problems: &mut Vec<SidecarProblem>,
    ) {
        for p in &kernel.params {
            if p.is_pointer() {
                if !self.inputs.contains_key(&p.name) {
                    problems.push(SidecarProblem::MissingInput {
                        name: p.name.clone(),
                    });
                }
            } else {
                if !self.bench.contains_key(&p.name) {
                    problems.push(SidecarProblem::MissingBenchValue {
                        name: p.name.clone(),
                    });
                }
                if self.test.as_ref().is_some_and(|t| !t.contains_key(&p.name)) {
                    problems.push(SidecarProblem::MissingTestValue {
                        name: p.name.clone(),
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    const MATMUL: &str = "extern \"C\" __global__ void matrixMultiply(const float* A, const float* B, float* C, int A_width, int A_height, int B_width) {}";
    const SIDECAR: &str = r#"
kernel = "matrixMultiply"
description = "C = A·B"
problem_size = ["B_width", "A_height"]
outputs = ["C"]
default_block = [16, 16, 1]
bench = { A_width = 4096, A_height = 4096, B_width = 4096 }
inputs = { A = "randn", B = "randn", C = "zeros" }
flops = "2 * A_width * A_height * B_width"
bytes = "4 * (A_width*A_height + A_width*B_width + A_height*B_width)"
"#;

    #[test]
    fn identifiers_skip_numbers_functions_and_suffixes() {
        assert_eq!(
            expression_identifiers("4 * max(n, 1e-5) + 2.0f*ceil(width/16)"),
            vec!["n", "width"]
        );
        assert_eq!(
            expression_identifiers("A_width*A_height + A_width"),
            vec!["A_width", "A_height"]
        );
        assert_eq!(
            expression_identifiers("ceil_div(n, block_size_x) + my_fn (m)"),
            vec!["n", "block_size_x", "m"]
        );
    }

    #[test]
    fn a_consistent_sidecar_passes() {
        let sidecar = Sidecar::from_toml(SIDECAR, Path::new("matmul.toml")).unwrap();
        let source = parse(MATMUL).unwrap();
        assert_eq!(
            sidecar.check_against(source.select_kernel(None).unwrap()),
            Ok(())
        );
    }

    #[test]
    fn size_rules_name_scalars_of_the_kernel() {
        let text = format!(
            "{SIDECAR}[size_rules]\nA_width = {{ multiple_of = 4 }}\nA = {{ min = 2 }}\nwidth = {{ min = 2 }}\n"
        );
        let sidecar = Sidecar::from_toml(&text, Path::new("matmul.toml")).unwrap();
        assert_eq!(sidecar.size_rules["A_width"].multiple_of, Some(4));
        let problems: Vec<String> = sidecar
            .check_against(parse(MATMUL).unwrap().select_kernel(None).unwrap())
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].contains("`size_rules` mentions `A`, but `size_rules` needs a scalar"),
            "{problems:?}"
        );
        assert!(
            problems[1].contains("`size_rules` mentions `width`, which is not a parameter"),
            "{problems:?}"
        );
    }

    #[test]
    fn half_and_bfloat16_dtypes_are_known_and_a_typo_is_reported() {
        assert!(is_sidecar_dtype("float16") && is_sidecar_dtype("bfloat16"));
        assert!(is_sidecar_dtype("float32x3") && !is_sidecar_dtype("float17"));
        let text =
            format!("{SIDECAR}dtypes = {{ A = \"bfloat16\", B = \"float16\", C = \"floot32\" }}\n");
        let sidecar = Sidecar::from_toml(&text, Path::new("matmul.toml")).unwrap();
        let problems = sidecar
            .check_against(parse(MATMUL).unwrap().select_kernel(None).unwrap())
            .unwrap_err();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].to_string().contains("unknown dtype `floot32`"),
            "{}",
            problems[0]
        );
    }

    #[test]
    fn unknown_names_and_missing_values_are_each_reported() {
        let text = SIDECAR
            .replace(
                "problem_size = [\"B_width\", \"A_height\"]",
                "problem_size = [\"B_width\", \"height\"]",
            )
            .replace(", B_width = 4096 }", " }")
            .replace("C = \"zeros\"", "D = \"zeros\"");
        let sidecar = Sidecar::from_toml(&text, Path::new("matmul.toml")).unwrap();
        let source = parse(MATMUL).unwrap();
        let problems = sidecar.check_against(&source.kernels()[0]).unwrap_err();
        let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert!(
            text.contains(
                &"`inputs` mentions `D`, which is not a parameter of the kernel".to_string()
            ),
            "{text:?}"
        );
        assert!(
            text.contains(
                &"`problem_size` mentions `height`, which is not a parameter of the kernel"
                    .to_string()
            ),
            "{text:?}"
        );
        assert!(
            text.contains(&"pointer parameter `C` has no entry in `inputs`".to_string()),
            "{text:?}"
        );
        assert!(
            text.contains(&"scalar parameter `B_width` has no value in `bench`".to_string()),
            "{text:?}"
        );
    }

    #[test]
    fn a_scalar_listed_as_output_is_the_wrong_kind() {
        let sidecar = Sidecar::from_toml(
            &SIDECAR.replace("outputs = [\"C\"]", "outputs = [\"A_width\"]"),
            Path::new("m.toml"),
        )
        .unwrap();
        let problems = sidecar
            .check_against(&parse(MATMUL).unwrap().kernels()[0])
            .unwrap_err();
        assert!(problems.contains(&SidecarProblem::WrongKind {
            field: "outputs".into(),
            name: "A_width".into(),
            expected: "pointer".into()
        }));
    }

    #[test]
    fn a_malformed_sidecar_names_the_file() {
        let err = Sidecar::from_toml("kernel = 3", Path::new("bad.toml")).unwrap_err();
        assert!(err.to_string().starts_with("sidecar bad.toml:"), "{err}");
    }
    #[test]
    fn deeply_nested_sidecar_text_is_refused_not_a_stack_overflow() {
        let text = format!("a = {}", "[".repeat(20_000));
        let err = Sidecar::from_toml(&text, Path::new("deep.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("nested more than"), "{err}");
        assert_eq!(
            nesting_past("a = [[1, 2], [3]]\n[[kernel]]\nb = \"[[[[\"", 4),
            None
        );
    }
}
