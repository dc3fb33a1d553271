//! Whole-file analysis: parse once with tree-sitter-cuda, find every `__global__` definition and the file-scope
//! things kernels refer to (`__device__` helpers, `#define`s, constants), and report syntax errors with the
//! user's line numbers.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};
use tree_sitter::{Node, Parser, Tree};

use crate::error::{CudaError, SyntaxProblem};
use crate::kernel::{Kernel, Location, Span};
use crate::kernel_facts;
use crate::preprocess::Prepared;
use crate::signature;

/// A `#define` found in the file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MacroDefinition {
    pub name: String,
    /// Parameters are not recorded; `function_like` says whether there are any.
    pub function_like: bool,
    /// The body, tokens joined by single spaces.
    pub body: String,
    pub location: Location,
}

/// A `__device__` function (not `__global__`) defined in the file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeviceFunction {
    pub name: String,
    pub span: Span,
}

/// Everything kt learned from one CUDA file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CudaSource {
    /// Every `__global__` definition in source order.
    pub kernels: Vec<Kernel>,
    pub device_functions: Vec<DeviceFunction>,
    pub defines: Vec<MacroDefinition>,
    /// File-scope `constexpr` / `const` variables with an initializer.
    pub constants: Vec<String>,
    /// ERROR/MISSING nodes; always empty from [`parse`], filled by [`parse_tolerant`].
    pub syntax_problems: Vec<SyntaxProblem>,
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
        match (name, self.kernels.as_slice()) {
            (_, []) => Err(CudaError::NoKernel {
                what: what.to_string(),
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

/// Analyses a whole CUDA source. Fails on syntax errors, on text that is not CUDA, and on a file without any
/// `__global__` definition.
pub fn parse(source: &str) -> Result<CudaSource, CudaError> {
    parse_named(source, "the source")
}

/// [`parse`], with `what` (usually the file name) in error messages.
pub fn parse_named(source: &str, what: &str) -> Result<CudaSource, CudaError> {
    let parsed = parse_tolerant_named(source, what)?;
    if !parsed.syntax_problems.is_empty() {
        return Err(CudaError::Syntax {
            what: what.to_string(),
            problems: parsed.syntax_problems,
        });
    }
    if parsed.kernels.is_empty() {
        return Err(CudaError::NoKernel {
            what: what.to_string(),
        });
    }
    Ok(parsed)
}

/// Reads and analyses a file; errors name the file.
pub fn parse_file(path: &Path) -> Result<CudaSource, CudaError> {
    let bytes = std::fs::read(path).map_err(|source| CudaError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let what = path.display().to_string();
    let text = decode(&bytes, &what)?;
    parse_named(&text, &what)
}

/// Text from raw bytes, or [`CudaError::NotCuda`] for binary data.
pub fn decode(bytes: &[u8], what: &str) -> Result<String, CudaError> {
    if bytes.contains(&0) {
        return Err(CudaError::NotCuda {
            what: what.to_string(),
            reason: "it contains NUL bytes (a binary file?)".into(),
        });
    }
    String::from_utf8(bytes.to_vec()).map_err(|e| CudaError::NotCuda {
        what: what.to_string(),
        reason: format!(
            "it is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ),
    })
}

/// Like [`parse`] but keeps going through syntax errors (recorded in `syntax_problems`) and returns an empty
/// kernel list rather than an error; text that is not CUDA at all is still an error.
pub fn parse_tolerant(source: &str) -> Result<CudaSource, CudaError> {
    parse_tolerant_named(source, "the source")
}

fn parse_tolerant_named(source: &str, what: &str) -> Result<CudaSource, CudaError> {
    if source.contains('\0') {
        return Err(CudaError::NotCuda {
            what: what.to_string(),
            reason: "it contains NUL bytes (a binary file?)".into(),
        });
    }
    let prepared = Prepared::new(source);
    let tree = syntax_tree(&prepared.text)?;
    let file = FileScope::collect(&prepared, tree.root_node());
    let problems = syntax_problems(&prepared, tree.root_node());
    let kernels: Vec<Kernel> = file
        .kernels
        .iter()
        .map(|found| kernel_facts::analyse(&prepared, &file, found))
        .collect();
    if kernels.is_empty()
        && let Some(reason) = not_cuda_reason(&prepared, tree.root_node(), &problems)
    {
        return Err(CudaError::NotCuda {
            what: what.to_string(),
            reason,
        });
    }
    tracing::debug!(
        kernels = kernels.len(),
        problems = problems.len(),
        "parsed CUDA source"
    );
    Ok(CudaSource {
        kernels,
        device_functions: file
            .device_functions
            .iter()
            .map(|(name, node)| DeviceFunction {
                name: name.clone(),
                span: span_of(&prepared, *node),
            })
            .collect(),
        defines: prepared
            .defines
            .iter()
            .map(|d| MacroDefinition {
                name: d.name.clone(),
                function_like: d.function_like,
                body: d.body.clone(),
                location: prepared.location_of_original(d.directive_start),
            })
            .collect(),
        constants: file.constants.iter().cloned().collect(),
        syntax_problems: problems,
    })
}

pub(crate) fn syntax_tree(text: &str) -> Result<Tree, CudaError> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_cuda::LANGUAGE.into())
        .map_err(|e| CudaError::Grammar(e.to_string()))?;
    parser
        .parse(text, None)
        .ok_or_else(|| CudaError::Grammar("the parser returned no tree".into()))
}

pub(crate) fn span_of(prepared: &Prepared, node: Node) -> Span {
    Span {
        start: prepared.location(node.start_byte()),
        end: prepared.location(node.end_byte()),
    }
}

/// A `__global__` definition found in the tree, before analysis.
pub(crate) struct FoundKernel<'t> {
    pub definition: Node<'t>,
    /// The template_declaration around it, if any.
    pub template: Option<Node<'t>>,
    pub extern_c: bool,
}

/// File-scope facts the kernels' analysis looks things up in.
pub(crate) struct FileScope<'t> {
    pub kernels: Vec<FoundKernel<'t>>,
    pub device_functions: Vec<(String, Node<'t>)>,
    pub device_by_name: HashMap<String, Node<'t>>,
    pub constants: BTreeSet<String>,
}

impl<'t> FileScope<'t> {
    fn collect(prepared: &Prepared, root: Node<'t>) -> Self {
        let mut scope = FileScope {
            kernels: Vec::new(),
            device_functions: Vec::new(),
            device_by_name: HashMap::new(),
            constants: BTreeSet::new(),
        };
        scope.visit(prepared, root, false, None);
        scope
    }

    fn visit(
        &mut self,
        prepared: &Prepared,
        node: Node<'t>,
        extern_c: bool,
        template: Option<Node<'t>>,
    ) {
        let text = &prepared.text;
        match node.kind() {
            "function_definition" => {
                let Some(name) = signature::function_name(node, text) else {
                    return;
                };
                if has_specifier(node, text, "__global__") {
                    self.kernels.push(FoundKernel {
                        definition: node,
                        template,
                        extern_c,
                    });
                } else if has_specifier(node, text, "__device__") {
                    self.device_by_name.entry(name.clone()).or_insert(node);
                    self.device_functions.push((name, node));
                }
            }
            "linkage_specification" => {
                let is_c = node
                    .child_by_field_name("value")
                    .is_some_and(|v| &text[v.byte_range()] == "\"C\"");
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    if child.kind() != "string_literal" {
                        self.visit(prepared, child, extern_c || is_c, None);
                    }
                }
            }
            "template_declaration" => {
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    self.visit(prepared, child, extern_c, Some(node));
                }
            }
            "declaration" => {
                // a file-scope constant: constexpr, or const with an initializer
                let is_constant = (0..node.child_count())
                    .filter_map(|i| node.child(i))
                    .any(|c| matches!(&text[c.byte_range()], "constexpr" | "const"));
                if is_constant {
                    let mut cursor = node.walk();
                    for d in node.children_by_field_name("declarator", &mut cursor) {
                        if d.kind() == "init_declarator"
                            && let Some(name) = signature::declared_name(d, text)
                        {
                            self.constants.insert(name);
                        }
                    }
                }
            }
            "translation_unit"
            | "declaration_list"
            | "namespace_definition"
            | "preproc_if"
            | "preproc_ifdef"
            | "preproc_else"
            | "preproc_elif"
            | "preproc_elifdef" => {
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    self.visit(prepared, child, extern_c, None);
                }
            }
            _ => {}
        }
    }
}

