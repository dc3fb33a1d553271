//! Relations between launch parameters a kernel's code assumes, written as restrictions in the tuner's
//! expression syntax (`block_size_x == BLOCK`, `block_size_x % 32 == 0`): the block size equals a template
//! parameter or a fixed size the indexing uses, the block is whole warps, a fixed thread count. They are
//! offered, not enforced: the strategy (or the user) decides whether to add them to a search space.

use std::collections::HashMap;

use tree_sitter::Node;

use crate::kernel::{GridDivisor, LaunchBounds, Restriction};
use crate::preprocess::Prepared;
use crate::scope::{collapse, strip_parens};

/// What the relation finder needs to know besides the tree.
pub(crate) struct Context<'a> {
    /// Non-type template parameters (their names are kept in restrictions: they are tunable).
    pub template_names: &'a [String],
    pub macro_bodies: &'a HashMap<&'a str, &'a str>,
    pub launch_bounds: Option<&'a LaunchBounds>,
    /// The kernel calls warp-level intrinsics (shuffles, votes, warp reductions).
    pub warp_intrinsics: bool,
}

/// What the code says about its launch: relations between parameters, and grid dimensions a tile divides.
pub(crate) struct Relations {
    pub restrictions: Vec<Restriction>,
    pub grid_divisors: Vec<GridDivisor>,
}

/// Every relation found in `definition` (the kernel, template included), each once, in source order.
pub(crate) fn relations(prepared: &Prepared, definition: Node, ctx: &Context) -> Relations {
    let mut finder = Finder {
        prepared,
        ctx,
        out: Vec::new(),
        divisors: Vec::new(),
        dims: dims_used(&prepared.text[definition.byte_range()]),
        tile_loops: Vec::new(),
    };
    finder.find_tile_loops(definition);
    let at = prepared.location(definition.start_byte());
    for name in ctx.template_names {
        // `block_size_x` given a default by `#ifndef` is the block itself, not a name for its size
        if is_block_name(name) {
            continue;
        }
        if names_the_block_size(name) {
            let (expr, reason) = if splits_one_dimension_by(
                &prepared.text[definition.byte_range()],
                name,
            ) {
                (
                    format!("block_size_x == {name} * {name}"),
                    format!(
                        "`threadIdx.x / {name}` and `threadIdx.x % {name}` split a one-dimensional block into {name} rows of {name} threads"
                    ),
                )
            } else {
                (
                    format!("block_size_x == {name}"),
                    format!(
                        "compile-time parameter `{name}` is named for the block's thread count"
                    ),
                )
            };
            finder.push(expr, reason, at);
        }
    }
    finder.walk(definition);
    let tiles_of_32 = prepared.text[definition.byte_range()]
        .split_whitespace()
        .collect::<String>()
        .contains("tiled_partition<32>");
    if ctx.warp_intrinsics || tiles_of_32 {
        let expr = format!("{} % 32 == 0", finder.thread_count());
        finder.push(
            expr,
            "the kernel uses warp-level intrinsics or 32-thread tiles over full warps".into(),
            at,
        );
    }
    if let Some(bounds) = ctx.launch_bounds
        && let Some(n) = finder.value_of(&bounds.max_threads_per_block)
    {
        let expr = format!("{} <= {n}", finder.thread_count());
        finder.push(
            expr,
            format!(
                "__launch_bounds__({}) caps the block at {n} threads",
                bounds.max_threads_per_block
            ),
            at,
        );
    }
    Relations {
        restrictions: finder.out,
        grid_divisors: finder.divisors,
    }
}

/// `block_size_x`, `block_size_y`, `block_size_z`: the names kt and Kernel Tuner give the block itself.
fn is_block_name(name: &str) -> bool {
    matches!(name, "block_size_x" | "block_size_y" | "block_size_z")
}

