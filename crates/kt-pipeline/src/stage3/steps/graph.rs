//! Each strategy as a kt-graph graph. The routes are declared with their targets, so `kt graph export` draws
//! exactly what can run. Loops (the plan/next-step cycle, explicit steps, planner retries) are bounded by the
//! plan length, the replan and planner-failure limits, and the strategy's graph step limit.

use std::sync::Arc;
use std::time::Duration;

use kt_graph::{CompiledGraph, END, GraphBuilder, Retry, START};

use crate::error::PipelineError;
use crate::stage3::context::Stage3Context;
use crate::stage3::state::Stage3State;
use crate::stage3::steps::nodes::{
    Apply, Baseline, Breakdown, Finish, NextExplicit, NextStep, Planner, Prepare, Select, Validate,
    WorthItCheck,
};
use crate::strategy::StrategyKind;

/// Node names, shared by the graph, the live view and scripted answers' documentation.
pub mod node {
    pub const BASELINE: &str = "baseline";
    pub const PLAN: &str = "plan";
    pub const NEXT_STEP: &str = "next_step";
    pub const VALIDATE: &str = "validate";
    pub const BREAKDOWN: &str = "breakdown";
    pub const PREPARE: &str = "prepare";
    pub const APPLY: &str = "apply";
    pub const SELECT: &str = "select";
    pub const REPLAN: &str = "replan";
    pub const NEXT_EXPLICIT: &str = "next_explicit";
    pub const WORTH_IT: &str = "worth_it";
    pub const FINISH: &str = "finish";
}

use node::*;

/// The fields `apply` writes: the only node that runs in parallel, so the only one whose writes matter to
/// the compile-time conflict check.
const APPLY_WRITES: &[&str] = &["candidates", "llm_calls"];

fn apply_retry(max_attempts: u32) -> Retry<Stage3State, PipelineError> {
    Retry::up_to(max_attempts)
        // A fix-up is a new question, not a transient failure: no need to wait.
        .backoff(Duration::ZERO, 1.0, Duration::ZERO)
        .jitter(0.0)
        .retry_if(|e| matches!(e, PipelineError::CandidateFailed { .. }))
        .no_retry_on_timeout()
        .before_retry(
            |e| matches!(e, PipelineError::CandidateFailed { .. }),
            |e: &PipelineError, s: &mut Stage3State| {
                if let PipelineError::CandidateFailed {
                    feedback, calls, ..
                } = e
                {
                    s.feedback.push(feedback.clone());
                    s.carried_calls.extend(calls.iter().cloned());
                }
            },
        )
}

/// Adds prepare → apply×N → select, with select leading to `after_select`.
fn add_candidate_round(
    b: &mut GraphBuilder<Stage3State>,
    cx: &Arc<Stage3Context>,
    after_select: &str,
) {
    let settings = &cx.strategy.settings;
    b.node(PREPARE, Prepare(cx.clone()))
        .writes(&["round", "current", "profiles"]);
    b.node(APPLY, Apply(cx.clone()))
        .retry(apply_retry(settings.max_attempts))
        .writes(APPLY_WRITES);
    b.node(SELECT, Select(cx.clone()));
    let n = settings.candidates.max(1) as usize;
    b.fan_out(PREPARE, APPLY, move |_| n);
    b.edge(APPLY, SELECT);
    b.edge(SELECT, after_select);
}

/// The graph of `cx.strategy`.
pub fn build_graph(cx: Arc<Stage3Context>) -> Result<CompiledGraph<Stage3State>, PipelineError> {
    let mut b = GraphBuilder::<Stage3State>::new();
    b.node(BASELINE, Baseline(cx.clone()));
    b.node(FINISH, Finish(cx.clone()));
    b.edge(START, BASELINE);
    b.edge(FINISH, END);
    match cx.strategy.kind {
        StrategyKind::OnePrompt => add_one_prompt(&mut b, &cx),
        StrategyKind::Explicit => add_explicit(&mut b, &cx),
        StrategyKind::Autonomous => add_autonomous(&mut b, &cx),
    }
    b.compile().map_err(|e| PipelineError::Graph {
        stage: "stage 3",
        message: e.to_string(),
    })
}

/// One-prompt: baseline → the one step → one candidate round → finish.
fn add_one_prompt(b: &mut GraphBuilder<Stage3State>, cx: &Arc<Stage3Context>) {
    b.node(NEXT_STEP, OnePromptStep(cx.clone()));
    b.edge(BASELINE, NEXT_STEP);
    b.edge(NEXT_STEP, PREPARE);
    add_candidate_round(b, cx, FINISH);
}

