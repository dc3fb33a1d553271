//! Restrictions that come from the kernel's code (kt-cuda's launch facts, `Kernel::restrictions`). A
//! templated reduction `template <unsigned blockSize>` that indexes with `blockSize` assumes
//! `blockDim.x == blockSize`: tuning `blockSize` alone would launch most configurations with the wrong block
//! and call them wrong results. When a tuned template parameter is tied to the block size, the block size
//! follows it — `block_size_x` joins the space with the template parameter's values and
//! `block_size_x == blockSize` restricts it — and the kernel's other restrictions over the space's names
//! (`block_size_x % 32 == 0`) come along.

use crate::model::param_value::ParamValue;
use crate::model::space::{Config, TunableParam};

/// A restriction taken from the code, with why.
#[derive(Debug, Clone, PartialEq)]
pub struct DerivedRestriction {
    pub expr: String,
    pub reason: String,
}

/// What deriving changed: the restrictions to add and the parameters added to the space (a block size
/// that follows a template parameter).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Derived {
    pub restrictions: Vec<DerivedRestriction>,
    pub added_params: Vec<TunableParam>,
}

impl Derived {
    /// Lines for the user: each restriction with its reason, each parameter added.
    pub fn lines(&self) -> Vec<String> {
        let added = self.added_params.iter().map(|p| {
            let values: Vec<String> = p.values.iter().map(|v| v.to_string()).collect();
            format!(
                "{} added to the space with the values [{}]: it follows a tuned template parameter",
                p.name,
                values.join(", ")
            )
        });
        let restrictions = self
            .restrictions
            .iter()
            .map(|r| format!("restriction from the code: {} ({})", r.expr, r.reason));
        added.chain(restrictions).collect()
    }

    /// Makes `reference` (a default launch) meet the equalities: a template parameter tied to the block
    /// size takes the block's value when it is one of its values.
    pub fn align_reference(&self, reference: &mut Config) {
        for r in &self.restrictions {
            let Some((block, param, power)) = block_power(&r.expr) else {
                continue;
            };
            let value = reference.get(&block).and_then(|v| match power {
                1 => Some(v),
                // the side of the square, when the block is one
                _ => (1..=v).find(|s| s * s >= v).filter(|s| s * s == v),
            });
            if let Some(v) = value
                && let Some(slot) = reference.0.iter_mut().find(|(n, _)| *n == param)
            {
                slot.1 = v.into();
            }
        }
    }
}

/// A restriction the code imposes whatever else is tuned: over tuned block sizes and numbers only, an
/// equality (`block_size_y == 16`: the indexing assumes that block, as a literal or a macro's value) or a
/// bound (`block_size_x * block_size_y <= 256`: `__launch_bounds__`). Outside them the kernel computes
/// something else or does not launch, so those configurations are never tried.
fn fixed_launch_restriction(expr: &str, tuned: &dyn Fn(&str) -> bool) -> bool {
    let ids = kt_cuda::expression_identifiers(expr);
    !ids.is_empty()
        && ids
            .iter()
            .all(|id| id.starts_with("block_size_") && tuned(id))
        && !expr.contains('%')
        && (expr.contains("==") || expr.contains("<="))
}

/// `block_size_x == NAME` → (`block_size_x`, `NAME`); also `block_size_x == NAME * NAME` (a 1-D block
/// read as a square), see [`block_power`].
fn block_equality(expr: &str) -> Option<(String, String)> {
    block_power(expr).map(|(b, n, _)| (b, n))
}

/// `block_size_x == NAME` → (`block_size_x`, `NAME`, 1); `block_size_x == NAME * NAME` → (…, 2).
fn block_power(expr: &str) -> Option<(String, String, u32)> {
    let (l, r) = expr.split_once("==")?;
    let (l, r) = (l.trim(), r.trim());
    let is_block = |s: &str| s.starts_with("block_size_") && s.len() == "block_size_x".len();
    let is_name = |s: &str| {
        !s.is_empty()
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !s.starts_with(|c: char| c.is_ascii_digit())
    };
    let (name, power) = match r.split_once('*') {
        Some((a, b)) if a.trim() == b.trim() => (a.trim(), 2),
        Some(_) => return None,
        None => (r, 1),
    };
    (is_block(l) && is_name(name) && !is_block(name))
        .then(|| (l.to_string(), name.to_string(), power))
}

