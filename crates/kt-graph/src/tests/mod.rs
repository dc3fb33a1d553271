//! Behaviour tests of the engine as a whole (the unit tests of single pieces sit beside them).

mod compile_checks;
mod crash;
mod debugging;
mod policies;
mod running;
mod time_travel;

use crate::{CompiledGraph, END, GraphBuilder, Interrupted, NodeContext, START, node_fn};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Rec {
    pub step: u64,
    pub note: String,
}

crate::state! {
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    pub(crate) struct Loop => LoopUpdate {
        #[overwrite] pub counter: u64,
        #[append] pub log: Vec<Rec>,
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum TestError {
    #[error("compile error: {0}")]
    Compile(String),
    #[error("transient failure")]
    Transient,
    #[error("fatal failure")]
    Fatal,
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
    #[error("effect failed: {0}")]
    Effect(String),
}

/// `tick` bumps the counter and appends a record until `counter == limit`. Every tick runs one journaled
/// effect whose executions are counted in `effects`.
pub(crate) fn loop_graph(limit: u64, effects: Arc<AtomicUsize>) -> CompiledGraph<Loop> {
    let mut b = GraphBuilder::<Loop>::new();
    b.node(
        "tick",
        node_fn(move |s: Arc<Loop>, ctx: NodeContext| {
            let effects = effects.clone();
            async move {
                let note: String = ctx
                    .effect("llm", || async {
                        effects.fetch_add(1, Ordering::SeqCst);
                        Ok::<_, TestError>(format!("answer {}", s.counter))
                    })
                    .await
                    .map_err(|e| TestError::Effect(e.to_string()))?;
                Ok::<_, TestError>(LoopUpdate::default().counter(s.counter + 1).log(vec![Rec {
                    step: ctx.step(),
                    note,
                }]))
            }
        }),
    )
    .writes(&["counter", "log"]);
    b.edge(START, "tick");
    b.route("tick", &["tick", END], move |s: &Loop| {
        if s.counter < limit { "tick" } else { END }
    });
    b.compile().unwrap()
}

pub(crate) fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}
