use super::*;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn macros(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The first launch of `softmax(out, inp, N, C)` in `src`.
fn softmax_launch(src: &str) -> HostLaunch {
    let params = names(&["out", "inp", "N", "C"]);
    host_launches(src, "softmax", &params, &HashMap::new()).remove(0)
}

fn fact(problem: &str, divisors: &[&str]) -> Option<GridFact> {
    Some(GridFact {
        problem: problem.into(),
        divisors: names(divisors),
    })
}

#[test]
fn a_two_dimensional_dim3_launch_gives_block_grid_divisors_and_problem() {
    let src = r#"
#define BS 16
__global__ void add(float *c, const float *a, int width, int height) {}
int main() {
    int w = 1000, h = 500;
    // add<<<1, 1>>>(c, a, w, h);  a comment is not a launch
    dim3 block(BS, BS);
    dim3 grid((w + BS - 1) / BS, (h + BS - 1) / BS);
    add<<<grid, block>>>(d_c, d_a, w, h);
}
"#;
    let params = names(&["c", "a", "width", "height"]);
    let launches = host_launches(src, "add", &params, &macros(&[("BS", "16")]));
    assert_eq!(launches.len(), 1);
    let l = &launches[0];
    assert_eq!((l.location.line, l.location.column), (9, 5));
    assert_eq!(l.text, "add<<<grid, block>>>");
    assert_eq!(l.block_values, Some([16, 16, 1]));
    assert_eq!(l.grid_facts[0], fact("width", &["block_size_x"]));
    assert_eq!(l.grid_facts[1], fact("height", &["block_size_y"]));
    assert_eq!(l.grid_facts[2], None);
    assert_eq!(l.shared_mem, None);
}

#[test]
fn variables_computed_above_ceil_div_and_a_constant_factor_are_followed() {
    let src = r#"
template <typename T> __global__ void gelu(T *out, const T *inp, int N) {}
void gelu_forward(float *out, const float *inp, int N, int block_size) {
    const int grid_size = ceil_div(N, block_size * 8);
    gelu<float><<<grid_size, block_size>>>(out, inp, N);
}
void launch_all() { int block_size = 128; }
"#;
    // a definition inside another function (here a kernel's) is not the launching function's
    let src = src.replace(
        "template <typename T> __global__ void gelu(T *out, const T *inp, int N) {}",
        "template <typename T> __global__ void gelu(T *out, const T *inp, int N) { int block_size = blockDim.x; }",
    );
    let src = src.as_str();
    let l = &host_launches(src, "gelu", &names(&["out", "inp", "N"]), &HashMap::new())[0];
    assert_eq!(l.grid_facts[0], fact("N", &["block_size_x", "8"]));
    // block_size is a parameter of the host function: its value is not known here
    assert_eq!(l.block_values, None);
    assert_eq!(l.block[0], "block_size");
}

#[test]
fn one_block_per_row_and_shared_memory_scaled_by_the_block() {
    let src = "__global__ void softmax(float *out, const float *inp, int N, int C) {}\n\
               void f(float *o, float *i, int n, int c) { softmax<<<n, 256, 256 * sizeof(float)>>>(o, i, n, c); }\n";
    let l = &softmax_launch(src);
    assert_eq!(l.block_values, Some([256, 1, 1]));
    assert_eq!(l.grid_facts[0], fact("N", &[]));
    assert_eq!(l.shared_mem.as_deref(), Some("block_size_x * 4"));
    assert_eq!(l.shared_mem_written.as_deref(), Some("256 * sizeof(float)"));
}

#[test]
fn a_one_dimensional_block_of_a_square_and_two_macro_blocks_keep_their_shape() {
    let src = r#"
template <int BLOCKSIZE> __global__ void sgemm(int M, int N, float *C) {}
#define TILE_DIM 32
#define BLOCK_ROWS 8
__global__ void transpose(float *odata, const float *idata, int width, int height) {}
void run(int M, int N, float *C, float *o, float *i) {
    dim3 gridDim(CEIL_DIV(M, 32), CEIL_DIV(N, 32));
    dim3 blockDim(32 * 32);
    sgemm<32><<<gridDim, blockDim>>>(M, N, C);
    dim3 threads(TILE_DIM, BLOCK_ROWS), tgrid(1024 / TILE_DIM, 512 / TILE_DIM);
    transpose<<<dim3(M / TILE_DIM, N / TILE_DIM), threads, 0>>>(o, i, M, N);
}
"#;
    let m = macros(&[("TILE_DIM", "32"), ("BLOCK_ROWS", "8")]);
    let s = &host_launches(src, "sgemm", &names(&["M", "N", "C"]), &m)[0];
    assert_eq!(s.block_values, Some([1024, 1, 1]));
    assert_eq!(s.grid_facts[0], fact("M", &["32"]));
    assert_eq!(s.grid_facts[1], fact("N", &["32"]));
    let t = &host_launches(
        src,
        "transpose",
        &names(&["odata", "idata", "width", "height"]),
        &m,
    )[0];
    assert_eq!(t.block_values, Some([32, 8, 1]));
    // the tile (32) divides y, not the block's 8 rows
    assert_eq!(t.grid_facts[0], fact("width", &["block_size_x"]));
    assert_eq!(t.grid_facts[1], fact("height", &["32"]));
    assert_eq!(t.shared_mem_written, None);
}

#[test]
fn unreadable_parts_are_left_out_not_guessed() {
    let src = "__global__ void k(float *a, int n) {}\n\
               void f(float *a, int n, Config cfg) { k<<<cfg.blocks(n), cfg.threads, cfg.smem>>>(a, n); k<<<(n + 1) / 2, 2>>>(a, other); }\n\
               void g() { k_other<<<1, 1>>>(0); }\n";
    let ls = host_launches(src, "k", &names(&["a", "n"]), &HashMap::new());
    assert_eq!(ls.len(), 2);
    assert_eq!(ls[0].block_values, None);
    assert_eq!(ls[0].grid_facts[0], None);
    assert_eq!(ls[0].shared_mem, None);
    assert_eq!(ls[0].shared_mem_written.as_deref(), Some("cfg.smem"));
    // `other` is not a parameter name: no problem size over it
    assert_eq!(ls[1].grid_facts[0], None);
    assert_eq!(ls[1].block_values, Some([2, 1, 1]));
}

#[test]
fn asserts_of_the_launching_function_are_size_rules_of_the_parameters_passed() {
    let src = r#"
#define VEC 4
__global__ void k(float4 *a, int n) {}
void other(int n) { assert(n % 64 == 0); }
void run(float4 *a, int count) {
    assert(count % VEC == 0 && count >= 16);
    assert(unrelated % 8 == 0);
    k<<<count / VEC / 256, 256>>>(a, count);
}
"#;
    let l = &host_launches(src, "k", &names(&["a", "n"]), &macros(&[("VEC", "4")]))[0];
    assert_eq!(
        l.size_asserts,
        vec![SizeAssert {
            param: "n".into(),
            rule: crate::size_rules::SizeRule {
                multiple_of: Some(4),
                min: Some(16)
            },
            text: "count % VEC == 0 && count >= 16".into(),
        }]
    );
}

#[test]
fn a_shared_memory_variable_over_the_blocks_own_name_becomes_a_rule() {
    let src = r#"
__global__ void softmax(float *out, const float *inp, int N, int C) {}
void softmax_forward(float *out, const float *inp, int N, int C, int block_size) {
    int grid_size = N;
    size_t shared_mem_size = 2 * block_size / 32 * sizeof(float);
    softmax<<<grid_size, block_size, shared_mem_size>>>(out, inp, N, C);
}
"#;
    let l = &softmax_launch(src);
    assert_eq!(l.shared_mem.as_deref(), Some("2 * block_size_x / 32 * 4"));
    assert_eq!(l.shared_mem_written.as_deref(), Some("shared_mem_size"));
    assert_eq!(l.grid_facts[0], fact("N", &[]));
}