/// The block-size values that follow a template parameter's values: the values themselves, or their
/// squares for a block read as a square.
fn block_values(values: &[ParamValue], power: u32) -> Vec<ParamValue> {
    values
        .iter()
        .map(|v| match (power, v.as_int()) {
            (2, Some(n)) => ParamValue::Int(n.saturating_mul(n)),
            _ => v.clone(),
        })
        .collect()
}

/// As [`derive`], with the template parameters fixed to numbers (`--template`, or the file's own single
/// instantiation) put into the code's restrictions: `block_size_x == BLOCKSIZE * BLOCKSIZE` with
/// `BLOCKSIZE = 32` is `block_size_x == 32 * 32`, a rule over block sizes alone.
pub fn derive_with_fixed(
    kernel: &kt_cuda::Kernel,
    params: &[TunableParam],
    fixed: &std::collections::BTreeMap<String, String>,
) -> Derived {
    // what is not tuned takes its fixed value: a template argument given, else a macro's `#ifndef` default
    let numbers: Vec<(&String, i64)> = fixed
        .iter()
        .chain(
            kernel
                .macro_defaults
                .iter()
                .filter(|(n, _)| !fixed.contains_key(*n)),
        )
        .filter_map(|(n, v)| super::instances::as_number(v.trim()).map(|v| (n, v)))
        .filter(|(n, _)| !params.iter().any(|p| &p.name == *n))
        .collect();
    if numbers.is_empty() {
        return derive(kernel, params);
    }
    let mut k = kernel.clone();
    for r in &mut k.restrictions {
        let ids = kt_cuda::expression_identifiers(&r.expr);
        let used: Vec<&(&String, i64)> = numbers.iter().filter(|(n, _)| ids.contains(n)).collect();
        if used.is_empty() {
            continue;
        }
        let mut expr = r.expr.clone();
        for (name, value) in &used {
            expr = replace_word(&expr, name, &value.to_string());
        }
        let values: Vec<String> = used.iter().map(|(n, v)| format!("{n} = {v}")).collect();
        r.reason = format!("{}, with {}", r.reason, values.join(", "));
        r.expr = expr;
    }
    derive(&k, params)
}

/// `text` with whole-word `word` replaced by `by`.
fn replace_word(text: &str, word: &str, by: &str) -> String {
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    let mut out = String::new();
    let mut last = 0;
    for (at, _) in text.match_indices(word) {
        if ident(text[..at].chars().next_back()) || ident(text[at + word.len()..].chars().next()) {
            continue;
        }
        out.push_str(&text[last..at]);
        out.push_str(by);
        last = at + word.len();
    }
    out.push_str(&text[last..]);
    out
}

