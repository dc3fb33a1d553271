//! The intake functions on a corpus of answers written the way real models answer (tests/corpus/*.md): each
//! file is read with the same types the pipeline asks for, and what had to be repaired is checked.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test, with its message

use kt_llm::{CodeBlock, IntakeError, OutputSchema, code_blocks, json_block, parse_lenient};
use serde::Deserialize;

/// The shape of the pipeline's rewrite answer.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct KernelRewrite {
    code: String,
    #[serde(default)]
    parameters: Vec<TunableParameter>,
    #[serde(default)]
    explanation: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct TunableParameter {
    name: String,
    values: Vec<i64>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Plan {
    steps: Vec<String>,
}

fn answer(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn rewrite(name: &str) -> (KernelRewrite, Vec<String>) {
    let schema = OutputSchema::of::<KernelRewrite>().schema;
    let got = parse_lenient::<KernelRewrite>(&answer(name), Some(&schema))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    (got.value, got.repairs)
}

fn params(r: &KernelRewrite) -> Vec<(&str, Vec<i64>)> {
    r.parameters
        .iter()
        .map(|p| (p.name.as_str(), p.values.clone()))
        .collect()
}

#[test]
fn prose_around_a_json_fence_with_brackets_in_the_prose() {
    let (r, repairs) = rewrite("prose_around_json_fence.md");
    assert!(r.code.contains("for (int t = 0; t < TILE; ++t)"));
    assert_eq!(params(&r), vec![("TILE", vec![1, 2, 4, 8])]);
    assert!(r.explanation.starts_with("Each thread"));
    assert!(repairs.is_empty(), "{repairs:?}");
}

#[test]
fn the_json_answer_wins_over_the_original_kernel_fenced_first() {
    let (r, _) = rewrite("original_kernel_first.md");
    assert!(r.code.contains("__restrict__"), "{}", r.code);
    assert_eq!(params(&r)[0].0, "block_size_x");
}

#[test]
fn trailing_commas_are_ignored_and_recorded() {
    let (r, repairs) = rewrite("trailing_commas.md");
    assert_eq!(
        params(&r),
        vec![("UNROLL", vec![1, 2, 4]), ("block_size_x", vec![128, 256])]
    );
    assert_eq!(repairs, vec!["ignored trailing commas (4)"]);
}

#[test]
fn raw_newlines_and_tabs_in_the_code_string_are_kept_as_code() {
    let (r, repairs) = rewrite("raw_newlines_in_code.md");
    assert!(
        r.code.contains("{\n\tint i = blockIdx.x")
            && r.code.contains("// one multiply per element\n"),
        "{}",
        r.code
    );
    assert_eq!(repairs.len(), 1);
    assert!(
        repairs[0].starts_with("escaped raw control characters"),
        "{repairs:?}"
    );
}

#[test]
fn parameter_values_given_as_strings_become_numbers() {
    let (r, repairs) = rewrite("values_as_strings.md");
    assert_eq!(
        params(&r),
        vec![
            ("STRIDE_MUL", vec![1, 2, 4]),
            ("block_size_x", vec![128, 256, 512])
        ]
    );
    assert_eq!(repairs.len(), 5, "{repairs:?}");
    assert!(
        repairs[0].contains("$.parameters[0].values[0]"),
        "{repairs:?}"
    );
}

#[test]
fn fences_inside_the_code_value_do_not_cut_the_json() {
    let (r, repairs) = rewrite("fences_inside_code.md");
    assert!(
        r.code.contains("// ```cuda\n// saxpy<<<grid, block>>>"),
        "{}",
        r.code
    );
    assert!(r.code.trim_end().ends_with('}'));
    assert_eq!(params(&r), vec![("block_size_x", vec![256, 512])]);
    assert!(repairs.is_empty());
}

#[test]
fn a_think_block_with_json_like_text_is_dropped_first() {
    let (r, _) = rewrite("think_block.md");
    assert!(r.code.contains("__shared__ float tile"));
    let block = json_block(&answer("think_block.md")).unwrap();
    assert!(block.starts_with("{\"code\""), "{block}");
}

#[test]
fn a_cuda_block_with_parameters_in_prose_has_no_json_but_its_code_is_found() {
    let text = answer("cuda_block_params_in_prose.md");
    let schema = OutputSchema::of::<KernelRewrite>().schema;
    let err = parse_lenient::<KernelRewrite>(&text, Some(&schema)).unwrap_err();
    assert!(
        matches!(err, IntakeError::NoJson { unclosed: false }),
        "{err}"
    );
    assert_eq!(json_block(&text), None, "the kernel's braces are not JSON");
    let blocks = code_blocks(&text);
    assert_eq!(blocks.len(), 1);
    let CodeBlock { lang, code } = &blocks[0];
    assert_eq!(lang.as_deref(), Some("cuda"));
    assert!(code.contains("WORK_PER_THREAD") && code.contains("extern \"C\" __global__"));
}

#[test]
fn original_kernel_fenced_first_is_listed_before_the_answer_code() {
    let blocks = code_blocks(&answer("original_kernel_first.md"));
    assert_eq!(blocks.len(), 1, "the json fence is not code");
    assert!(
        !blocks[0].code.contains("__restrict__"),
        "the original kernel"
    );
}

#[test]
fn plan_steps_given_as_objects_become_their_text() {
    let schema = OutputSchema::of::<Plan>().schema;
    let got = parse_lenient::<Plan>(&answer("plan_steps_as_objects.md"), Some(&schema)).unwrap();
    assert_eq!(
        got.value.steps,
        vec![
            "Have each thread process several consecutive elements (a tunable WORK_PER_THREAD).",
            "Load with float4 where the pointer is aligned.",
            "Tune the block size."
        ]
    );
    assert_eq!(got.repairs.len(), 2, "{:?}", got.repairs);
}

#[test]
fn every_corpus_file_is_covered_by_a_test() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let this = include_str!("corpus.rs");
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        assert!(this.contains(&format!("\"{name}\"")), "{name} has no test");
    }
}
