//! `GraphBuilder`: declare nodes, their policies and the routes between them; `compile()` checks it all.

use crate::decl::{NodeDecl, Outgoing};
use crate::error::GraphError;
use crate::graph::CompiledGraph;
use crate::node::{Node, Policied};
use crate::policy::Retry;
use crate::state::State;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

/// Declares a graph over state `S`.
///
/// Why node writes are declared on the builder (`.writes(&[..])`) rather than derived from the update
/// type: an update type lists every field a node *could* set, so it cannot tell two parallel nodes apart;
/// the declaration is per node, checked against `S`'s fields at `compile()`, and enforced at run time (a
/// node writing an undeclared field fails with [`GraphError::UndeclaredWrite`]). A node without a
/// declaration is assumed to write every field, which only matters when it runs in parallel.
pub struct GraphBuilder<S: State> {
    nodes: Vec<NodeDecl<S>>,
    outgoing: Vec<(String, Outgoing<S>)>,
}

impl<S: State> Default for GraphBuilder<S> {
    fn default() -> Self {
        Self {
            nodes: Vec::new(),
            outgoing: Vec::new(),
        }
    }
}

impl<S: State> GraphBuilder<S> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a node; chain policies on the returned handle.
    pub fn node<N: Node<S>>(&mut self, name: impl Into<String>, node: N) -> NodeBuilder<'_, S, N> {
        self.nodes.push(NodeDecl {
            name: name.into(),
            slot: Box::new(Policied::<S, N> {
                node: Arc::new(node),
                retry: None,
                timeout: None,
            }),
            writes: None,
            on_exhausted: None,
        });
        let last = self.nodes.len() - 1;
        NodeBuilder {
            decl: &mut self.nodes[last],
            _node: PhantomData,
        }
    }

    /// A fixed edge: after `from` runs, `to` runs in the next step. Several fixed edges out of one node
    /// run their targets in parallel.
    pub fn edge(&mut self, from: impl Into<String>, to: impl Into<String>) -> &mut Self {
        self.outgoing.push((from.into(), Outgoing::Edge(to.into())));
        self
    }

    /// A conditional route: after `from` runs, `router` picks one of `targets` (which may include [`END`](crate::END)).
    /// Declaring the targets makes diagrams exact and lets `compile()` check them; a router returning an
    /// undeclared name fails the run with [`GraphError::UndeclaredTarget`].
    pub fn route<R: Into<String>>(
        &mut self,
        from: impl Into<String>,
        targets: &[&str],
        router: impl Fn(&S) -> R + Send + Sync + 'static,
    ) -> &mut Self {
        self.outgoing.push((
            from.into(),
            Outgoing::Route {
                targets: targets.iter().map(|t| t.to_string()).collect(),
                labels: vec![String::new(); targets.len()],
                router: Arc::new(move |s| router(s).into()),
            },
        ));
        self
    }

    /// A conditional route whose targets are named by the outcome that leads to each, as `(target, outcome)`:
    /// `b.route_labelled("validate", &[("breakdown", "too big"), ("prepare", "valid")], router)`. The router
    /// still returns the target; the outcomes are what diagrams (and the studio) write on the edges.
    pub fn route_labelled<R: Into<String>>(
        &mut self,
        from: impl Into<String>,
        targets: &[(&str, &str)],
        router: impl Fn(&S) -> R + Send + Sync + 'static,
    ) -> &mut Self {
        self.outgoing.push((
            from.into(),
            Outgoing::Route {
                targets: targets.iter().map(|(t, _)| t.to_string()).collect(),
                labels: targets.iter().map(|(_, l)| l.to_string()).collect(),
                router: Arc::new(move |s| router(s).into()),
            },
        ));
        self
    }

    /// Fan-out: after `from` runs, `count(state)` copies of `to` run in parallel (each sees its
    /// [`task_index`](crate::NodeContext::task_index)); their updates merge at the barrier in index order.
    pub fn fan_out(
        &mut self,
        from: impl Into<String>,
        to: impl Into<String>,
        count: impl Fn(&S) -> usize + Send + Sync + 'static,
    ) -> &mut Self {
        self.outgoing.push((
            from.into(),
            Outgoing::FanOut {
                target: to.into(),
                count: Arc::new(count),
            },
        ));
        self
    }

    /// Checks the graph and freezes it. See [`CompiledGraph`] for what is checked.
    pub fn compile(self) -> Result<CompiledGraph<S>, GraphError> {
        CompiledGraph::from_decls(self.nodes, self.outgoing)
    }
}

/// Handle to set a node's policies: `builder.node(..).retry(..).timeout(..).on_exhausted(..).writes(..)`.
pub struct NodeBuilder<'a, S: State, N: Node<S>> {
    decl: &'a mut NodeDecl<S>,
    _node: PhantomData<fn() -> N>,
}

impl<S: State, N: Node<S>> NodeBuilder<'_, S, N> {
    fn policied(&mut self) -> Option<&mut Policied<S, N>> {
        self.decl.slot.as_any_mut().downcast_mut::<Policied<S, N>>()
    }

    pub fn retry(mut self, retry: Retry<S, N::Error>) -> Self {
        if let Some(p) = self.policied() {
            p.retry = Some(retry);
        }
        self
    }

    /// Limit per attempt; a timed-out attempt counts as a failure (retried unless the retry policy says not).
    pub fn timeout(mut self, limit: Duration) -> Self {
        if let Some(p) = self.policied() {
            p.timeout = Some(limit);
        }
        self
    }

    /// When the node fails for good (retries exhausted or a non-retryable error), route to `node` (or
    /// [`END`](crate::END)) instead of failing the run. The failure is recorded in the checkpoint.
    pub fn on_exhausted(self, node: impl Into<String>) -> Self {
        self.decl.on_exhausted = Some(node.into());
        self
    }

    /// The state fields this node may write (see [`GraphBuilder`] for why this is declared here).
    pub fn writes(self, fields: &[&str]) -> Self {
        self.decl.writes = Some(fields.iter().map(|f| f.to_string()).collect());
        self
    }
}
