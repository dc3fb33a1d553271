//! kt's checks on a rewritten kernel before it reaches the GPU: the naming pass (tunable parameter names
//! spelled the way the tuner expects, no near-duplicates of them in the code), and the static checks (same
//! signature, device code only, every parameter used, grid divisors that name parameters, restrictions over
//! parameter names only). Each refusal is a message the LLM can act on.

use std::collections::BTreeSet;

use kt_cuda::{ConflictKind, NameConflict, find_name_conflicts, normalize_name};

use crate::stage3::answers::TunableParameter;
use crate::stage3::tunable_code::BLOCK_SIZE_NAMES;

/// Largest search space kt accepts from one rewrite (before restrictions): beyond it tuning takes hours.
pub const MAX_SPACE_SIZE: u64 = 100_000;

/// Calls and includes that mean the rewrite left device code: host API, launches, libraries. They are looked
/// for in the kernel's unit (host code around it is dropped before: [`crate::kernel_unit`]), so what remains is
/// a real change outside device code: a library call, a launch inside device code.
const FORBIDDEN: &[(&str, &str)] = &[
    ("<<<", "a kernel launch (host code)"),
    ("cudaMalloc", "host memory management"),
    ("cudaMemcpy", "host memory transfers"),
    ("cudaFree", "host memory management"),
    ("cudaDeviceSynchronize", "host synchronisation"),
    ("cudaLaunch", "a kernel launch (host code)"),
    ("int main", "a host program"),
    ("cublas", "the cuBLAS library"),
    ("cudnn", "the cuDNN library"),
    ("cutlass", "the CUTLASS library"),
    ("thrust::", "the Thrust library"),
    ("cub::", "the CUB library"),
];

/// The code of a rewrite's `code` field: models sometimes wrap it in a fenced block inside the JSON.
pub fn code_of(answer_code: &str) -> String {
    if answer_code.contains("```")
        && let Ok(code) = kt_llm::extract_code(answer_code)
    {
        return code;
    }
    answer_code.to_string()
}

/// The result of the deterministic part of the naming pass.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedRewrite {
    pub code: String,
    pub parameters: Vec<TunableParameter>,
    pub divisors: [Vec<String>; 3],
    /// What kt changed, for the record.
    pub notes: Vec<String>,
    /// Collisions kt could not resolve alone (for the LLM's naming pass).
    pub unresolved: Vec<String>,
}

fn rename_in_list(list: &mut [String], from: &str, to: &str) {
    for n in list.iter_mut() {
        if n == from {
            *n = to.to_string();
        }
    }
}

/// Merges identifier `from` into `to` in `code` (both spellings become `to`). Token-based, so comments and
/// strings are left alone; kt-cuda's rename refuses merges, so this goes through a fresh name.
fn merge_identifier(code: &str, from: &str, to: &str) -> Result<String, String> {
    let tmp = format!("__kt_merge_{}", normalize_name(to));
    let step = kt_cuda::rename_identifiers(code, &[(from, tmp.as_str()), (to, tmp.as_str())])
        .map_err(|e| e.to_string())?;
    kt_cuda::rename_identifiers(&step, &[(tmp.as_str(), to)]).map_err(|e| e.to_string())
}

/// The deterministic naming pass:
/// - a parameter spelled like a launch-geometry name (`BLOCK_SIZE_X`, `blockSizeX`) takes the tuner's
///   spelling (`block_size_x`), in the code and in the grid divisors;
/// - a `#define` of a tunable parameter is removed (kt defines it for each configuration);
/// - a `#define` of a near-duplicate (`#define BLOCK_SIZE_X 16` beside parameter `block_size_x`) is removed and
///   its uses become the parameter, so the knob the code reads is the one being tuned;
/// - anything else that collides (two parameters that differ only in case or underscores, a variable or kernel
///   argument spelled like a parameter) is left for the LLM's naming pass.
pub fn normalize_names(
    code: &str,
    parameters: &[TunableParameter],
    divisors: &[Vec<String>; 3],
) -> NamedRewrite {
    let mut out = NamedRewrite {
        code: code.to_string(),
        parameters: parameters.to_vec(),
        divisors: divisors.clone(),
        notes: Vec::new(),
        unresolved: Vec::new(),
    };
    out.spell_launch_names_as_the_tuner();
    out.report_parameters_spelled_twice();
    let names: Vec<String> = out.parameters.iter().map(|p| p.name.clone()).collect();
    let conflicts = find_name_conflicts(&out.code, &names);
    out.remove_defines_of_parameters(&conflicts);
    out.merge_near_duplicate_defines(&conflicts);
    out.report_remaining_collisions(&names);
    out
}