/// The restrictions of `kernel` to add to a space over `params`, and the block sizes to add so that they
/// hold; nothing when no tuned parameter is a template parameter the code ties to the block size.
pub fn derive(kernel: &kt_cuda::Kernel, params: &[TunableParam]) -> Derived {
    let tuned = |n: &str| params.iter().any(|p| p.name == n);
    // a macro's `#ifndef` default is a compile-time parameter just as a template parameter is
    let is_template = |n: &str| {
        kernel.template_params.iter().any(|t| t.name == n) || kernel.macro_defaults.contains_key(n)
    };
    let mut out = Derived::default();
    for r in &kernel.restrictions {
        if let Some((block, param, power)) = block_power(&r.expr)
            && tuned(&param)
            && is_template(&param)
            && !tuned(&block)
            && !out.added_params.iter().any(|p| p.name == block)
            && let Some(p) = params.iter().find(|p| p.name == param)
        {
            out.added_params
                .push(TunableParam::new(block, block_values(&p.values, power)));
        }
    }
    let ties_a_template = kernel
        .restrictions
        .iter()
        .any(|r| block_equality(&r.expr).is_some_and(|(_, p)| tuned(&p) && is_template(&p)));
    if !ties_a_template {
        out.restrictions = kernel
            .restrictions
            .iter()
            .filter(|r| fixed_launch_restriction(&r.expr, &tuned))
            .map(|r| DerivedRestriction {
                expr: r.expr.clone(),
                reason: r.reason.clone(),
            })
            .collect();
        return out;
    }
    let in_space = |n: &str| tuned(n) || out.added_params.iter().any(|p| p.name == n);
    let restrictions = kernel
        .restrictions
        .iter()
        .filter(|r| {
            kt_cuda::expression_identifiers(&r.expr)
                .iter()
                .all(|id| in_space(id))
        })
        .map(|r| DerivedRestriction {
            expr: r.expr.clone(),
            reason: r.reason.clone(),
        })
        .collect();
    out.restrictions = restrictions;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::space::{Restriction, SearchSpace};

    /// A 1-D block read as a BLOCKSIZE x BLOCKSIZE square (siboehm's sgemm style).
    const SQUARE_BLOCK: &str = "template <const unsigned BLOCKSIZE>\n__global__ void sgemm(int M, int N, const float *A, float *C) {\n  const int r = blockIdx.x * BLOCKSIZE + (threadIdx.x / BLOCKSIZE);\n  const int c = blockIdx.y * BLOCKSIZE + (threadIdx.x % BLOCKSIZE);\n  if (r < M && c < N) C[r * N + c] = A[r * N + c];\n}\n";

    /// The space of `params` with what `d` derived added, after its restrictions.
    fn space_of(params: &[TunableParam], d: &Derived, max_threads: Option<u64>) -> SearchSpace {
        let mut all = params.to_vec();
        all.extend(d.added_params.clone());
        let r: Vec<Restriction> = d
            .restrictions
            .iter()
            .map(|r| Restriction::Expr(r.expr.clone()))
            .collect();
        SearchSpace::build(&all, &r, &Default::default(), max_threads).unwrap()
    }

    #[test]
    fn an_ifndef_default_is_tuned_when_named_and_its_default_otherwise() {
        let src = "#ifndef BLOCK\n#define BLOCK 128\n#endif\n__global__ void k(float *a, int n) {\n  int i = blockIdx.x * BLOCK + threadIdx.x;\n  if (i < n) a[i] = 0;\n}\n";
        let k = kt_cuda::parse(src).unwrap().kernels()[0].clone();
        let blocks = [TunableParam::new("block_size_x", [64, 128, 256])];
        let d = derive_with_fixed(&k, &blocks, &Default::default());
        let exprs: Vec<&str> = d.restrictions.iter().map(|r| r.expr.as_str()).collect();
        assert_eq!(exprs, vec!["block_size_x == 128"], "not tuned: its default");
        let tuned = [TunableParam::new("BLOCK", [64, 256])];
        let d = derive_with_fixed(&k, &tuned, &Default::default());
        assert_eq!(
            d.added_params,
            vec![TunableParam::new("block_size_x", [64, 256])]
        );
        let exprs: Vec<&str> = d.restrictions.iter().map(|r| r.expr.as_str()).collect();
        assert_eq!(
            exprs,
            vec!["block_size_x == BLOCK"],
            "tuned: the block follows it"
        );
    }

    fn reduce3() -> kt_cuda::Kernel {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/corpus/programs/sample-style/reduction.cu");
        let parsed = kt_cuda::parse_file(&root).unwrap();
        parsed.select_kernel(Some("reduce3")).unwrap().clone()
    }

    #[test]
    fn the_block_size_follows_a_tuned_template_block_size() {
        let k = reduce3();
        let params = vec![TunableParam::new("blockSize", [128, 256])];
        let d = derive(&k, &params);
        assert_eq!(
            d.added_params,
            vec![TunableParam::new("block_size_x", [128, 256])]
        );
        let exprs: Vec<&str> = d.restrictions.iter().map(|r| r.expr.as_str()).collect();
        assert_eq!(
            exprs,
            ["block_size_x == blockSize", "block_size_x % 32 == 0"]
        );
        let space = space_of(&params, &d, None);
        let configs: Vec<String> = space.configs.iter().map(|c| c.to_string()).collect();
        assert_eq!(
            configs,
            [
                "blockSize=128 block_size_x=128",
                "blockSize=256 block_size_x=256"
            ]
        );
        assert!(
            d.lines()
                .iter()
                .any(|l| l.contains("block_size_x == blockSize"))
        );
    }

    #[test]
    fn a_block_read_as_a_square_follows_the_square_of_its_template_size() {
        let parsed = kt_cuda::parse(SQUARE_BLOCK).unwrap();
        let k = parsed.select_kernel(Some("sgemm")).unwrap();
        let params = vec![TunableParam::new("BLOCKSIZE", [8, 16, 32])];
        let d = derive(k, &params);
        assert_eq!(
            d.added_params,
            vec![TunableParam::new("block_size_x", [64, 256, 1024])]
        );
        let space = space_of(&params, &d, Some(1024));
        assert_eq!(space.configs.len(), 3, "{:?}", space.configs);
        let mut reference = Config::ints([("BLOCKSIZE", 8), ("block_size_x", 1024)]);
        d.align_reference(&mut reference);
        assert_eq!(reference.get("BLOCKSIZE"), Some(32));
    }

    #[test]
    fn a_fixed_template_value_turns_the_codes_rule_into_one_over_block_sizes() {
        let parsed = kt_cuda::parse(SQUARE_BLOCK).unwrap();
        let k = parsed.select_kernel(Some("sgemm")).unwrap();
        let params = vec![TunableParam::new("block_size_x", [256, 1024])];
        assert!(derive(k, &params).restrictions.is_empty());
        let fixed = std::collections::BTreeMap::from([("BLOCKSIZE".to_string(), "32".to_string())]);
        let d = derive_with_fixed(k, &params, &fixed);
        let exprs: Vec<&str> = d.restrictions.iter().map(|r| r.expr.as_str()).collect();
        assert_eq!(exprs, ["block_size_x == 32 * 32"]);
        assert!(
            d.restrictions[0].reason.ends_with("with BLOCKSIZE = 32"),
            "{:?}",
            d.restrictions
        );
        assert_eq!(replace_word("B * AB * B_", "B", "4"), "4 * AB * B_");
    }

    #[test]
    fn the_default_launch_takes_the_template_value_of_its_block() {
        let k = reduce3();
        let d = derive(&k, &[TunableParam::new("blockSize", [128, 256])]);
        let mut reference = Config::ints([("blockSize", 128), ("block_size_x", 256)]);
        d.align_reference(&mut reference);
        assert_eq!(reference.get("blockSize"), Some(256));
    }

    #[test]
    fn launch_bounds_and_fixed_blocks_restrict_the_block_sizes_whatever_is_tuned() {
        let src = "#define TILE_DIM 32\n#define BLOCK_ROWS 8\n__global__ void __launch_bounds__(256) t(float *o, const float *i, int w) {\n  __shared__ float tile[TILE_DIM][TILE_DIM + 1];\n  int x = blockIdx.x * TILE_DIM + threadIdx.x;\n  int y = blockIdx.y * TILE_DIM + threadIdx.y;\n  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) tile[threadIdx.y + j][threadIdx.x] = i[(y + j) * w + x];\n  __syncthreads();\n  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) o[(y + j) * w + x] = tile[threadIdx.x][threadIdx.y + j];\n}\n";
        let parsed = kt_cuda::parse(src).unwrap();
        let k = parsed.select_kernel(Some("t")).unwrap();
        let params = vec![
            TunableParam::new("block_size_x", [16, 32, 64]),
            TunableParam::new("block_size_y", [4, 8, 16]),
        ];
        let d = derive(k, &params);
        let exprs: Vec<&str> = d.restrictions.iter().map(|r| r.expr.as_str()).collect();
        assert!(exprs.iter().any(|e| e.contains("<= 256")), "{exprs:?}");
        assert!(d.added_params.is_empty());
        let r: Vec<Restriction> = exprs
            .iter()
            .map(|e| Restriction::Expr(e.to_string()))
            .collect();
        let space = SearchSpace::build(&params, &r, &Default::default(), None).unwrap();
        assert!(
            space
                .configs
                .iter()
                .all(|c| c.get("block_size_x").unwrap() * c.get("block_size_y").unwrap() <= 256),
            "{:?}",
            space.configs
        );
    }

    #[test]
    fn nothing_is_derived_when_no_tied_template_parameter_is_tuned() {
        let k = reduce3();
        let d = derive(&k, &[TunableParam::new("block_size_x", [64, 128])]);
        // a warp-multiple rule is offered, not imposed, when nothing ties a template parameter
        assert!(d.added_params.is_empty());
        assert!(
            d.restrictions.iter().all(|r| !r.expr.contains('%')),
            "{d:?}"
        );
        assert_eq!(block_equality("block_size_x == 256"), None);
        assert_eq!(
            block_equality("block_size_y == TILE"),
            Some(("block_size_y".into(), "TILE".into()))
        );
    }
}