/// Whether a function definition carries a specifier such as `__global__` among its own children (the
/// grammar puts it there as an anonymous token, or as a type_qualifier / storage class in some positions).
pub(crate) fn has_specifier(function: Node, text: &str, specifier: &str) -> bool {
    let mut cursor = function.walk();
    function.children(&mut cursor).any(|c| {
        matches!(
            c.kind(),
            "type_qualifier" | "storage_class_specifier" | "attribute_specifier"
        ) && &text[c.byte_range()] == specifier
            || c.kind() == specifier
    })
}

fn syntax_problems(prepared: &Prepared, root: Node) -> Vec<SyntaxProblem> {
    let mut out = Vec::new();
    collect_problems(prepared, root, &mut out);
    out
}

fn collect_problems(prepared: &Prepared, node: Node, out: &mut Vec<SyntaxProblem>) {
    if !node.has_error() {
        return;
    }
    if node.is_error() || node.is_missing() {
        let location = prepared.location(node.start_byte());
        let message = if node.is_missing() {
            format!("missing `{}`", node.kind())
        } else {
            let snippet: String = prepared
                .original_text(node.start_byte(), node.end_byte())
                .chars()
                .take(40)
                .collect();
            format!(
                "unexpected `{}`",
                snippet.split_whitespace().collect::<Vec<_>>().join(" ")
            )
        };
        out.push(SyntaxProblem {
            location,
            message,
            line_text: prepared.line_text(location.line).to_string(),
        });
        return;
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        collect_problems(prepared, child, out);
    }
}

