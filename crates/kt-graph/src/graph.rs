//! `CompiledGraph`: the checked, frozen graph, and the routing rules the executor follows.
//!
//! `compile()` rejects: duplicate or reserved node names; edges, routes, fan-outs and `on_exhausted`
//! targets naming unknown nodes; a graph with no edge from START; nodes unreachable from START; nodes with
//! no path to END; `.writes(..)` naming unknown fields; and overwrite fields that two tasks can write in the
//! same step. The last is found by exploring the sets of tasks that can be active together (every route
//! choice, every `on_exhausted` alternative, fan-outs counted as several writers).

use crate::checkpoint::Task;
use crate::decl::{END, NodeDecl, Outgoing, START};
use crate::error::GraphError;
use crate::node::RunTask;
use crate::state::{Merge, State};
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;

/// Beyond this many distinct sets of co-active tasks the parallel-write check stops exploring; graphs of
/// that size are far beyond what kt builds, and the run-time check still catches a conflict.
const MAX_ACTIVE_SETS: usize = 20_000;

pub(crate) struct CompiledNode<S: State> {
    pub name: String,
    pub task: Arc<dyn RunTask<S>>,
    pub writes: Option<Vec<String>>,
    pub on_exhausted: Option<String>,
    pub outgoing: Vec<Outgoing<S>>,
}

pub(crate) struct GraphInner<S: State> {
    pub nodes: Vec<CompiledNode<S>>,
    pub index: HashMap<String, usize>,
    pub entry: Vec<Outgoing<S>>,
    pub fingerprint: String,
}

/// A checked graph, ready to run with an [`Executor`](crate::Executor). Cheap to clone.
pub struct CompiledGraph<S: State> {
    pub(crate) inner: Arc<GraphInner<S>>,
}

impl<S: State> Clone for CompiledGraph<S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<S: State> CompiledGraph<S> {
    /// Checks what the builder declared and freezes it.
    pub(crate) fn from_decls(
        decls: Vec<NodeDecl<S>>,
        outgoing: Vec<(String, Outgoing<S>)>,
    ) -> Result<Self, GraphError> {
        let mut index = HashMap::new();
        for (i, d) in decls.iter().enumerate() {
            if d.name == START || d.name == END {
                return Err(GraphError::ReservedName {
                    node: d.name.clone(),
                });
            }
            if index.insert(d.name.clone(), i).is_some() {
                return Err(GraphError::DuplicateNode {
                    node: d.name.clone(),
                });
            }
        }
        let known = |name: &str| name == END || index.contains_key(name);
        let mut entry = Vec::new();
        let mut per_node: Vec<Vec<Outgoing<S>>> = decls.iter().map(|_| Vec::new()).collect();
        for (from, out) in outgoing {
            for t in out.targets() {
                if !known(t) {
                    return Err(GraphError::UnknownNode {
                        node: t.to_string(),
                        referenced_by: from.clone(),
                    });
                }
            }
            if from == START {
                entry.push(out);
            } else if let Some(&i) = index.get(&from) {
                per_node[i].push(out);
            } else {
                return Err(GraphError::UnknownNode {
                    node: from.clone(),
                    referenced_by: "an edge".into(),
                });
            }
        }
        if entry.is_empty() {
            return Err(GraphError::NoEntry);
        }
        let field_names: HashSet<&str> = S::fields().iter().map(|f| f.name).collect();
        for d in &decls {
            if let Some(t) = &d.on_exhausted
                && !known(t)
            {
                return Err(GraphError::UnknownNode {
                    node: t.clone(),
                    referenced_by: d.name.clone(),
                });
            }
            for f in d.writes.iter().flatten() {
                if !field_names.contains(f.as_str()) {
                    return Err(GraphError::UnknownField {
                        node: d.name.clone(),
                        field: f.clone(),
                    });
                }
            }
        }
        let nodes: Vec<CompiledNode<S>> = decls
            .into_iter()
            .zip(per_node)
            .map(|(d, outgoing)| CompiledNode {
                name: d.name,
                task: d.slot.erase(),
                writes: d.writes,
                on_exhausted: d.on_exhausted,
                outgoing,
            })
            .collect();
        let mut graph = GraphInner {
            nodes,
            index,
            entry,
            fingerprint: String::new(),
        };
        check_reachability(&graph)?;
        check_parallel_writes(&graph)?;
        graph.fingerprint = fingerprint(&graph);
        Ok(Self {
            inner: Arc::new(graph),
        })
    }

