use super::*;
use crate::kernel::{AssumptionKind, KernelParam};

/// Parameters without the derived dtype, to compare with [`p`].
fn plain(params: &[KernelParam]) -> Vec<KernelParam> {
    params
        .iter()
        .map(|q| KernelParam {
            dtype: None,
            ..q.clone()
        })
        .collect()
}

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
        ..KernelParam::default()
    }
}

#[test]
fn parameters_keep_order_types_and_qualifiers() {
    let src = "__global__ void k(const float * __restrict__ a, float3 *b, unsigned int n, const int *const *p, uint8_t *bytes, struct Particle *parts) {}";
    let s = parse(src).unwrap();
    assert_eq!(
        plain(&s.kernels()[0].params),
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
    let s =
        parse("#define N 4\n__global__ void k(float a[16], int b[N][8], float c[]) {}").unwrap();
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
    // a template parameter is tuned, not a fixed size: offered as a tunable with the relation it implies
    assert!(
        k.launch_assumptions.is_empty(),
        "{:?}",
        k.launch_assumptions
    );
    assert_eq!(k.tunable_template_params, vec!["BLOCK"]);
    let restrictions: Vec<&str> = k.restrictions.iter().map(|r| r.expr.as_str()).collect();
    assert_eq!(restrictions, vec!["block_size_x == BLOCK"]);
}

#[test]
fn ifndef_defaults_are_parameters_like_kernel_tuners_not_fixed_sizes() {
    // Kernel Tuner's examples give each tunable parameter a default for compiles that do not set it
    let src = "#ifndef block_size_y\n#define block_size_y 16\n#endif\n#ifndef BLOCK\n#define BLOCK 256\n#endif\n\
               #define FIXED 8\n\
               __global__ void k(float *c, int n) {\n\
               __shared__ float s[BLOCK];\n\
               int x = blockIdx.x * BLOCK + threadIdx.x;\n\
               int y = blockIdx.y * block_size_y + threadIdx.y;\n\
               int z = blockIdx.z * FIXED + threadIdx.z;\n\
               s[threadIdx.x] = 1; c[(z * n + y) * n + x] = s[threadIdx.x];\n}\n";
    let s = parse(src).unwrap();
    let k = &s.kernels()[0];
    let defaults: Vec<(&str, &str)> = k
        .macro_defaults
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    assert_eq!(defaults, vec![("BLOCK", "256"), ("block_size_y", "16")]);
    let restrictions: Vec<&str> = k.restrictions.iter().map(|r| r.expr.as_str()).collect();
    // BLOCK is tied to the block as a template parameter would be; block_size_y is the block itself
    // (never `block_size_y == 16`); FIXED stays a fixed size
    assert!(
        restrictions.contains(&"block_size_x == BLOCK"),
        "{restrictions:?}"
    );
    assert!(
        restrictions.iter().all(|r| !r.contains("block_size_y")),
        "{restrictions:?}"
    );
    assert!(
        restrictions.contains(&"block_size_z == 8"),
        "{restrictions:?}"
    );
    let fixed: Vec<&str> = k
        .launch_assumptions
        .iter()
        .map(|a| a.value.as_str())
        .collect();
    assert_eq!(fixed, vec!["FIXED"], "{:?}", k.launch_assumptions);
}

#[test]
fn a_syntax_error_costs_only_its_declaration_and_names_file_and_line() {
    let src = "struct Broken { int a float b; };
__global__ void good(float *a) { a[0] = 1; }
__global__ void bad(float *a) { a[0] = ; }
";
    let s = parse_named(src, "mixed.cu").unwrap();
    assert_eq!(s.kernel_names(), vec!["good"]);
    assert_eq!(s.broken_kernels.len(), 1);
    assert!(
        s.syntax_problems.iter().any(|p| p.location.line == 1),
        "{:?}",
        s.syntax_problems
    );
    let err = s
        .select_kernel_in(Some("bad"), "mixed.cu")
        .unwrap_err()
        .to_string();
    assert!(err.contains("kernel `bad` of mixed.cu"), "{err}");
    assert!(err.contains("line 3, column"), "{err}");
}

#[test]
fn cuda_attributes_parse_and_hide_no_kernel() {
    let src = "struct __align__(8) Pair { float a; int b; };
struct alignas(16) Q { float v[4]; };
__device__ __forceinline__ float f(float x) { return x; }
__device__ __noinline__ float g(float x) { return x; }
__global__ void __launch_bounds__(256, 2) k1(const Pair * __restrict__ p, float *o) {
  __shared__ __align__(16) float buf[4];
  extern __shared__ __align__(16) float dyn[];
#pragma unroll
  for (int i = 0; i < 4; i++) buf[i] = f(p[i].a);
  o[threadIdx.x] = g(buf[0]) + dyn[0];
}
__global__ void k2(Pair p, float *o) { o[0] = p.a; }
";
    let s = parse(src).unwrap();
    assert!(s.syntax_problems.is_empty(), "{:?}", s.syntax_problems);
    assert_eq!(s.kernel_names(), vec!["k1", "k2"]);
    assert_eq!(s.kernels()[0].helpers, vec!["f", "g"]);
    assert_eq!(
        s.kernels()[1].params[0].layout.as_ref().map(|l| l.size),
        Some(8)
    );
}

#[test]
fn macros_that_expand_to_qualifiers_parse_cleanly() {
    let src = "#define RESTRICT __restrict__\n#define KERNEL extern \"C\" __global__\n#define DEVICE __device__ __forceinline__\n#define real float\nDEVICE real twice(real v) { return 2 * v; }\nKERNEL void k(const real *RESTRICT a, real *RESTRICT b, int n) { b[0] = twice(a[0]); }\n";
    let s = parse(src).unwrap();
    let k = s.select_kernel(None).unwrap();
    assert!(k.extern_c);
    assert_eq!(
        plain(&k.params)[0],
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
    let src = "__global__\nvoid\n   k\n(\n  float\n  *\n  a ,\n\n  int\n  n\n)\n{\n\ta[0]=n;\n}\n";
    let k = parse(src).unwrap().kernels()[0].clone();
    assert_eq!(
        plain(&k.params),
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
        f.uses_block_dim && f.uses_grid_dim && f.uses_shared_memory && f.uses_dynamic_shared_memory
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
    let err = crate::decode(&[0x7f, b'E', b'L', b'F', 0, 1, 2], "a.out").unwrap_err();
    assert!(matches!(err, CudaError::NotCuda { .. }), "{err}");
    let err = parse_named("\u{0}\u{1}", "x").unwrap_err();
    assert!(matches!(err, CudaError::NotCuda { .. }), "{err}");
}

#[test]
fn kernels_inside_namespaces_and_preprocessor_blocks_are_found() {
    let src = "#ifdef USE_A\n__global__ void a(int n) {}\n#endif\nnamespace ns {\n__global__ void b(int n) {}\n}\n";
    let s = parse(src).unwrap();
    assert_eq!(s.kernel_names(), vec!["a", "b"]);
    // NVRTC finds a kernel in a namespace by its qualified name
    assert_eq!(s.kernels()[1].qualified_name, "ns::b");
    assert_eq!(
        s.kernels()[1].name_expression(&[]).as_deref(),
        Some("&ns::b")
    );
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

/// A model's rewrite of game_of_life (the model-in-the-loop run) put an `else` under `#if` and split the
/// body between `#if interleave == 0` and `#else`: nvcc compiles it; the grammar alone made the kernel an
/// ERROR node and kt said the file was not CUDA.
const CONDITIONAL_STATEMENTS: &str = r#"
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
#define FAST 1
#else
#define FAST 0
#endif

__device__ __forceinline__ void fence() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

__global__ void step(const int* in, int* out, int width, int height)
{
    int x = blockIdx.x * block_size_x + threadIdx.x;
#if interleave == 0
    for (int y = 0; y < height; y++) {
        if (x >= width) {
            continue;
        }
#if FAST
        else {
            fence();
        }
#endif
        out[y * width + x] = in[y * width + x];
    }
#else
    for (int y = height - 1; y >= 0; y--) {
        if (x < width) out[y * width + x] = in[y * width + x];
    }
#endif
}
"#;

#[test]
fn conditionals_inside_statements_keep_the_kernel() {
    let s = parse(CONDITIONAL_STATEMENTS).unwrap();
    let k = s.select_kernel(None).unwrap();
    assert_eq!(k.name, "step");
    let names: Vec<&str> = k.params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["in", "out", "width", "height"]);
    // the unit kt compiles is the source as written: both branches, the helper and the macros
    let unit = crate::unit::extract_unit(
        &crate::includes::SourceFile::from_text("gol.cu", CONDITIONAL_STATEMENTS, &[]),
        "step",
    )
    .unwrap();
    for kept in [
        "else {",
        "#if interleave == 0",
        "y >= 0",
        "void fence()",
        "#define FAST 1",
    ] {
        assert!(
            unit.text.contains(kept),
            "{kept} missing from\n{}",
            unit.text
        );
    }
}

#[test]
fn a_kernel_defined_once_per_branch_keeps_both_versions_despite_an_error_elsewhere() {
    // the second parse would read `other` but lose the second `k`: the first parse is kept
    let src = "#if OLD\n__global__ void k(float *a) { a[0] = 1.0f; }\n#else\n__global__ void k(float *a, int n) { a[n] = 2.0f; }\n#endif\n__global__ void other(int *b, int n) {\n  if (n) { b[0] = 1; }\n#if FAST\n  else { b[1] = 2; }\n#endif\n}\n";
    let s = parse(src).unwrap();
    // `other`, whose body the first parse rejects, is set aside as broken; both versions of `k` stay
    let versions: Vec<(&str, usize)> = s
        .kernels
        .iter()
        .map(|k| (k.name.as_str(), k.params.len()))
        .collect();
    assert_eq!(versions, [("k", 1), ("k", 2)], "{versions:?}");
}
