//! The prompt that asks for a generator program: `stage2-generator` at first, `stage2-resize` or
//! `stage2-tail` for a pending revision, with the kernel, what Stage 1 knows of it, the `__constant__`
//! symbols it reads and the reasons earlier answers were refused.

use serde::Serialize;

use kt_cuda::Kernel;

use crate::error::PipelineError;
use crate::kernel_info::KernelInfo;
use crate::prompt::{PromptLibrary, RenderedPrompt};
use crate::stage1::graph::PromptKernel;

use super::answers::ANSWER;
use super::constants::{PromptConstant, prompt_constants};
use super::state::{Revision, Stage2Options, Stage2State};

#[derive(Serialize)]
struct ArraySize<'a> {
    name: &'a str,
    size: &'a str,
}

#[derive(Serialize)]
struct GeneratorContext<'a> {
    kernel: PromptKernel<'a>,
    info: &'a KernelInfo,
    array_sizes: Vec<ArraySize<'a>>,
    /// The `__constant__` symbols the kernel reads, which the program fills too.
    constants: Vec<PromptConstant>,
    /// Milliseconds as Rust prints them (`1`, `0.5`), not minijinja's `1.0`.
    min_ms: String,
    max_ms: String,
    max_total_mb: u64,
    previous_script: Option<&'a str>,
    seed: u64,
    problem_size: Option<String>,
    measured_ms: Option<String>,
    errors: &'a [String],
}

/// The prompt for the program that makes test number `seed`'s inputs, and the node label it is asked under
/// (`stage2.generator`, `stage2.resize`, `stage2.tail`: the key of scripted answers).
pub(super) fn generator_prompt(
    prompts: &PromptLibrary,
    options: &Stage2Options,
    state: &Stage2State,
    kernel: &Kernel,
    info: &KernelInfo,
    seed: u64,
) -> Result<(RenderedPrompt, &'static str), PipelineError> {
    let (template, label) = match &state.revision {
        Some(Revision::Resize { .. }) => ("stage2-resize", "stage2.resize"),
        Some(Revision::Tail { .. }) => ("stage2-tail", "stage2.tail"),
        None => ("stage2-generator", "stage2.generator"),
    };
    let (problem_size, measured_ms) = match &state.revision {
        Some(Revision::Resize {
            problem_size,
            measured_ms,
            ..
        }) => (
            problem_size.map(|p| format!("{p:?}")),
            Some(format!("{measured_ms:.3}")),
        ),
        Some(Revision::Tail { problem_size, .. }) => (problem_size.map(|p| format!("{p:?}")), None),
        None => (None, None),
    };
    let context = GeneratorContext {
        kernel: PromptKernel::new(kernel, &state.source),
        info,
        array_sizes: options
            .array_sizes
            .iter()
            .map(|(name, size)| ArraySize { name, size })
            .collect(),
        constants: prompt_constants(kernel),
        min_ms: options.bounds.min_ms.to_string(),
        max_ms: options.bounds.max_ms.to_string(),
        max_total_mb: options.max_total_bytes >> 20,
        previous_script: state.script.as_deref(),
        seed,
        problem_size,
        measured_ms,
        errors: &state.feedback,
    };
    Ok((prompts.render_as(template, ANSWER, &context)?, label))
}