    /// Identifies the graph's shape (nodes, routes, policies' routes, state fields and merge rules).
    /// Checkpoints carry it; a checkpoint from a different fingerprint needs a [`Migration`](crate::Migration).
    pub fn fingerprint(&self) -> &str {
        &self.inner.fingerprint
    }

    /// Node names in declaration order.
    pub fn node_names(&self) -> Vec<&str> {
        self.inner.nodes.iter().map(|n| n.name.as_str()).collect()
    }

    pub(crate) fn node(&self, name: &str) -> Option<&CompiledNode<S>> {
        self.inner.index.get(name).map(|&i| &self.inner.nodes[i])
    }

    /// The tasks that follow a finished task of `from` (or START), given the merged state.
    pub(crate) fn successors(&self, from: &str, state: &S) -> Result<Vec<Task>, GraphError> {
        let outgoing = if from == START {
            &self.inner.entry
        } else {
            match self.node(from) {
                Some(n) => &n.outgoing,
                None => {
                    return Err(GraphError::UnknownNode {
                        node: from.into(),
                        referenced_by: "a checkpoint".into(),
                    });
                }
            }
        };
        let mut tasks = Vec::new();
        for out in outgoing {
            match out {
                Outgoing::Edge(t) => tasks.push(Task::single(t.clone())),
                Outgoing::Route {
                    targets, router, ..
                } => {
                    let chosen = router(state);
                    if !targets.contains(&chosen) {
                        return Err(GraphError::UndeclaredTarget {
                            node: from.to_string(),
                            target: chosen,
                            declared: targets.clone(),
                        });
                    }
                    tasks.push(Task::single(chosen));
                }
                Outgoing::FanOut { target, count } => {
                    let n = count(state) as u32;
                    tasks.extend((0..n).map(|i| Task {
                        node: target.clone(),
                        index: i,
                        count: n,
                    }));
                }
            }
        }
        tasks.retain(|t| t.node != END);
        Ok(tasks)
    }

    /// True when the graph has a way (edge, route target, fan-out or on_exhausted) from `from` to `to`.
    pub(crate) fn has_edge(&self, from: &str, to: &str) -> bool {
        let outs = if from == START {
            Some(&self.inner.entry)
        } else {
            self.node(from).map(|n| &n.outgoing)
        };
        outs.is_some_and(|o| o.iter().any(|x| x.targets().contains(&to)))
            || self.node(from).and_then(|n| n.on_exhausted.as_deref()) == Some(to)
    }
}

fn all_targets<S: State>(g: &GraphInner<S>, from: Option<usize>) -> Vec<String> {
    let (outs, exhausted) = match from {
        None => (&g.entry, None),
        Some(i) => (&g.nodes[i].outgoing, g.nodes[i].on_exhausted.as_ref()),
    };
    let mut v: Vec<String> = outs
        .iter()
        .flat_map(|o| o.targets())
        .map(str::to_string)
        .collect();
    v.extend(exhausted.cloned());
    v
}

fn check_reachability<S: State>(g: &GraphInner<S>) -> Result<(), GraphError> {
    // forward from START
    let mut seen = vec![false; g.nodes.len()];
    let mut queue: VecDeque<Option<usize>> = VecDeque::from([None]);
    while let Some(at) = queue.pop_front() {
        for t in all_targets(g, at) {
            if let Some(&i) = g.index.get(&t)
                && !seen[i]
            {
                seen[i] = true;
                queue.push_back(Some(i));
            }
        }
    }
    if let Some(i) = seen.iter().position(|s| !s) {
        return Err(GraphError::Unreachable {
            node: g.nodes[i].name.clone(),
        });
    }
    // backward from END: a node reaches END if any of its targets is END or reaches END
    let mut reaches = vec![false; g.nodes.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for i in 0..g.nodes.len() {
            if reaches[i] {
                continue;
            }
            let ok = all_targets(g, Some(i))
                .iter()
                .any(|t| t == END || g.index.get(t).is_some_and(|&j| reaches[j]));
            if ok {
                reaches[i] = true;
                changed = true;
            }
        }
    }
    if let Some(i) = reaches.iter().position(|r| !r) {
        return Err(GraphError::NoPathToEnd {
            node: g.nodes[i].name.clone(),
        });
    }
    Ok(())
}

/// An abstract task: node index, and whether several copies may run (fan-out).
type Active = BTreeSet<(usize, bool)>;