/// The steps of [`normalize_names`], in its order.
impl NamedRewrite {
    /// Step 1: Launch-geometry names in the tuner's spelling (`BLOCK_SIZE_X` → `block_size_x`).
    fn spell_launch_names_as_the_tuner(&mut self) {
        for canonical in BLOCK_SIZE_NAMES {
            let key = normalize_name(canonical);
            let spelled: Vec<String> = self
                .parameters
                .iter()
                .filter(|p| p.name != canonical && normalize_name(&p.name) == key)
                .map(|p| p.name.clone())
                .collect();
            for from in spelled {
                self.rename_parameter(&from, canonical);
            }
        }
    }

    /// Renames parameter `from` to launch name `canonical` in the code, the space and the divisors.
    fn rename_parameter(&mut self, from: &str, canonical: &str) {
        if self.parameters.iter().any(|p| p.name == canonical) {
            self.unresolved.push(format!(
                "parameters `{from}` and `{canonical}` are the same knob spelled twice"
            ));
            return;
        }
        match merge_identifier(&self.code, from, canonical) {
            Ok(code) => {
                self.code = code;
                for p in self.parameters.iter_mut().filter(|p| p.name == from) {
                    p.name = canonical.to_string();
                }
                for d in self.divisors.iter_mut() {
                    rename_in_list(d, from, canonical);
                }
                self.notes.push(format!(
                    "renamed parameter `{from}` to `{canonical}` (the tuner's launch name)"
                ));
            }
            Err(e) => self
                .unresolved
                .push(format!("cannot rename `{from}` to `{canonical}`: {e}")),
        }
    }

    /// Step 2: Parameters that differ only in case or underscores.
    fn report_parameters_spelled_twice(&mut self) {
        let mut seen: Vec<(String, String)> = Vec::new();
        for p in &self.parameters {
            let key = normalize_name(&p.name);
            if let Some((_, other)) = seen.iter().find(|(k, _)| *k == key) {
                self.unresolved.push(format!(
                    "parameters `{other}` and `{}` differ only in case or underscores",
                    p.name
                ));
            } else {
                seen.push((key, p.name.clone()));
            }
        }
    }

    /// Step 3: A `#define` of a tunable parameter goes: kt defines it for each configuration.
    fn remove_defines_of_parameters(&mut self, conflicts: &[NameConflict]) {
        let exact_defines: BTreeSet<String> = conflicts
            .iter()
            .filter(|c| c.kind == ConflictKind::Exact && c.is_define)
            .map(|c| c.identifier.clone())
            .collect();
        if exact_defines.is_empty() {
            return;
        }
        let list: Vec<&str> = exact_defines.iter().map(String::as_str).collect();
        let (code, removed) = kt_cuda::remove_defines(&self.code, &list);
        self.code = code;
        if removed > 0 {
            self.notes.push(format!(
                "removed #define of tunable parameter(s) {} (kt defines them)",
                list.join(", ")
            ));
        }
    }

    /// Step 4: A `#define` of a near-duplicate goes and its uses become the parameter.
    fn merge_near_duplicate_defines(&mut self, conflicts: &[NameConflict]) {
        let similar_defines: Vec<(String, String)> = conflicts
            .iter()
            .filter(|c| c.kind == ConflictKind::SimilarSpelling && c.is_define)
            .map(|c| (c.identifier.clone(), c.parameter.clone()))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        for (ident, param) in similar_defines {
            let (code, _) = kt_cuda::remove_defines(&self.code, &[ident.as_str()]);
            match merge_identifier(&code, &ident, &param) {
                Ok(code) => {
                    self.code = code;
                    self.notes.push(format!(
                        "replaced the fixed `#define {ident}` by tunable parameter `{param}`"
                    ));
                }
                Err(e) => self
                    .unresolved
                    .push(format!("cannot merge `{ident}` into `{param}`: {e}")),
            }
        }
    }

    /// Step 5: What is left needs a decision about meaning: collisions in the code, and a kernel argument with a
    /// parameter's exact name (the `#define` would rewrite the signature).
    fn report_remaining_collisions(&mut self, names: &[String]) {
        let remaining: Vec<NameConflict> = find_name_conflicts(&self.code, names)
            .into_iter()
            .filter(|c| c.kind != ConflictKind::Exact || c.is_define)
            .collect();
        let mut reported = BTreeSet::new();
        for c in remaining {
            if reported.insert((c.identifier.clone(), c.parameter.clone())) {
                self.unresolved.push(c.to_string());
            }
        }
        for arg in kernel_argument_names(&self.code) {
            if names.contains(&arg) {
                self.unresolved.push(format!(
                    "kernel argument `{arg}` has the name of a tunable parameter"
                ));
            }
        }
    }
}