/// Whether a compile-time parameter's name says it is the block's thread count (`BLOCK_SIZE`, `NUM_THREADS`,
/// `threads_per_block`), not a count per something else (`threads_per_row`, `items_per_thread`,
/// `blocks_per_sm`) or a tile's rows (`BLOCK_ROWS`).
fn names_the_block_size(name: &str) -> bool {
    let lower = name.to_lowercase();
    if let Some((what, per)) = lower.split_once("per_") {
        return what.contains("thread") && per.starts_with("block");
    }
    lower.contains("thread") || lower.contains("block") && !lower.contains("rows")
}

/// Whether the kernel reads a 1-D block as a square of `name` × `name` threads: it divides and takes the
/// remainder of `threadIdx.x` by `name` and never reads `threadIdx.y`.
fn splits_one_dimension_by(text: &str, name: &str) -> bool {
    let flat: String = text.split_whitespace().collect();
    let by = |op: char| {
        flat.match_indices(&format!("threadIdx.x{op}{name}"))
            .any(|(at, m)| {
                !flat[at + m.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            })
    };
    by('/') && by('%') && !flat.contains("threadIdx.y")
}

/// Which of x, y, z the kernel reads from `threadIdx`/`blockDim`.
fn dims_used(text: &str) -> Vec<char> {
    ['x', 'y', 'z']
        .into_iter()
        .filter(|c| {
            *c == 'x'
                || text.contains(&format!("threadIdx.{c}"))
                || text.contains(&format!("blockDim.{c}"))
        })
        .collect()
}

struct Finder<'a> {
    prepared: &'a Prepared,
    ctx: &'a Context<'a>,
    out: Vec<Restriction>,
    divisors: Vec<GridDivisor>,
    dims: Vec<char>,
    /// `for (int i = 0; i < TILE; i += ROWS)` loops: (TILE, ROWS) as written.
    tile_loops: Vec<(String, String)>,
}