/// The alternative sets of tasks that can follow `from` (one per combination of route choices, plus the
/// `on_exhausted` alternative).
fn successor_alternatives<S: State>(
    g: &GraphInner<S>,
    from: Option<usize>,
) -> Vec<Vec<(usize, bool)>> {
    let outs = match from {
        None => &g.entry,
        Some(i) => &g.nodes[i].outgoing,
    };
    let mut alternatives: Vec<Vec<(usize, bool)>> = vec![Vec::new()];
    for out in outs {
        match out {
            Outgoing::Edge(t) => {
                for alt in &mut alternatives {
                    alt.extend(g.index.get(t).map(|&i| (i, false)));
                }
            }
            Outgoing::FanOut { target, .. } => {
                for alt in &mut alternatives {
                    alt.extend(g.index.get(target).map(|&i| (i, true)));
                }
            }
            Outgoing::Route { targets, .. } => {
                let mut next = Vec::new();
                for alt in &alternatives {
                    for t in targets {
                        let mut a = alt.clone();
                        a.extend(g.index.get(t).map(|&i| (i, false)));
                        next.push(a);
                    }
                }
                alternatives = next;
            }
        }
    }
    if let Some(i) = from
        && let Some(t) = &g.nodes[i].on_exhausted
    {
        alternatives.push(
            g.index
                .get(t)
                .map(|&j| vec![(j, false)])
                .unwrap_or_default(),
        );
    }
    alternatives
}

fn writes_field<S: State>(g: &GraphInner<S>, node: usize, field: &str) -> bool {
    g.nodes[node]
        .writes
        .as_ref()
        .is_none_or(|w| w.iter().any(|f| f == field))
}

fn check_parallel_writes<S: State>(g: &GraphInner<S>) -> Result<(), GraphError> {
    let overwrite: Vec<&str> = S::fields()
        .iter()
        .filter(|f| f.merge == Merge::Overwrite)
        .map(|f| f.name)
        .collect();
    if overwrite.is_empty() {
        return Ok(());
    }
    let mut seen: HashSet<Active> = HashSet::new();
    let mut queue: VecDeque<Active> = successor_alternatives(g, None)
        .into_iter()
        .map(|a| a.into_iter().collect())
        .collect();
    while let Some(active) = queue.pop_front() {
        if active.is_empty() || !seen.insert(active.clone()) {
            continue;
        }
        for field in &overwrite {
            let mut writers = Vec::new();
            for &(n, multi) in &active {
                if writes_field(g, n, field) {
                    writers.push(n);
                    if multi {
                        writers.push(n);
                    }
                }
            }
            if writers.len() >= 2 {
                return Err(GraphError::ConflictingWrites {
                    field: field.to_string(),
                    first: g.nodes[writers[0]].name.clone(),
                    second: g.nodes[writers[1]].name.clone(),
                });
            }
        }
        if seen.len() >= MAX_ACTIVE_SETS {
            tracing::warn!(
                "parallel-write check stopped after {MAX_ACTIVE_SETS} task sets; run-time check remains"
            );
            break;
        }
        // Every combination of each active task's alternatives.
        let mut combos: Vec<Active> = vec![Active::new()];
        for &(n, _) in &active {
            let alts = successor_alternatives(g, Some(n));
            let mut next = Vec::new();
            for c in &combos {
                for a in &alts {
                    let mut merged = c.clone();
                    merged.extend(a.iter().copied());
                    next.push(merged);
                }
            }
            combos = next;
            if combos.len() > MAX_ACTIVE_SETS {
                combos.truncate(MAX_ACTIVE_SETS);
            }
        }
        queue.extend(combos);
    }
    Ok(())
}

/// FNV-1a over a canonical description: stable across Rust versions and platforms, unlike `DefaultHasher`.
fn fingerprint<S: State>(g: &GraphInner<S>) -> String {
    let mut text = String::new();
    for f in S::fields() {
        text.push_str(&format!("field {}:{:?};", f.name, f.merge));
    }
    let describe = |outs: &[Outgoing<S>]| {
        outs.iter()
            .map(|o| match o {
                Outgoing::Edge(t) => format!("edge {t}"),
                Outgoing::Route { targets, .. } => format!("route {targets:?}"),
                Outgoing::FanOut { target, .. } => format!("fan {target}"),
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    text.push_str(&format!("start [{}];", describe(&g.entry)));
    let mut nodes: Vec<&CompiledNode<S>> = g.nodes.iter().collect();
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    for n in nodes {
        text.push_str(&format!(
            "node {} [{}] exhausted {:?};",
            n.name,
            describe(&n.outgoing),
            n.on_exhausted
        ));
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}