/// Argument names of every `__global__` function in `code` (empty when it does not parse).
fn kernel_argument_names(code: &str) -> Vec<String> {
    kt_cuda::parse_tolerant(code)
        .map(|s| {
            s.kernels
                .iter()
                .flat_map(|k| k.params.iter().map(|p| p.name.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// The static checks. Returns every problem found, worded for the LLM; empty means the rewrite may be tuned.
pub fn check_rewrite(
    original: &kt_cuda::Kernel,
    code: &str,
    parameters: &[TunableParameter],
    divisors: &[Vec<String>; 3],
) -> Vec<String> {
    let mut problems = Vec::new();
    if code.trim().is_empty() {
        problems.push(
            "the answer's `code` is empty: give the complete CUDA source of the new kernel".into(),
        );
        return problems;
    }
    check_signature(original, code, &mut problems);
    check_device_code_only(code, &mut problems);
    let names = check_parameters(code, parameters, divisors, &mut problems);
    check_divisors(divisors, &names, &mut problems);
    problems
}

/// Signature: same kernel name, same parameters in the same order with the same types.
fn check_signature(original: &kt_cuda::Kernel, code: &str, problems: &mut Vec<String>) {
    match kt_cuda::parse_tolerant(code) {
        Ok(source) => match source.kernels.iter().find(|k| k.name == original.name) {
            Some(new) => {
                let changes: Vec<String> = kt_cuda::compare_signatures(original, new)
                    .into_iter()
                    .filter(|c| c.is_breaking())
                    .map(|c| c.to_string())
                    .collect();
                if !changes.is_empty() {
                    problems.push(format!(
                        "the kernel's signature must stay exactly as it was, but: {}",
                        changes.join("; ")
                    ));
                }
            }
            None => problems.push(format!(
                "the code has no __global__ kernel named `{}` (found: {}); keep the kernel's name",
                original.name,
                if source.kernels.is_empty() {
                    "none".to_string()
                } else {
                    source.kernel_names().join(", ")
                }
            )),
        },
        Err(e) => problems.push(format!("the code cannot be read as CUDA: {e}")),
    }
}

/// No host code and no libraries; comments never count (a launch in a comment is no launch).
fn check_device_code_only(code: &str, problems: &mut Vec<String>) {
    let uncommented = crate::kernel_unit::strip_comments(code);
    for (needle, what) in FORBIDDEN {
        if uncommented.contains(needle) {
            problems.push(format!(
                "the code contains `{needle}` ({what}); only the kernel's device code may change: no host code, \
                 no libraries"
            ));
        }
    }
}

/// Each parameter: a C identifier, listed once, with distinct values, used in the code; and a space that is
/// not too large. Returns the parameters' names.
fn check_parameters<'p>(
    code: &str,
    parameters: &'p [TunableParameter],
    divisors: &[Vec<String>; 3],
    problems: &mut Vec<String>,
) -> BTreeSet<&'p str> {
    let mut names = BTreeSet::new();
    let mut space: u64 = 1;
    for p in parameters {
        if !is_identifier(&p.name) {
            problems.push(format!("parameter name `{}` is not a C identifier", p.name));
        }
        if !names.insert(p.name.as_str()) {
            problems.push(format!("parameter `{}` is listed twice", p.name));
        }
        if p.values.is_empty() {
            problems.push(format!("parameter `{}` has no values to try", p.name));
        }
        let distinct: BTreeSet<i64> = p.values.iter().copied().collect();
        if distinct.len() != p.values.len() {
            problems.push(format!("parameter `{}` lists a value twice", p.name));
        }
        space = space.saturating_mul(p.values.len().max(1) as u64);
        let in_divisors = divisors.iter().flatten().any(|d| d == &p.name);
        let is_launch = BLOCK_SIZE_NAMES.contains(&p.name.as_str());
        if !is_launch
            && !in_divisors
            && find_name_conflicts(code, &[p.name.as_str()])
                .iter()
                .all(|c| c.kind != ConflictKind::Exact)
        {
            problems.push(format!(
                "parameter `{}` is never used in the code; use it or drop it (every parameter multiplies tuning time)",
                p.name
            ));
        }
    }
    if space > MAX_SPACE_SIZE {
        problems.push(format!(
            "the parameters give {space} configurations (more than {MAX_SPACE_SIZE}); offer fewer values"
        ));
    }
    names
}

/// Each grid divisor: a tunable parameter, a launch name or a positive number.
fn check_divisors(divisors: &[Vec<String>; 3], names: &BTreeSet<&str>, problems: &mut Vec<String>) {
    for (d, list) in divisors.iter().enumerate() {
        for name in list {
            let known = names.contains(name.as_str())
                || BLOCK_SIZE_NAMES.contains(&name.as_str())
                || name.parse::<u64>().is_ok_and(|v| v > 0);
            if !known {
                problems.push(format!(
                    "grid divisor `{name}` of dimension {} is neither a tunable parameter nor a positive number",
                    ["x", "y", "z"][d]
                ));
            }
        }
    }
}

/// Checks restrictions name only tunable parameters (or the launch names kt always defines).
pub fn check_restrictions(restrictions: &[String], parameters: &[TunableParameter]) -> Vec<String> {
    let names: BTreeSet<&str> = parameters
        .iter()
        .map(|p| p.name.as_str())
        .chain(BLOCK_SIZE_NAMES.iter().copied())
        .collect();
    let mut problems = Vec::new();
    for r in restrictions {
        if r.trim().is_empty() {
            problems.push("a restriction is empty".into());
            continue;
        }
        let unknown: Vec<String> = kt_cuda::expression_identifiers(r)
            .into_iter()
            .filter(|i| {
                !names.contains(i.as_str())
                    && !matches!(i.as_str(), "and" | "or" | "not" | "True" | "False")
            })
            .collect();
        if !unknown.is_empty() {
            problems.push(format!(
                "restriction `{r}` uses {}, which {} not tunable parameter(s); use only: {}",
                unknown
                    .iter()
                    .map(|u| format!("`{u}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                if unknown.len() == 1 { "is" } else { "are" },
                parameters
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    if problems.is_empty() {
        problems.extend(check_space(restrictions, parameters));
    }
    problems
}

/// Threads per block no current NVIDIA GPU exceeds; configurations above it can never launch.
const MAX_THREADS_PER_BLOCK: u64 = 1024;

fn search_space(
    restrictions: &[String],
    parameters: &[TunableParameter],
) -> Result<kt_tuner::SearchSpace, kt_tuner::TunerError> {
    let params: Vec<kt_tuner::TunableParam> = parameters
        .iter()
        .map(|p| kt_tuner::TunableParam::new(p.name.clone(), p.values.clone()))
        .collect();
    let exprs: Vec<kt_tuner::Restriction> = restrictions
        .iter()
        .cloned()
        .map(kt_tuner::Restriction::Expr)
        .collect();
    kt_tuner::SearchSpace::build(
        &params,
        &exprs,
        &Default::default(),
        Some(MAX_THREADS_PER_BLOCK),
    )
}

/// Evaluates the restrictions over the whole space the way the tuner will: an expression the tuner cannot
/// evaluate, or restrictions that leave no configuration, are refused now rather than after compiling.
fn check_space(restrictions: &[String], parameters: &[TunableParameter]) -> Vec<String> {
    match search_space(restrictions, parameters) {
        Ok(space) if space.is_empty() => vec![format!(
            "the restrictions (with at most {MAX_THREADS_PER_BLOCK} threads per block) leave no configuration of \
             the {} there are; loosen them or offer other values",
            parameters.iter().map(|p| p.values.len()).product::<usize>()
        )],
        Ok(_) => Vec::new(),
        Err(e) => vec![format!("the restrictions cannot be evaluated: {e}")],
    }
}

/// How many configurations a kernel's restrictions leave, as the tuner enumerates them.
pub fn valid_configurations(
    restrictions: &[String],
    parameters: &[TunableParameter],
) -> Option<usize> {
    search_space(restrictions, parameters).ok().map(|s| s.len())
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const ORIGINAL: &str = "extern \"C\" __global__ void add(const float* a, float* b, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) b[i] += a[i];\n}\n";

    fn original() -> kt_cuda::Kernel {
        kt_cuda::parse(ORIGINAL).unwrap().kernels[0].clone()
    }

    fn p(name: &str, values: &[i64]) -> TunableParameter {
        TunableParameter {
            name: name.into(),
            values: values.to_vec(),
        }
    }

    fn divs() -> [Vec<String>; 3] {
        crate::stage3::tunable_code::default_grid_divisors()
    }

    #[test]
    fn near_duplicate_define_becomes_the_tunable_parameter() {
        let code = "#define BLOCK_SIZE_X 256\nextern \"C\" __global__ void add(const float* a, float* b, int n) {\n  __shared__ float s[BLOCK_SIZE_X];\n  int i = blockIdx.x * block_size_x + threadIdx.x;\n  if (i < n) b[i] += a[i];\n}\n";
        let named = normalize_names(code, &[p("block_size_x", &[64, 128])], &divs());
        assert!(named.unresolved.is_empty(), "{:?}", named.unresolved);
        assert!(!named.code.contains("BLOCK_SIZE_X"), "{}", named.code);
        assert!(named.code.contains("s[block_size_x]"), "{}", named.code);
        assert!(!named.code.contains("#define"), "{}", named.code);
    }

    #[test]
    fn launch_parameter_spelled_otherwise_takes_the_tuner_spelling() {
        let code = "extern \"C\" __global__ void add(const float* a, float* b, int n) {\n  int i = blockIdx.x * BLOCK_SIZE_X + threadIdx.x;\n  if (i < n) b[i] += a[i];\n}\n";
        let d = [vec!["BLOCK_SIZE_X".to_string()], vec![], vec![]];
        let named = normalize_names(code, &[p("BLOCK_SIZE_X", &[64, 128])], &d);
        assert_eq!(named.parameters[0].name, "block_size_x");
        assert_eq!(named.divisors[0], vec!["block_size_x".to_string()]);
        assert!(named.code.contains("blockIdx.x * block_size_x"));
    }

    #[test]
    fn two_parameters_for_one_knob_are_left_for_the_naming_pass() {
        let code = "extern \"C\" __global__ void add(const float* a, float* b, int n) { int t = tile_x * TILE_X; }";
        let named = normalize_names(code, &[p("tile_x", &[1]), p("TILE_X", &[2])], &divs());
        assert!(!named.unresolved.is_empty());
    }

    #[test]
    fn own_define_of_a_parameter_is_removed() {
        let code = "#define tile 4\nextern \"C\" __global__ void add(const float* a, float* b, int n) { int t = tile; }";
        let named = normalize_names(code, &[p("tile", &[2, 4])], &divs());
        assert!(named.unresolved.is_empty(), "{:?}", named.unresolved);
        assert!(!named.code.contains("#define tile"));
    }

    #[test]
    fn changed_signature_and_host_code_are_refused_with_what_changed() {
        let code = "extern \"C\" __global__ void add(const float* a, float* b, long n) { }\nvoid host() { add<<<1,1>>>(0,0,0); cudaMalloc(0, 0); }";
        let problems = check_rewrite(&original(), code, &[], &divs());
        let all = problems.join("\n");
        assert!(all.contains("signature") && all.contains("`n`"), "{all}");
        assert!(all.contains("<<<") && all.contains("cudaMalloc"), "{all}");
    }

    #[test]
    fn unused_parameter_and_unknown_divisor_are_refused() {
        let code = ORIGINAL.replace("blockDim.x", "block_size_x");
        let d = [
            vec!["block_size_x".to_string(), "work".to_string()],
            vec![],
            vec![],
        ];
        let problems = check_rewrite(
            &original(),
            &code,
            &[p("block_size_x", &[32]), p("unroll", &[1, 2])],
            &d,
        );
        let all = problems.join("\n");
        assert!(all.contains("`unroll` is never used"), "{all}");
        assert!(all.contains("grid divisor `work`"), "{all}");
        assert!(
            check_rewrite(&original(), &code, &[p("block_size_x", &[32, 64])], &divs()).is_empty()
        );
    }

    #[test]
    fn restrictions_may_name_only_parameters() {
        let params = [p("tile_x", &[1, 2]), p("block_size_x", &[32])];
        assert!(
            check_restrictions(
                &["block_size_x * tile_x <= 1024 and tile_x % 2 == 0".into()],
                &params
            )
            .is_empty()
        );
        let problems = check_restrictions(&["TILE <= n".into()], &params);
        assert!(
            problems[0].contains("`TILE`") && problems[0].contains("`n`"),
            "{problems:?}"
        );
        let problems = check_restrictions(&["tile_x > 2".into()], &params);
        assert!(
            problems[0].contains("leave no configuration"),
            "{problems:?}"
        );
        let problems = check_restrictions(&["tile_x <=".into()], &params);
        assert!(problems[0].contains("cannot be evaluated"), "{problems:?}");
    }

    #[test]
    fn fenced_code_inside_the_json_field_is_unwrapped() {
        assert_eq!(code_of("```cuda\nint x;\n```"), "int x;\n");
        assert_eq!(code_of("int y;"), "int y;");
    }
}