impl Finder<'_> {
    fn text(&self, node: Node) -> String {
        collapse(&self.prepared.text[node.byte_range()])
    }

    fn push(&mut self, expr: String, reason: String, location: crate::location::Location) {
        // `block_size_y == block_size_y` (Kernel Tuner's own block name used as the size) always holds
        let always = expr
            .split_once("==")
            .is_some_and(|(l, r)| l.trim() == r.trim());
        if !always && !self.out.iter().any(|r| r.expr == expr) {
            self.out.push(Restriction {
                expr,
                reason,
                location,
            });
        }
    }

    /// `block_size_x * block_size_y`, over the dimensions the kernel uses.
    fn thread_count(&self) -> String {
        self.dims
            .iter()
            .map(|c| format!("block_size_{c}"))
            .collect::<Vec<_>>()
            .join(" * ")
    }

    /// A size as the tuner can read it: a template parameter by name, a literal, or a macro's numeric value.
    fn value_of(&self, written: &str) -> Option<String> {
        let written = written.trim();
        if self.ctx.template_names.iter().any(|t| t == written) {
            return Some(written.to_string());
        }
        let number = |s: &str| {
            s.trim()
                .trim_matches(|c| c == '(' || c == ')')
                .trim_end_matches(['u', 'U', 'l', 'L'])
                .parse::<u64>()
                .ok()
        };
        let factor = |f: &str| {
            let f = f.trim().trim_matches(|c| c == '(' || c == ')').trim();
            number(f).or_else(|| self.ctx.macro_bodies.get(f).and_then(|b| number(b)))
        };
        // `16*16`, `TILE * TILE` (a product of literals and macros, as `__launch_bounds__` often reads)
        written
            .split('*')
            .map(factor)
            .try_fold(1u64, |acc, f| f.map(|f| acc * f))
            .filter(|_| !written.is_empty())
            .map(|n| n.to_string())
    }

    /// The step of a loop over a tile of `size` rows (`for (i = 0; i < size; i += ROWS)`), when the
    /// kernel has one: each block then has ROWS threads in y, each covering size/ROWS rows.
    fn tile_step(&self, size: &str) -> Option<&str> {
        self.tile_loops
            .iter()
            .find(|(bound, step)| bound == size && step != size)
            .map(|(_, step)| step.as_str())
    }

    fn find_tile_loops(&mut self, node: Node) {
        if node.kind() == "for_statement"
            && let (Some(init), Some(cond), Some(update)) = (
                node.child_by_field_name("initializer"),
                node.child_by_field_name("condition"),
                node.child_by_field_name("update"),
            )
        {
            let init = self.text(init);
            let from_zero = init.trim_end_matches(';').trim_end().ends_with("= 0")
                || init.trim_end_matches(';').trim_end().ends_with("=0");
            let op = cond.child_by_field_name("operator").map(|o| self.text(o));
            let bound = cond.child_by_field_name("right").map(|r| self.text(r));
            let update = self.text(update);
            let step = update.split("+=").nth(1).map(|s| s.trim().to_string());
            if let (true, Some("<"), Some(bound), Some(step)) =
                (from_zero, op.as_deref(), bound, step)
                && self.value_of(&step).is_some()
                && self.value_of(&bound).is_some()
            {
                self.tile_loops.push((bound, step));
            }
        }
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            self.find_tile_loops(child);
        }
    }

    fn walk(&mut self, node: Node) {
        match node.kind() {
            "binary_expression" => self.binary(node),
            "for_statement" => self.strided_loop(node),
            _ => {}
        }
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            self.walk(child);
        }
    }

    /// `blockIdx.c * N + threadIdx.c` → `block_size_c == N`; `N == blockDim.c` → the same.
    fn binary(&mut self, node: Node) {
        let (Some(left), Some(op), Some(right)) = (
            node.child_by_field_name("left"),
            node.child_by_field_name("operator"),
            node.child_by_field_name("right"),
        ) else {
            return;
        };
        let location = self.prepared.location(node.start_byte());
        match self.text(op).as_str() {
            "+" => {
                for (product, thread) in [(left, right), (right, left)] {
                    let thread = self.text(thread);
                    let product = strip_parens(product);
                    if product.kind() != "binary_expression"
                        || product
                            .child_by_field_name("operator")
                            .is_none_or(|o| self.text(o) != "*")
                    {
                        continue;
                    }
                    let (Some(a), Some(b)) = (
                        product.child_by_field_name("left"),
                        product.child_by_field_name("right"),
                    ) else {
                        continue;
                    };
                    for (index, size) in [(a, b), (b, a)] {
                        let index = self.text(index);
                        let Some(c) = index.strip_prefix("blockIdx.") else {
                            continue;
                        };
                        let written = self.text(size);
                        if thread == format!("threadIdx.{c}")
                            && c == "y"
                            && let Some(step) = self.tile_step(&written).map(str::to_string)
                            && let Some(v) = self.value_of(&step)
                        {
                            self.push(
                                format!("block_size_y == {v}"),
                                format!(
                                    "`{}` with a loop stepping by {step} over the {written} rows of a tile: each block has {step} threads in y",
                                    self.text(node)
                                ),
                                location,
                            );
                            if let Some(tile) = self.value_of(&written)
                                && !self.divisors.iter().any(|d| d.dim == 1)
                            {
                                self.divisors.push(GridDivisor {
                                    dim: 1,
                                    value: tile,
                                    reason: format!(
                                        "each block covers the {written} rows of a tile with {step} threads"
                                    ),
                                    location,
                                });
                            }
                            continue;
                        }
                        if thread == format!("threadIdx.{c}")
                            && let Some(v) = self.value_of(&self.text(size))
                        {
                            self.push(
                                format!("block_size_{c} == {v}"),
                                format!(
                                    "`{}` indexes threads as if each block had {written} of them",
                                    self.text(node)
                                ),
                                location,
                            );
                        }
                    }
                }
            }
            "==" => {
                for (dim, size) in [(left, right), (right, left)] {
                    if let Some(c) = self.text(dim).strip_prefix("blockDim.").map(str::to_string)
                        && let Some(v) = self.value_of(&self.text(size))
                    {
                        self.push(
                            format!("block_size_{c} == {v}"),
                            format!("the code compares `{}`", self.text(node)),
                            location,
                        );
                    }
                }
            }
            "%" | "/" | "&" | ">>" => {
                let left_text = self.text(left);
                let right_text = self.text(right);
                let warp = match self.text(op).as_str() {
                    "%" | "/" => matches!(right_text.as_str(), "32" | "warpSize"),
                    "&" => right_text == "31",
                    _ => right_text == "5",
                };
                if warp && left_text.starts_with("threadIdx.") {
                    let expr = format!("{} % 32 == 0", self.thread_count());
                    self.push(
                        expr,
                        format!("`{}` splits the block into whole warps", self.text(node)),
                        location,
                    );
                }
            }
            _ => {}
        }
    }

    /// `for (int i = threadIdx.x; i < N; i += N)`: the loop assumes exactly N threads.
    fn strided_loop(&mut self, node: Node) {
        let (Some(init), Some(cond), Some(update)) = (
            node.child_by_field_name("initializer"),
            node.child_by_field_name("condition"),
            node.child_by_field_name("update"),
        ) else {
            return;
        };
        let init = self.text(init);
        let init = init.trim_end_matches(';').trim_end();
        let Some(c) = ['x', 'y', 'z'].into_iter().find(|c| {
            init.ends_with(&format!("= threadIdx.{c}"))
                || init.ends_with(&format!("=threadIdx.{c}"))
        }) else {
            return;
        };
        let bound = cond
            .child_by_field_name("right")
            .map(|r| self.text(r))
            .unwrap_or_default();
        let update = self.text(update);
        let step = update.split("+=").nth(1).map(str::trim).unwrap_or_default();
        if !step.is_empty()
            && step == bound
            && let Some(v) = self.value_of(step)
        {
            self.push(
                format!("block_size_{c} == {v}"),
                format!("the loop from threadIdx.{c} steps by {step}: it assumes {step} threads"),
                self.prepared.location(node.start_byte()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::parse;

    #[test]
    fn only_names_of_a_thread_count_per_block_name_the_block_size() {
        use super::names_the_block_size;
        for yes in [
            "BLOCK_SIZE",
            "BLOCKSIZE",
            "NUM_THREADS",
            "threads",
            "THREADS_PER_BLOCK",
            "block_dim",
        ] {
            assert!(names_the_block_size(yes), "{yes}");
        }
        for no in [
            "threads_per_row",
            "items_per_thread",
            "blocks_per_sm",
            "BLOCK_ROWS",
            "tile_size",
            "work_per_block",
        ] {
            assert!(!names_the_block_size(no), "{no}");
        }
    }

    fn exprs(src: &str) -> Vec<String> {
        parse(src).unwrap().kernels()[0]
            .restrictions
            .iter()
            .map(|r| r.expr.clone())
            .collect()
    }

    #[test]
    fn a_templated_block_size_is_a_tunable_and_a_restriction_not_a_fixed_size() {
        let src = "template <unsigned int blockSize>\n__global__ void reduce(const float *in, float *out, int n) {\n  __shared__ float s[blockSize];\n  unsigned int tid = threadIdx.x;\n  unsigned int i = blockIdx.x * blockSize + threadIdx.x;\n  s[tid] = i < n ? in[i] : 0;\n  __syncthreads();\n  if (blockSize >= 512) { if (tid < 256) s[tid] += s[tid + 256]; __syncthreads(); }\n  if (tid == 0) out[blockIdx.x] = s[0];\n}\n";
        let k = parse(src).unwrap().kernels()[0].clone();
        assert_eq!(k.tunable_template_params, vec!["blockSize"]);
        assert!(
            k.launch_assumptions.is_empty(),
            "{:?}",
            k.launch_assumptions
        );
        assert_eq!(exprs(src), vec!["block_size_x == blockSize"]);
    }

    #[test]
    fn a_one_dimensional_block_read_as_a_square_is_the_square_of_its_template_size() {
        let src = "template <const unsigned BLOCKSIZE>\n__global__ void sgemm(int M, int N, const float *A, float *C) {\n  const int r = blockIdx.x * BLOCKSIZE + (threadIdx.x / BLOCKSIZE);\n  const int c = blockIdx.y * BLOCKSIZE + (threadIdx.x % BLOCKSIZE);\n  if (r < M && c < N) C[r * N + c] = A[r * N + c];\n}\n";
        assert_eq!(exprs(src), vec!["block_size_x == BLOCKSIZE * BLOCKSIZE"]);
        // a 2-D block indexed by both thread indices is BLOCKSIZE in each dimension
        let two_d = src
            .replace("(threadIdx.x / BLOCKSIZE)", "threadIdx.x")
            .replace("(threadIdx.x % BLOCKSIZE)", "threadIdx.y");
        assert_eq!(
            exprs(&two_d),
            vec!["block_size_x == BLOCKSIZE", "block_size_y == BLOCKSIZE"]
        );
    }

    #[test]
    fn warps_launch_bounds_and_a_fixed_stride_loop_are_restrictions() {
        let src = "#define THREADS 192\n__global__ void __launch_bounds__(THREADS) k(float *a, int n) {\n  for (int i = threadIdx.x; i < 192; i += 192) a[i] = 0;\n  int lane = threadIdx.x % 32;\n  a[lane] = __shfl_down_sync(0xffffffff, a[lane], 1);\n}\n";
        assert_eq!(
            exprs(src),
            vec![
                "block_size_x == 192",
                "block_size_x % 32 == 0",
                "block_size_x <= 192"
            ]
        );
    }

    #[test]
    fn a_tile_of_rows_covered_by_a_loop_gives_the_blocks_rows_and_a_product_bounds_the_block() {
        let src = "#define TILE_DIM 32\n#define BLOCK_ROWS 8\n__global__ void __launch_bounds__(16*16) t(float *o, const float *in, int w) {\n  int x = blockIdx.x * TILE_DIM + threadIdx.x;\n  int y = blockIdx.y * TILE_DIM + threadIdx.y;\n  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) o[(y + j) * w + x] = in[(y + j) * w + x];\n}\n";
        let e = exprs(src);
        assert!(e.contains(&"block_size_x == 32".to_string()), "{e:?}");
        assert!(e.contains(&"block_size_y == 8".to_string()), "{e:?}");
        assert!(!e.contains(&"block_size_y == 32".to_string()), "{e:?}");
        assert!(
            e.contains(&"block_size_x * block_size_y <= 256".to_string()),
            "{e:?}"
        );
        // the grid in y is the rows divided by the tile (32), not by the block's 8 rows
        let k = parse(src).unwrap().kernels()[0].clone();
        assert_eq!(k.grid_divisors.len(), 1, "{:?}", k.grid_divisors);
        assert_eq!(
            (k.grid_divisors[0].dim, k.grid_divisors[0].value.as_str()),
            (1, "32")
        );
        assert!(
            k.grid_divisors[0].reason.contains("TILE_DIM rows"),
            "{:?}",
            k.grid_divisors
        );
    }

    #[test]
    fn a_block_that_covers_its_own_rows_divides_the_grid_by_the_block() {
        let src = "__global__ void k(float *o, int w) {\n  int y = blockIdx.y * blockDim.y + threadIdx.y;\n  o[y * w] = 0;\n}\n";
        assert!(parse(src).unwrap().kernels()[0].grid_divisors.is_empty());
    }

    #[test]
    fn a_macro_tile_without_thread_index_is_a_tile_not_a_block_size() {
        use crate::kernel::AssumptionKind;
        let src = "#define TILE 128\n__global__ void k(float *a, int n) {\n  __shared__ float t[TILE];\n  int base = blockIdx.x * TILE;\n  int col = blockIdx.y * 16 + threadIdx.y;\n  for (int j = threadIdx.x; j < TILE; j += blockDim.x) t[j] = a[base + j];\n  a[col] = t[0];\n}\n";
        let k = parse(src).unwrap().kernels()[0].clone();
        let kinds: Vec<(AssumptionKind, &str)> = k
            .launch_assumptions
            .iter()
            .map(|a| (a.kind, a.value.as_str()))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (AssumptionKind::FixedSharedArray, "TILE"),
                (AssumptionKind::TileSize, "TILE"),
                (AssumptionKind::LiteralBlockSize, "16")
            ]
        );
        assert_eq!(exprs(src), vec!["block_size_y == 16"]);
    }
}
