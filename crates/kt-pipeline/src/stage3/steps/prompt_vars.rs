//! The variables Stage 3 templates see. One builder per kind of call keeps the facts each call gets small and
//! focused: the kernel code the question is about, the kernel's meaning, and only what that call needs.
//! Nothing measured (times, speedups, tuned values) goes into a prompt: a prompt that depends on the GPU makes
//! every later answer depend on it too, and a cassette recorded on one machine would not replay on another.
//! The exception is a profile summary (`profiling.rs`), which templates put in a measured section that a
//! request's identity leaves out.

use serde::Serialize;

use crate::KernelInfo;
use crate::error::PipelineError;
use crate::stage3::answers::TunableParameter;
use crate::stage3::context::Stage3Context;
use crate::stage3::state::{CurrentStep, Stage3State, StepRecord, StepStatus};
use crate::stage3::tunable_code::TunableCode;

/// A kernel parameter as templates see it (same shape as Stage 1's `kernel.params`).
#[derive(Debug, Clone, Serialize)]
pub struct ParamVar {
    pub name: String,
    pub type_text: String,
    pub base_type: String,
    pub pointer: bool,
    pub is_const: bool,
}

/// `kernel`: the code a call is about and its signature.
#[derive(Debug, Clone, Serialize)]
pub struct KernelVar {
    pub name: String,
    /// The CUDA source the question is about (the best kernel so far, or a new rewrite).
    pub source: String,
    pub params: Vec<ParamVar>,
    /// Its tunable parameters and the values tried.
    pub tunable: Vec<TunableParameter>,
    /// Per dimension, the names whose product divides the problem size into the grid.
    pub grid_divisors: [Vec<String>; 3],
}

/// One earlier step, in words.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryVar {
    pub step: String,
    pub status: String,
    pub reason: String,
}

/// Problem size and launch facts.
#[derive(Debug, Clone, Serialize)]
pub struct LaunchVar {
    /// Problem size per dimension, x first.
    pub problem_size: Vec<String>,
    pub default_block: [u32; 3],
    pub dimensions: usize,
}

pub(crate) fn kernel_var(cx: &Stage3Context, kernel: &TunableCode) -> KernelVar {
    KernelVar {
        name: cx.kernel.signature.name.clone(),
        source: kernel.code.clone(),
        params: cx
            .kernel
            .signature
            .params
            .iter()
            .map(|p| ParamVar {
                name: p.name.clone(),
                type_text: p.type_text.clone(),
                base_type: p.base_type.clone(),
                pointer: p.is_pointer(),
                is_const: p.is_const,
            })
            .collect(),
        tunable: kernel.parameters.clone(),
        grid_divisors: kernel.grid_divisors.clone(),
    }
}

/// The variables of a question about one step (`validate`, `breakdown`, `worth_it`): the best kernel so far,
/// the step, and the steps before it.
#[derive(Serialize)]
pub(crate) struct StepVars<'a> {
    pub kernel: KernelVar,
    pub info: &'a KernelInfo,
    pub launch: LaunchVar,
    pub step: &'a str,
    /// The explicit strategy's step id; empty for planned steps.
    pub step_id: &'a str,
    pub history: Vec<HistoryVar>,
}

pub(crate) fn step_vars<'a>(
    cx: &'a Stage3Context,
    state: &Stage3State,
    step: &'a CurrentStep,
) -> Result<StepVars<'a>, PipelineError> {
    Ok(StepVars {
        kernel: kernel_var(cx, &state.best_kernel()?.kernel),
        info: &cx.kernel.info,
        launch: launch_var(&cx.kernel.info),
        step: &step.description,
        step_id: step.id.as_deref().unwrap_or_default(),
        history: history_var(&state.history),
    })
}

pub(crate) fn launch_var(info: &KernelInfo) -> LaunchVar {
    LaunchVar {
        problem_size: info
            .problem_size
            .iter()
            .map(|d| d.expression.clone())
            .collect(),
        default_block: info.default_block,
        dimensions: info.dimensions(),
    }
}

/// The steps taken so far, in order, for the replanner and the validator.
pub(crate) fn history_var(history: &[StepRecord]) -> Vec<HistoryVar> {
    history
        .iter()
        .filter(|r| r.status != StepStatus::BrokenDown)
        .map(|r| HistoryVar {
            step: r.step.clone(),
            status: r.status.to_string(),
            reason: r.reason.clone(),
        })
        .collect()
}
