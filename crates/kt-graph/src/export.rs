//! Mermaid and DOT diagrams of a compiled graph, optionally highlighting the path a run took.
//!
//! Edge styles: fixed edges solid, routes dashed and labelled with the outcome declared for the target
//! ([`GraphBuilder::route_labelled`](crate::GraphBuilder::route_labelled); "route" when none was), fan-outs
//! bold labelled "fan-out", `on_exhausted` dotted labelled "on error".

use crate::decl::{END, Outgoing, START};
use crate::executor::inspect::RunPath;
use crate::graph::CompiledGraph;
use crate::state::State;

/// What to draw besides the graph.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// Nodes and edges to highlight (from [`Executor::path`](crate::Executor::path)).
    pub highlight: Option<RunPath>,
}

#[derive(Clone, PartialEq)]
enum Kind {
    Edge,
    /// With the outcome that leads to the target ("route" when none was declared).
    Route(String),
    FanOut,
    OnError,
}

impl<S: State> CompiledGraph<S> {
    fn edges(&self) -> Vec<(String, String, Kind)> {
        let mut out = Vec::new();
        let mut push = |from: &str, o: &Outgoing<S>| match o {
            Outgoing::Edge(t) => out.push((from.to_string(), t.clone(), Kind::Edge)),
            Outgoing::Route {
                targets, labels, ..
            } => {
                out.extend(targets.iter().zip(labels).map(|(t, label)| {
                    let label = if label.is_empty() { "route" } else { label };
                    (from.to_string(), t.clone(), Kind::Route(label.to_string()))
                }));
            }
            Outgoing::FanOut { target, .. } => {
                out.push((from.to_string(), target.clone(), Kind::FanOut))
            }
        };
        for o in &self.inner.entry {
            push(START, o);
        }
        for n in &self.inner.nodes {
            for o in &n.outgoing {
                push(&n.name, o);
            }
        }
        for n in &self.inner.nodes {
            if let Some(t) = &n.on_exhausted {
                out.push((n.name.clone(), t.clone(), Kind::OnError));
            }
        }
        out
    }

    /// A mermaid `flowchart`.
    pub fn to_mermaid(&self, opts: &ExportOptions) -> String {
        let id = |name: &str| match name {
            START => "__start__".to_string(),
            END => "__end__".to_string(),
            other => format!(
                "n_{}",
                other.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
            ),
        };
        let mut s = String::from("flowchart TD\n");
        s.push_str("    __start__([START])\n");
        for n in &self.inner.nodes {
            s.push_str(&format!(
                "    {}[\"{}\"]\n",
                id(&n.name),
                n.name.replace('"', "'")
            ));
        }
        s.push_str("    __end__([END])\n");
        let mut hot_links = Vec::new();
        for (i, (from, to, kind)) in self.edges().iter().enumerate() {
            let arrow = match kind {
                Kind::Edge => "-->".to_string(),
                Kind::Route(label) => format!("-.->|{}|", label.replace(['|', '"'], "'")),
                Kind::FanOut => "==>|fan-out|".to_string(),
                Kind::OnError => "-.->|on error|".to_string(),
            };
            s.push_str(&format!("    {} {} {}\n", id(from), arrow, id(to)));
            if opts
                .highlight
                .as_ref()
                .is_some_and(|p| p.edges.contains(&(from.clone(), to.clone())))
            {
                hot_links.push(i.to_string());
            }
        }
        if let Some(path) = &opts.highlight {
            s.push_str("    classDef visited fill:#fff3c4,stroke:#e08a00,stroke-width:2px\n");
            let visited: Vec<String> = path.nodes.iter().map(|n| id(n)).collect();
            if !visited.is_empty() {
                s.push_str(&format!("    class {} visited\n", visited.join(",")));
            }
            if !hot_links.is_empty() {
                s.push_str(&format!(
                    "    linkStyle {} stroke:#e08a00,stroke-width:3px\n",
                    hot_links.join(",")
                ));
            }
        }
        s
    }

    /// The graph's shape as plain data, for a record of the run that draws it later without rebuilding it:
    /// its nodes (START and END first, then the nodes in declaration order) and its edges `(from, to, label)`,
    /// labelled as [`Self::to_dot`] labels them (a route's outcome, `fan-out`, `on error`, empty for a fixed
    /// edge).
    pub fn outline(&self) -> (Vec<String>, Vec<(String, String, String)>) {
        let mut nodes = vec![START.to_string(), END.to_string()];
        nodes.extend(self.inner.nodes.iter().map(|n| n.name.clone()));
        let edges = self
            .edges()
            .into_iter()
            .map(|(from, to, kind)| {
                let label = match kind {
                    Kind::Edge => String::new(),
                    Kind::Route(label) => label,
                    Kind::FanOut => "fan-out".into(),
                    Kind::OnError => "on error".into(),
                };
                (from, to, label)
            })
            .collect();
        (nodes, edges)
    }

    /// A Graphviz `digraph`.
    pub fn to_dot(&self, opts: &ExportOptions) -> String {
        let q = |name: &str| format!("\"{}\"", name.replace('"', "\\\""));
        let hot_node = |n: &str| {
            opts.highlight
                .as_ref()
                .is_some_and(|p| p.nodes.iter().any(|x| x == n))
        };
        let mut s = String::from("digraph G {\n    rankdir=TB;\n");
        s.push_str(&format!(
            "    {} [label=\"START\", shape=oval];\n",
            q(START)
        ));
        s.push_str(&format!(
            "    {} [label=\"END\", shape=oval{}];\n",
            q(END),
            if hot_node(END) {
                ", style=filled, fillcolor=\"#fff3c4\", color=\"#e08a00\""
            } else {
                ""
            }
        ));
        for n in &self.inner.nodes {
            let style = if hot_node(&n.name) {
                ", style=filled, fillcolor=\"#fff3c4\", color=\"#e08a00\""
            } else {
                ""
            };
            s.push_str(&format!("    {} [shape=box{}];\n", q(&n.name), style));
        }
        for (from, to, kind) in self.edges() {
            let mut attrs: Vec<String> = match kind {
                Kind::Edge => vec![],
                Kind::Route(label) => vec![
                    "style=dashed".into(),
                    format!("label=\"{}\"", label.replace('"', "\\\"")),
                ],
                Kind::FanOut => vec!["style=bold".into(), "label=\"fan-out\"".into()],
                Kind::OnError => vec!["style=dotted".into(), "label=\"on error\"".into()],
            };
            if opts
                .highlight
                .as_ref()
                .is_some_and(|p| p.edges.contains(&(from.clone(), to.clone())))
            {
                attrs.push("color=\"#e08a00\"".into());
                attrs.push("penwidth=3".into());
            }
            let attrs = if attrs.is_empty() {
                String::new()
            } else {
                format!(" [{}]", attrs.join(", "))
            };
            s.push_str(&format!("    {} -> {}{};\n", q(&from), q(&to), attrs));
        }
        s.push_str("}\n");
        s
    }
}