/// When a file has no kernel: is it CUDA at all? Binary data, Python and text that the C++ grammar mostly
/// rejects get a NotCuda error; a clean C/C++ file without kernels falls through to NoKernel.
fn not_cuda_reason(prepared: &Prepared, root: Node, problems: &[SyntaxProblem]) -> Option<String> {
    let text = &prepared.original;
    if text.trim().is_empty() {
        return Some("it is empty".into());
    }
    let code_lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let pythonic = code_lines
        .iter()
        .filter(|l| {
            (l.starts_with("def ")
                || l.starts_with("class ")
                || l.starts_with("if ")
                || l.starts_with("for "))
                && l.ends_with(':')
                || l.starts_with("import ")
                || (l.starts_with("from ") && l.contains(" import "))
        })
        .count();
    if pythonic > 0 && pythonic * 5 >= code_lines.len().min(25) {
        return Some("it looks like Python (def/import lines)".into());
    }
    if code_lines.first().is_some_and(|l| l.starts_with("#!")) {
        return Some("it starts with a #! line (a script?)".into());
    }
    let mut error_bytes = 0;
    error_extent(root, &mut error_bytes);
    if !problems.is_empty() && error_bytes * 3 > prepared.text.trim().len() {
        return Some(format!(
            "the C++/CUDA grammar rejects most of it ({} syntax errors, first at line {})",
            problems.len(),
            problems[0].location.line
        ));
    }
    None
}