/// Explicit: the strategy's steps in order, each asked whether it is worth it where the step says so.
fn add_explicit(b: &mut GraphBuilder<Stage3State>, cx: &Arc<Stage3Context>) {
    b.node(NEXT_EXPLICIT, NextExplicit(cx.clone()));
    b.node(WORTH_IT, WorthItCheck(cx.clone()));
    b.edge(BASELINE, NEXT_EXPLICIT);
    let total = cx.strategy.steps.len();
    b.route_labelled(
        NEXT_EXPLICIT,
        &[
            (WORTH_IT, "ask if worth it"),
            (PREPARE, "next step"),
            (NEXT_EXPLICIT, "skipped"),
            (FINISH, "all steps done"),
        ],
        move |s: &Stage3State| match &s.current {
            Some(c) if c.ask_if_worth_it => WORTH_IT,
            Some(_) => PREPARE,
            None if s.explicit_done.len() >= total => FINISH,
            None => NEXT_EXPLICIT,
        },
    );
    let worth_it = [(PREPARE, "worth it"), (NEXT_EXPLICIT, "not worth it")];
    b.route_labelled(WORTH_IT, &worth_it, |s: &Stage3State| {
        if s.current.is_some() {
            PREPARE
        } else {
            NEXT_EXPLICIT
        }
    });
    add_candidate_round(b, cx, NEXT_EXPLICIT);
}

/// Autonomous: plan → next step → validate → breakdown → candidate round → … → replan, bounded by the
/// planner-failure and replan limits.
fn add_autonomous(b: &mut GraphBuilder<Stage3State>, cx: &Arc<Stage3Context>) {
    let settings = &cx.strategy.settings;
    for (name, replan) in [(PLAN, false), (REPLAN, true)] {
        b.node(
            name,
            Planner {
                cx: cx.clone(),
                replan,
            },
        );
    }
    b.node(NEXT_STEP, NextStep(cx.clone()));
    b.node(VALIDATE, Validate(cx.clone()));
    b.node(BREAKDOWN, Breakdown(cx.clone()));
    b.edge(BASELINE, PLAN);
    let max_failures = settings.max_planner_failures;
    let after_plan = move |retry_node: &'static str| {
        move |s: &Stage3State| {
            if !s.plan.is_empty() {
                NEXT_STEP
            } else if s.last_plan_failed && s.planner_failures < max_failures {
                retry_node
            } else {
                FINISH
            }
        }
    };
    let planned = |retry: &'static str| {
        [
            (NEXT_STEP, "planned"),
            (retry, "failed: ask again"),
            (FINISH, "no plan"),
        ]
    };
    b.route_labelled(PLAN, &planned(PLAN), after_plan(PLAN));
    b.route_labelled(REPLAN, &planned(REPLAN), after_plan(REPLAN));
    let max_replans = settings.max_replans;
    b.route_labelled(
        NEXT_STEP,
        &[
            (VALIDATE, "next step"),
            (REPLAN, "plan used up"),
            (FINISH, "no replans left, or at the ceiling"),
        ],
        move |s: &Stage3State| {
            if s.current.is_some() {
                VALIDATE
            } else if at_the_ceiling(s) {
                FINISH
            } else if s.replans_used < max_replans && s.planner_failures < max_failures {
                REPLAN
            } else {
                FINISH
            }
        },
    );
    add_step_refinement(b, cx);
    add_candidate_round(b, cx, NEXT_STEP);
}

/// The share of its binding ceiling from which a best kernel is not replanned: what is left is within the
/// ceiling's own error. Above `AT_THE_CEILING_MAX` the share is no evidence of being there (the kernel skips
/// work the naive kernel's count includes), so the loop goes on.
const AT_THE_CEILING: f64 = 95.0;
const AT_THE_CEILING_MAX: f64 = 110.0;

/// Whether the best kernel is within a few percent of its binding ceiling, so a replan can gain little.
fn at_the_ceiling(s: &Stage3State) -> bool {
    s.best
        .as_ref()
        .and_then(|b| b.percent_of_peak)
        .is_some_and(|p| (AT_THE_CEILING..=AT_THE_CEILING_MAX).contains(&p))
}

