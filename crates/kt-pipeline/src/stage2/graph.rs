//! The Stage 2 graph: one node, `make_test`, looping until the wanted number of tests is accepted.
//!
//! One invocation makes test number `tests.len()` with seed `first_seed + index`:
//! 1. the generator program: asked of the LLM when there is none yet, a revision is pending, or the previous
//!    attempt failed (then with the failing program and the error verbatim); otherwise the last one is reused;
//! 2. the program runs in kt-sandbox's harness (argument count, dtypes, sizes, total-bytes limit), which writes
//!    a content-addressed test directory;
//! 3. the tests must include one whose size is not a multiple of 32 (tail bugs) and one whose every size
//!    dimension is odd (tile assumptions: a kernel that only works for even or tile-multiple sizes); the last
//!    test is sent back for revision until they do, and a dimension that is a multiple of the same power of
//!    two in every test is a warning;
//! 4. the original kernel runs on it (when a GPU is available): expected outputs and time are recorded, and a
//!    time outside the bounds asks the LLM to resize, with the measured time;
//! 5. the test is accepted.
//!
//! A failing program or refused answer is a node error whose retry handler appends the message to `feedback`
//! (bounded attempts). A resize or tail request is not an error: the node returns a pending `revision` and
//! the router sends it round again (bounded by `max_revisions`).

use std::time::Duration;

use kt_graph::{END, GraphBuilder, Retry, START};

use crate::error::PipelineError;

use super::make_test::MakeTest;
use super::prefetch::GeneratorPrefetch;
use super::state::{Stage2Deps, Stage2State};

/// Builds the Stage 2 graph; `prefetch` holds the generator runs its node starts ahead.
pub(crate) fn build(
    deps: Stage2Deps,
    prefetch: GeneratorPrefetch,
) -> Result<kt_graph::CompiledGraph<Stage2State>, PipelineError> {
    let wanted = deps.options.tests;
    let attempts = if deps.llm.is_some() {
        deps.options.attempts
    } else {
        1
    };
    let mut g = GraphBuilder::<Stage2State>::new();
    g.node("make_test", MakeTest { deps, prefetch })
        .retry(generator_retry(attempts));
    g.edge(START, "make_test");
    g.route("make_test", &["make_test", END], move |s: &Stage2State| {
        if s.tests.len() >= wanted {
            END
        } else {
            "make_test"
        }
    });
    g.compile().map_err(|e| PipelineError::Graph {
        stage: "stage 2",
        message: e.to_string(),
    })
}

fn generator_retry(attempts: u32) -> Retry<Stage2State, PipelineError> {
    Retry::up_to(attempts)
        .backoff(Duration::ZERO, 1.0, Duration::ZERO)
        .jitter(0.0)
        .no_retry_on_timeout()
        .retry_if(|e| matches!(e, PipelineError::GeneratorRefused { .. }))
        .before_retry(
            |e| matches!(e, PipelineError::GeneratorRefused { .. }),
            |e, s: &mut Stage2State| {
                if let PipelineError::GeneratorRefused { reason, script, .. } = e {
                    s.feedback.push(reason.clone());
                    if script.is_some() {
                        s.script = script.clone();
                    }
                }
            },
        )
}