fn error_extent(node: Node, total: &mut usize) {
    if node.is_error() {
        *total += node.end_byte() - node.start_byte();
        return;
    }
    if !node.has_error() {
        return;
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        error_extent(child, total);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{AssumptionKind, KernelParam};

    fn p(
        name: &str,
        type_text: &str,
        base: &str,
        depth: u8,
        is_const: bool,
        is_restrict: bool,
    ) -> KernelParam {
        KernelParam {
            name: name.into(),
            type_text: type_text.into(),
            base_type: base.into(),
            pointer_depth: depth,
            is_const,
            is_restrict,
            array_dims: vec![],
        }
    }

    #[test]
    fn parameters_keep_order_types_and_qualifiers() {
        let src = "__global__ void k(const float * __restrict__ a, float3 *b, unsigned int n, const int *const *p, uint8_t *bytes, struct Particle *parts) {}";
        let s = parse(src).unwrap();
        assert_eq!(
            s.kernels()[0].params,
            vec![
                p("a", "const float * __restrict__", "float", 1, true, true),
                p("b", "float3 *", "float3", 1, false, false),
                p("n", "unsigned int", "unsigned int", 0, false, false),
                p("p", "const int *const *", "int", 2, true, false),
                p("bytes", "uint8_t *", "uint8_t", 1, false, false),
                p(
                    "parts",
                    "struct Particle *",
                    "struct Particle",
                    1,
                    false,
                    false
                ),
            ]
        );
    }

    #[test]
    fn array_parameters_record_their_dimensions() {
        let s = parse("#define N 4\n__global__ void k(float a[16], int b[N][8], float c[]) {}")
            .unwrap();
        let dims: Vec<Vec<String>> = s.kernels()[0]
            .params
            .iter()
            .map(|p| p.array_dims.clone())
            .collect();
        assert_eq!(
            dims,
            vec![
                vec!["16".to_string()],
                vec!["N".into(), "8".into()],
                vec!["".into()]
            ]
        );
        assert!(s.kernels()[0].params.iter().all(KernelParam::is_pointer));
        assert_eq!(s.kernels()[0].macros_used, vec!["N"]);
    }

    #[test]
    fn helpers_and_other_kernels_never_leak_into_a_signature() {
        let src = r#"
__device__ float square(float v) { return v * v; }
__device__ float norm2(const float *x, int dims) { float s = 0; for (int d = 0; d < dims; d++) s += square(x[d]); return s; }
__device__ int unused(int q) { return q; }
__global__ void first(const float *pts, float *out, int n, int dims) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = norm2(pts + i * dims, dims);
}
__global__ void second(float *y, int m) { y[threadIdx.x] = square(y[threadIdx.x]) + m; }
"#;
        let s = parse(src).unwrap();
        assert_eq!(s.kernel_names(), vec!["first", "second"]);
        let names = |k: &Kernel| k.params.iter().map(|p| p.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&s.kernels()[0]), vec!["pts", "out", "n", "dims"]);
        assert_eq!(names(&s.kernels()[1]), vec!["y", "m"]);
        // transitive, in first-call order
        assert_eq!(s.kernels()[0].helpers, vec!["norm2", "square"]);
        assert_eq!(s.kernels()[1].helpers, vec!["square"]);
        assert_eq!(s.device_functions.len(), 3);
    }

    #[test]
    fn several_kernels_need_a_name_and_the_error_lists_them() {
        let s = parse("__global__ void a() {}\n__global__ void b() {}\n").unwrap();
        let err = s.select_kernel(None).unwrap_err();
        assert!(
            matches!(&err, CudaError::KernelNotChosen { available, .. } if available == &["a", "b"])
        );
        assert!(
            err.to_string().contains("a, b") && err.to_string().contains("--kernel"),
            "{err}"
        );
        assert_eq!(s.select_kernel(Some("b")).unwrap().name, "b");
        let err = s.select_kernel(Some("c")).unwrap_err();
        assert!(err.to_string().contains("no kernel named `c`"), "{err}");
    }

    #[test]
    fn one_kernel_is_chosen_without_a_name_but_a_wrong_name_is_an_error() {
        let s = parse("__global__ void only(int n) {}").unwrap();
        assert_eq!(s.select_kernel(None).unwrap().name, "only");
        assert!(s.select_kernel(Some("other")).is_err());
    }

    #[test]
    fn templates_report_their_parameters() {
        let src = "template <int BLOCK, typename T = float>\n__global__ void scale(T *x, int n) {\n  __shared__ T buf[BLOCK];\n  int i = blockIdx.x * BLOCK + threadIdx.x;\n  if (i < n) x[i] *= 2;\n}\n";
        let k = parse(src).unwrap().kernels()[0].clone();
        assert!(k.is_template());
        let tp: Vec<(&str, &str, Option<&str>)> = k
            .template_params
            .iter()
            .map(|t| (t.name.as_str(), t.kind.as_str(), t.default.as_deref()))
            .collect();
        assert_eq!(
            tp,
            vec![("BLOCK", "int", None), ("T", "typename", Some("float"))]
        );
        assert_eq!(k.params[0].base_type, "T");
        assert_eq!(k.span.start.line, 1);
        let kinds: Vec<AssumptionKind> = k.launch_assumptions.iter().map(|a| a.kind).collect();
        assert_eq!(
            kinds,
            vec![
                AssumptionKind::FixedSharedArray,
                AssumptionKind::LiteralBlockSize
            ]
        );
        assert_eq!(k.launch_assumptions[1].value, "BLOCK");
    }

    #[test]
    fn macros_that_expand_to_qualifiers_parse_cleanly() {
        let src = "#define RESTRICT __restrict__\n#define KERNEL extern \"C\" __global__\n#define DEVICE __device__ __forceinline__\n#define real float\nDEVICE real twice(real v) { return 2 * v; }\nKERNEL void k(const real *RESTRICT a, real *RESTRICT b, int n) { b[0] = twice(a[0]); }\n";
        let s = parse(src).unwrap();
        let k = s.select_kernel(None).unwrap();
        assert!(k.extern_c);
        assert_eq!(
            k.params[0],
            KernelParam {
                type_text: "const real *RESTRICT".into(),
                ..p("a", "", "float", 1, true, true)
            }
        );
        assert_eq!(k.params[1].name, "b");
        assert!(k.params[1].is_restrict);
        assert_eq!(k.helpers, vec!["twice"]);
        assert_eq!(k.macros_used, vec!["DEVICE", "KERNEL", "RESTRICT", "real"]);
        // positions are the user's, not the substituted text's
        assert_eq!(
            k.name_location,
            Location {
                line: 6,
                column: 13
            }
        );
    }

    #[test]
    fn a_macro_naming_a_type_gives_the_real_base_type() {
        let src = "#define VEC float4\n#define N 64\n__global__ void k(const VEC *in, VEC *out) { out[threadIdx.x] = in[N]; }\n";
        let k = parse(src).unwrap().kernels()[0].clone();
        assert_eq!(
            (
                k.params[0].base_type.as_str(),
                k.params[0].type_text.as_str()
            ),
            ("float4", "const VEC *")
        );
        assert_eq!(k.macros_used, vec!["N", "VEC"]);
    }

    #[test]
    fn global_in_comments_and_strings_is_not_a_kernel() {
        let src = "// __global__ void fake(int x) {}\n/* __global__ void fake2() {} */\nconst char *s = \"__global__ void fake3() {}\";\n__global__ void real_one(int n) {}\n";
        assert_eq!(parse(src).unwrap().kernel_names(), vec!["real_one"]);
    }

    #[test]
    fn extern_c_is_recorded_for_prefix_and_block_forms() {
        let src = "extern \"C\" __global__ void a(int n) {}\nextern \"C\" {\n__global__ void b(int n) {}\n}\n__global__ void c(int n) {}\n";
        let s = parse(src).unwrap();
        let linkage: Vec<bool> = s.kernels().iter().map(|k| k.extern_c).collect();
        assert_eq!(linkage, vec![true, true, false]);
        assert_eq!(s.kernels()[0].span.start, Location { line: 1, column: 1 });
    }

    #[test]
    fn odd_whitespace_and_a_signature_over_many_lines_are_read() {
        let src =
            "__global__\nvoid\n   k\n(\n  float\n  *\n  a ,\n\n  int\n  n\n)\n{\n\ta[0]=n;\n}\n";
        let k = parse(src).unwrap().kernels()[0].clone();
        assert_eq!(
            k.params,
            vec![
                p("a", "float *", "float", 1, false, false),
                p("n", "int", "int", 0, false, false)
            ]
        );
        assert_eq!(k.name_location, Location { line: 3, column: 4 });
        assert_eq!(
            k.span,
            Span {
                start: Location { line: 1, column: 1 },
                end: Location {
                    line: 14,
                    column: 2
                }
            }
        );
    }

    #[test]
    fn launch_bounds_features_and_constants_are_found() {
        let src = r#"
#define BLOCK 256
constexpr int WARP = 32;
__device__ float warp_sum(float v) { for (int o = WARP / 2; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o); return v; }
__global__ void __launch_bounds__(BLOCK) reduce(const float *in, float *out, unsigned int *count, int n) {
    extern __shared__ float dyn[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? in[i] : 0.0f;
    v = warp_sum(v);
    __syncthreads();
    if (threadIdx.x < 32) dyn[threadIdx.x] = v;
    if (threadIdx.x == 0) { atomicAdd(out, v); atomicInc(count, gridDim.x); }
}
"#;
        let k = parse(src).unwrap().kernels()[0].clone();
        assert_eq!(
            k.launch_bounds
                .as_ref()
                .map(|b| b.max_threads_per_block.as_str()),
            Some("BLOCK")
        );
        let f = &k.features;
        assert!(
            f.uses_block_dim
                && f.uses_grid_dim
                && f.uses_shared_memory
                && f.uses_dynamic_shared_memory
        );
        assert!(f.uses_syncthreads);
        assert_eq!(f.atomics, vec!["atomicAdd", "atomicInc"]);
        assert_eq!(f.warp_intrinsics, vec!["__shfl_down_sync"]);
        assert_eq!(k.helpers, vec!["warp_sum"]);
        assert_eq!(k.macros_used, vec!["BLOCK"]);
        assert_eq!(k.constexprs_used, vec!["WARP"]);
        let bounds: Vec<(&str, usize)> = k
            .launch_assumptions
            .iter()
            .map(|a| (a.value.as_str(), a.location.line))
            .collect();
        assert_eq!(bounds, vec![("32", 11)]);
        assert_eq!(
            k.launch_assumptions[0].kind,
            AssumptionKind::LiteralThreadBound
        );
    }

    #[test]
    fn a_grid_stride_loop_with_a_literal_block_size_is_an_assumption() {
        let src = "#define THREADS 128\n__global__ void k(float *a, int n) {\n  for (int i = blockIdx.x * THREADS + threadIdx.x; i < n; i += 128 * gridDim.x) a[i] = 0;\n}\n";
        let k = parse(src).unwrap().kernels()[0].clone();
        let found: Vec<(&str, &str)> = k
            .launch_assumptions
            .iter()
            .map(|a| (a.text.as_str(), a.value.as_str()))
            .collect();
        assert_eq!(
            found,
            vec![
                ("blockIdx.x * THREADS", "THREADS"),
                ("128 * gridDim.x", "128")
            ]
        );
        assert!(
            k.launch_assumptions
                .iter()
                .all(|a| a.kind == AssumptionKind::LiteralBlockSize && a.location.line == 3)
        );
    }

    #[test]
    fn a_kernel_reading_blockdim_has_no_launch_assumptions() {
        let k = parse("__global__ void k(float *a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] = 0; }")
            .unwrap()
            .kernels()[0]
            .clone();
        assert!(
            k.launch_assumptions.is_empty(),
            "{:?}",
            k.launch_assumptions
        );
        assert!(k.features.uses_block_dim && !k.features.uses_shared_memory);
    }

    #[test]
    fn broken_syntax_reports_every_location_with_its_line() {
        let src = "__global__ void k(float *a, int n) {\n  int i = blockIdx.x * blockDim.x + ;\n  a[i] = 1\n}\n";
        let err = parse(src).unwrap_err();
        let CudaError::Syntax { problems, .. } = &err else {
            panic!("expected a syntax error, got {err}")
        };
        assert!(
            problems.iter().any(|p| p.location.line == 2),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.location.line == 3 || p.message.starts_with("missing")),
            "{problems:?}"
        );
        assert!(problems.iter().all(|p| !p.line_text.is_empty()));
        assert!(err.to_string().contains("line 2, column"), "{err}");
        // the tolerant parse keeps the kernel and the problems
        let s = parse_tolerant(src).unwrap();
        assert_eq!(s.kernel_names(), vec!["k"]);
        assert!(!s.syntax_problems.is_empty());
    }

    #[test]
    fn a_file_without_kernels_is_a_clear_error() {
        let err = parse_named(
            "__device__ float f(float x) { return x; }\nint main() { return 0; }\n",
            "host.cu",
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "no __global__ function found in host.cu; kt needs a CUDA kernel"
        );
    }

    #[test]
    fn mangled_kernels_get_a_name_expression_and_extern_c_ones_do_not() {
        let s = parse("extern \"C\" __global__ void a() {}\n__global__ void b() {}\ntemplate <int N> __global__ void c() {}\n").unwrap();
        let k = s.kernels();
        assert_eq!(k[0].name_expression(&[]), None);
        assert_eq!(k[1].name_expression(&[]).as_deref(), Some("&b"));
        assert_eq!(k[2].name_expression(&["128"]).as_deref(), Some("&c<128>"));
    }

    #[test]
    fn an_empty_file_is_not_cuda() {
        let err = parse_named("  \n\n", "empty.cu").unwrap_err();
        assert_eq!(
            err.to_string(),
            "empty.cu does not look like CUDA source: it is empty; kt needs a .cu file with a __global__ kernel"
        );
    }

    #[test]
    fn python_and_binary_input_are_not_cuda() {
        let py = "import numpy as np\n\ndef main():\n    x = np.zeros(10)\n    print(x)\n\nif __name__ == '__main__':\n    main()\n";
        let err = parse_named(py, "gen.py").unwrap_err();
        assert!(matches!(err, CudaError::NotCuda { .. }), "{err}");
        assert!(err.to_string().contains("Python"), "{err}");
        let err = decode(&[0x7f, b'E', b'L', b'F', 0, 1, 2], "a.out").unwrap_err();
        assert!(matches!(err, CudaError::NotCuda { .. }), "{err}");
        let err = parse_named("\u{0}\u{1}", "x").unwrap_err();
        assert!(matches!(err, CudaError::NotCuda { .. }), "{err}");
    }

    #[test]
    fn kernels_inside_namespaces_and_preprocessor_blocks_are_found() {
        let src = "#ifdef USE_A\n__global__ void a(int n) {}\n#endif\nnamespace ns {\n__global__ void b(int n) {}\n}\n";
        assert_eq!(parse(src).unwrap().kernel_names(), vec!["a", "b"]);
    }

    #[test]
    fn builtin_vector_struct_and_long_types_are_read() {
        let src = "struct Params { int n; float s; };\n__global__ __launch_bounds__(128) void k(Params p, unsigned long long int *c, long long q, signed char sc, size_t n, __half *h, float4 *v, const float* const __restrict__ a, int) {}\ntemplate <typename T> __global__ void t(T *x) {}\ntemplate __global__ void t<float>(float *x);\n";
        let s = parse(src).unwrap();
        // the explicit instantiation is a declaration, not a second kernel
        assert_eq!(s.kernel_names(), vec!["k", "t"]);
        let k = &s.kernels()[0];
        let bases: Vec<(&str, &str, u8)> = k
            .params
            .iter()
            .map(|p| (p.name.as_str(), p.base_type.as_str(), p.pointer_depth))
            .collect();
        assert_eq!(
            bases,
            vec![
                ("p", "Params", 0),
                ("c", "unsigned long long int", 1),
                ("q", "long long", 0),
                ("sc", "signed char", 0),
                ("n", "size_t", 0),
                ("h", "__half", 1),
                ("v", "float4", 1),
                ("a", "float", 1),
                ("", "int", 0),
            ]
        );
        assert!(k.params[7].is_const && k.params[7].is_restrict);
        assert_eq!(k.params[7].type_text, "const float* const __restrict__");
        assert_eq!(
            k.launch_bounds
                .as_ref()
                .map(|b| b.max_threads_per_block.as_str()),
            Some("128")
        );
    }

    #[test]
    fn the_same_kernel_in_two_preprocessor_branches_is_one_choice() {
        let src = "#if FAST\n__global__ void k(float *a) { a[0] = 1; }\n#else\n__global__ void k(float *a) { a[0] = 2; }\n#endif\n";
        let s = parse(src).unwrap();
        assert_eq!(s.kernels().len(), 2);
        assert_eq!(s.kernel_names(), vec!["k"]);
        assert_eq!(s.select_kernel(None).unwrap().span.start.line, 2);
    }
}