/// Autonomous: a validated step is broken down until the strategy's depth, then applied.
fn add_step_refinement(b: &mut GraphBuilder<Stage3State>, cx: &Arc<Stage3Context>) {
    let limit = cx.strategy.breakdown_limit();
    b.route_labelled(
        VALIDATE,
        &[
            (BREAKDOWN, "valid: break down"),
            (PREPARE, "valid: apply"),
            (NEXT_STEP, "refused"),
        ],
        move |s: &Stage3State| match &s.current {
            None => NEXT_STEP,
            Some(c) if c.breakdown_depth < limit => BREAKDOWN,
            Some(_) => PREPARE,
        },
    );
    let broken_down = [(NEXT_STEP, "split into sub-steps"), (PREPARE, "kept whole")];
    b.route_labelled(BREAKDOWN, &broken_down, |s: &Stage3State| {
        if s.current.is_some() {
            PREPARE
        } else {
            NEXT_STEP
        }
    });
}

/// `next_step` of the one-prompt strategy: the single step, with the one-prompt template.
struct OnePromptStep(Arc<Stage3Context>);

impl kt_graph::Node<Stage3State> for OnePromptStep {
    type Error = kt_graph::NoError;

    async fn run(
        &self,
        state: Arc<Stage3State>,
        _ctx: kt_graph::NodeContext,
    ) -> Result<crate::stage3::state::Stage3Update, kt_graph::NoError> {
        Ok(crate::stage3::state::Stage3Update::default().current(Some(
            crate::stage3::state::CurrentStep {
                id: Some("one-prompt".into()),
                description: "Optimise the kernel and make it tunable".into(),
                template: self.0.strategy.prompts.one_prompt.clone(),
                suggested_parameters: Vec::new(),
                breakdown_depth: 0,
                ask_if_worth_it: false,
                round: state.round,
            },
        )))
    }
}

/// Diagram formats of [`export_graph`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphFormat {
    Mermaid,
    Dot,
}

/// The diagram of a strategy's graph. The shape depends only on the strategy, and no node runs here, so the
/// nodes are built around a minimal kernel rather than a user's.
pub fn export_graph(
    strategy: crate::strategy::Strategy,
    format: GraphFormat,
) -> Result<String, PipelineError> {
    const SHAPE_ONLY: &str = "extern \"C\" __global__ void kernel(float* out, int n) {}\n";
    let parsed = kt_cuda::parse(SHAPE_ONLY)?;
    let signature = parsed.select_kernel(None)?.clone();
    let info = crate::KernelInfo {
        name: signature.name.clone(),
        parameters: signature.params.iter().map(|p| p.name.clone()).collect(),
        description: String::new(),
        problem_size: vec![crate::ProblemDimension {
            expression: "n".into(),
        }],
        outputs: vec!["out".into()],
        inputs_and_outputs: Vec::new(),
        default_block: [256, 1, 1],
    };
    let facts = crate::stage3::context::KernelFacts {
        info,
        signature,
        source: SHAPE_ONLY.into(),
    };
    let prompts = Arc::new(crate::PromptLibrary::builtin()?);
    let graph = build_graph(Arc::new(Stage3Context::new(strategy, facts, prompts)))?;
    let opts = kt_graph::ExportOptions::default();
    Ok(match format {
        GraphFormat::Mermaid => graph.to_mermaid(&opts),
        GraphFormat::Dot => graph.to_dot(&opts),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::strategy::load_strategy;

    #[test]
    fn every_strategy_compiles_to_a_graph_and_exports_its_routes() {
        for name in ["one-prompt", "explicit", "autonomous"] {
            let s = load_strategy(name, None).unwrap();
            let mermaid = export_graph(s.clone(), GraphFormat::Mermaid).unwrap();
            assert!(mermaid.starts_with("flowchart"), "{mermaid}");
            assert!(
                mermaid.contains("n_apply") && mermaid.contains("fan-out"),
                "{name}: {mermaid}"
            );
            let dot = export_graph(s, GraphFormat::Dot).unwrap();
            assert!(dot.contains("digraph"), "{dot}");
        }
        let auto = export_graph(
            load_strategy("autonomous", None).unwrap(),
            GraphFormat::Mermaid,
        )
        .unwrap();
        for node in [
            "n_plan",
            "n_validate",
            "n_breakdown",
            "n_replan",
            "n_select",
            "n_finish",
        ] {
            assert!(auto.contains(node), "{node} missing:\n{auto}");
        }
    }
}
