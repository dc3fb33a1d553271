//! The graph as declared, before `compile()` checks it: the START and END names, a node's ways out (edge,
//! route, fan-out) and a declared node with its policies. [`GraphBuilder`](crate::GraphBuilder) writes
//! these; [`CompiledGraph`](crate::CompiledGraph), the exporter and the executor read them.

use crate::node::{Node, Policied, RunTask};
use crate::state::State;
use std::any::Any;
use std::sync::Arc;

/// The entry of every graph: `builder.edge(START, "first")`.
pub const START: &str = "__start__";
/// The exit: a task routed here ends its branch; the run finishes when no tasks remain.
pub const END: &str = "__end__";

pub(crate) type Router<S> = Arc<dyn Fn(&S) -> String + Send + Sync>;
pub(crate) type FanCount<S> = Arc<dyn Fn(&S) -> usize + Send + Sync>;

/// A way out of a node.
pub(crate) enum Outgoing<S> {
    /// Always taken.
    Edge(String),
    /// Exactly one of `targets`, chosen by the router after the step's updates are merged.
    Route {
        targets: Vec<String>,
        /// What leads to each target (`labels[i]` to `targets[i]`; empty when not declared), drawn on the
        /// edge in diagrams. Not part of the graph's fingerprint: renaming an outcome changes no behaviour.
        labels: Vec<String>,
        router: Router<S>,
    },
    /// `count(state)` parallel copies of `target`, merged at the next barrier in index order.
    FanOut { target: String, count: FanCount<S> },
}

impl<S> Clone for Outgoing<S> {
    fn clone(&self) -> Self {
        match self {
            Self::Edge(t) => Self::Edge(t.clone()),
            Self::Route {
                targets,
                labels,
                router,
            } => Self::Route {
                targets: targets.clone(),
                labels: labels.clone(),
                router: router.clone(),
            },
            Self::FanOut { target, count } => Self::FanOut {
                target: target.clone(),
                count: count.clone(),
            },
        }
    }
}

impl<S> Outgoing<S> {
    /// Every node this way out can lead to.
    pub(crate) fn targets(&self) -> Vec<&str> {
        match self {
            Self::Edge(t) => vec![t.as_str()],
            Self::Route { targets, .. } => targets.iter().map(String::as_str).collect(),
            Self::FanOut { target, .. } => vec![target.as_str()],
        }
    }
}

/// A node with its policies before type erasure (so `NodeBuilder` can still set typed policies).
pub(crate) trait TypedSlot<S: State>: Send + Sync {
    fn as_any_mut(&mut self) -> &mut dyn Any;
    fn erase(self: Box<Self>) -> Arc<dyn RunTask<S>>;
}

impl<S: State, N: Node<S>> TypedSlot<S> for Policied<S, N> {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn erase(self: Box<Self>) -> Arc<dyn RunTask<S>> {
        Arc::new(*self)
    }
}

/// A node as the builder declared it.
pub(crate) struct NodeDecl<S: State> {
    pub name: String,
    pub slot: Box<dyn TypedSlot<S>>,
    pub writes: Option<Vec<String>>,
    pub on_exhausted: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_way_out_names_its_targets() {
        let edge: Outgoing<()> = Outgoing::Edge("b".into());
        let route: Outgoing<()> = Outgoing::Route {
            targets: vec!["c".into(), END.into()],
            labels: vec![String::new(); 2],
            router: Arc::new(|_| "c".into()),
        };
        let fan: Outgoing<()> = Outgoing::FanOut {
            target: "d".into(),
            count: Arc::new(|_| 3),
        };
        assert_eq!(edge.targets(), ["b"]);
        assert_eq!(route.clone().targets(), ["c", END]);
        assert_eq!(fan.targets(), ["d"]);
    }
}
