//! The graph as inline SVG, laid out simply: nodes in one column in visiting order (the nodes the run took
//! first, in the order it first reached them, then the rest), edges as curves beside the column — forward
//! edges on the right, back edges (loops) on the left. Visited nodes and taken edges are highlighted.

use serde::Serialize;

use kt_graph::{CheckpointHead, CheckpointSource};
use kt_record::GraphOutline;

use crate::steps::NodeRan;

/// Nodes and edges to draw, with what the run visited.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GraphShape {
    pub nodes: Vec<String>,
    /// `(from, to, label)`.
    pub edges: Vec<(String, String, String)>,
    pub visited: Vec<String>,
    pub taken: Vec<(String, String)>,
    /// Why the drawing is not the whole graph, when it is not (a run recorded before its graph's shape was
    /// saved): said under the drawing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

const START: &str = "__start__";
const END: &str = "__end__";

/// Reads the DOT that kt-graph exports (`"a" -> "b" [label="route", color=...]`): nodes, edges, and the
/// highlight it carries (filled nodes, coloured edges).
pub fn parse_dot(dot: &str) -> GraphShape {
    let mut g = GraphShape::default();
    for line in dot.lines().map(str::trim) {
        let Some(first) = quoted(line, 0) else {
            continue;
        };
        let rest = &line[first.1..];
        let attrs = line.split_once('[').map(|(_, a)| a).unwrap_or("");
        let hot = attrs.contains("#e08a00");
        if let Some(arrow) = rest.find("->") {
            let Some(second) = quoted(rest, arrow) else {
                continue;
            };
            let label = attrs
                .split("label=\"")
                .nth(1)
                .and_then(|l| l.split('"').next())
                .unwrap_or("")
                .to_string();
            let (a, b) = (first.0, second.0);
            if hot {
                g.taken.push((a.clone(), b.clone()));
            }
            for n in [&a, &b] {
                if !g.nodes.contains(n) {
                    g.nodes.push(n.clone());
                }
            }
            g.edges.push((a, b, label));
        } else {
            let n = first.0;
            if hot && !g.visited.contains(&n) {
                g.visited.push(n.clone());
            }
            if !g.nodes.contains(&n) {
                g.nodes.push(n);
            }
        }
    }
    g
}

/// The first `"..."` at or after `from`, and the index after it.
fn quoted(s: &str, from: usize) -> Option<(String, usize)> {
    let start = from + s[from..].find('"')? + 1;
    let len = s[start..].find('"')?;
    Some((s[start..start + len].to_string(), start + len + 1))
}

impl GraphShape {
    /// The graph a run saved ([`GraphOutline`], `graph.json`), nothing highlighted yet.
    pub fn from_outline(outline: &GraphOutline) -> Self {
        GraphShape {
            nodes: outline.nodes.clone(),
            edges: outline
                .edges
                .iter()
                .map(|e| (e.from.clone(), e.to.clone(), e.label.clone()))
                .collect(),
            ..Default::default()
        }
    }

    /// A graph made of the path alone (when the run's graph cannot be rebuilt): `lineage` and the nodes
    /// that ran to produce each of its checkpoints.
    pub fn from_lineage(lineage: &[CheckpointHead], ran: &[Vec<NodeRan>]) -> Self {
        let mut g = GraphShape {
            nodes: vec![START.into()],
            ..Default::default()
        };
        let mut prev: Vec<String> = vec![START.into()];
        for (cp, nodes) in lineage.iter().zip(ran) {
            if cp.source != CheckpointSource::Step {
                continue;
            }
            let ran: Vec<String> =
                nodes
                    .iter()
                    .map(|n| n.node.clone())
                    .fold(Vec::new(), |mut v, n| {
                        if !v.contains(&n) {
                            v.push(n);
                        }
                        v
                    });
            for b in &ran {
                if !g.nodes.contains(b) {
                    g.nodes.push(b.clone());
                }
                if !g.visited.contains(b) {
                    g.visited.push(b.clone());
                }
                for a in &prev {
                    let e = (a.clone(), b.clone());
                    if !g.taken.contains(&e) {
                        g.taken.push(e.clone());
                        g.edges.push((e.0, e.1, String::new()));
                    }
                }
            }
            prev = ran;
        }
        if lineage.last().is_some_and(CheckpointHead::is_finished) {
            g.nodes.push(END.into());
            g.visited.push(END.into());
            for a in &prev {
                g.taken.push((a.clone(), END.into()));
                g.edges.push((a.clone(), END.into(), String::new()));
            }
        }
        g
    }

    /// The run did not end here (the graph of a stage the run went on from, or stopped in): END is drawn,
    /// when the graph has it, but not as reached.
    pub fn end_not_reached(&mut self) {
        self.visited.retain(|n| n != END);
        self.taken.retain(|(_, b)| b != END);
    }

    /// Adds the nodes `running` runs now where the graph lacks them (a path drawn from its steps alone has
    /// only the nodes that ran), each after the nodes of the last step, so the page can mark them.
    pub fn add_running(&mut self, running: &[String]) {
        let from = self
            .visited
            .iter()
            .rfind(|n| *n != END)
            .cloned()
            .unwrap_or_else(|| START.into());
        for n in running {
            if !self.nodes.contains(n) {
                self.nodes.push(n.clone());
                self.edges.push((from.clone(), n.clone(), String::new()));
            }
        }
    }

    /// Nodes in drawing order: START, visited nodes in visiting order, the others, END last.
    fn order(&self) -> Vec<String> {
        let mut out: Vec<String> = vec![START.into()];
        for n in self.visited.iter().chain(&self.nodes) {
            if n != END && !out.contains(n) {
                out.push(n.clone());
            }
        }
        if self.nodes.iter().any(|n| n == END) {
            out.push(END.into());
        }
        out
    }

    /// The SVG (`<svg id="graph-svg" ...>`).
    pub fn to_svg(&self) -> String {
        let order = self.order();
        let (row, box_w, box_h, x0, top) = (ROW, BOX_W, BOX_H, X0, TOP);
        let y_of = |n: &str| {
            order
                .iter()
                .position(|o| o == n)
                .map(|i| top + i as f64 * row)
        };
        let height = top * 2.0 + order.len() as f64 * row;
        let width = x0 * 2.0 + box_w;
        let mut s = format!(
            r#"<svg id="graph-svg" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="graph with the path taken">"#
        );
        s.push_str(r##"<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#777"/></marker><marker id="arrow-hot" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#e08a00"/></marker></defs>"##);
        for (a, b, label) in &self.edges {
            let (Some(ya), Some(yb)) = (y_of(a), y_of(b)) else {
                continue;
            };
            let hot = self.taken.contains(&(a.clone(), b.clone()));
            let (stroke, width_px, marker) = if hot {
                ("#e08a00", 2.5, "arrow-hot")
            } else {
                ("#999", 1.2, "arrow")
            };
            // kt-graph labels a route with the outcome declared for the target, or "route"
            let dash = match label.as_str() {
                "" | "fan-out" => "",
                "on error" => r#" stroke-dasharray="2,3""#,
                _ => r#" stroke-dasharray="5,3""#,
            };
            let (d, lx, ly, anchor) = edge_geometry(ya, yb, a == b);
            if !label.is_empty() {
                s.push_str(&format!(
                    r#"<text class="edge-label" x="{lx:.1}" y="{ly:.1}" text-anchor="{anchor}" font-family="sans-serif" font-size="10" fill="{stroke}">{}</text>"#,
                    esc(label)
                ));
            }
            s.push_str(&format!(
                r#"<path class="edge{}" d="{d}" fill="none" stroke="{stroke}" stroke-width="{width_px}"{dash} marker-end="url(#{marker})"><title>{} → {}{}</title></path>"#,
                if hot { " taken" } else { "" },
                esc(&display(a)),
                esc(&display(b)),
                if label.is_empty() { String::new() } else { format!(" ({})", esc(label)) }
            ));
        }
        for n in &order {
            let Some(y) = y_of(n) else { continue };
            let hot = self.visited.contains(n) || n == START;
            let (fill, stroke) = if hot {
                ("#fff3c4", "#e08a00")
            } else {
                ("#f4f4f4", "#aaa")
            };
            let rx = if n == START || n == END { 16 } else { 4 };
            s.push_str(&format!(
                r#"<g class="node{}" data-node="{}"><rect x="{x0}" y="{y}" width="{box_w}" height="{box_h}" rx="{rx}" fill="{fill}" stroke="{stroke}" stroke-width="1.5"/><text x="{}" y="{}" text-anchor="middle" font-family="monospace" font-size="13">{}</text></g>"#,
                if hot { " visited" } else { "" },
                esc(n),
                x0 + box_w / 2.0,
                y + box_h / 2.0 + 4.5,
                esc(&display(n))
            ));
        }
        s.push_str("</svg>");
        s
    }
}

/// The rows and boxes of the drawing, in SVG units.
const ROW: f64 = 56.0;
const BOX_W: f64 = 180.0;
const BOX_H: f64 = 32.0;
const X0: f64 = 260.0;
const TOP: f64 = 20.0;

/// An edge from the box at `ya` to the box at `yb`: its SVG path, and where its label goes (beside the curve's
/// outermost point) with the label's text anchor.
fn edge_geometry(ya: f64, yb: f64, self_loop: bool) -> (String, f64, f64, &'static str) {
    let (row, box_w, box_h, x0) = (ROW, BOX_W, BOX_H, X0);
    if self_loop {
        // a self-loop: a small arc on the left of the box
        (
            format!(
                "M{x0},{} C{},{} {},{} {x0},{}",
                ya + 6.0,
                x0 - 36.0,
                ya - 8.0,
                x0 - 36.0,
                ya + box_h + 8.0,
                ya + box_h - 6.0
            ),
            x0 - 30.0,
            ya + box_h / 2.0,
            "end",
        )
    } else if (yb - ya - row).abs() < 1e-6 {
        // the next node down: a short straight arrow
        (
            format!(
                "M{},{} L{},{}",
                x0 + box_w / 2.0,
                ya + box_h,
                x0 + box_w / 2.0,
                yb
            ),
            x0 + box_w / 2.0 + 6.0,
            (ya + box_h + yb) / 2.0 + 4.0,
            "start",
        )
    } else if yb > ya {
        let bulge = 30.0 + (yb - ya) / row * 14.0;
        let x = x0 + box_w;
        (
            format!(
                "M{x},{} C{},{} {},{} {x},{}",
                ya + box_h / 2.0,
                x + bulge,
                ya + box_h / 2.0,
                x + bulge,
                yb + box_h / 2.0,
                yb + box_h / 2.0
            ),
            x + bulge * 0.75 + 3.0,
            (ya + yb + box_h) / 2.0,
            "start",
        )
    } else {
        let bulge = 30.0 + (ya - yb) / row * 14.0;
        let x = x0;
        (
            format!(
                "M{x},{} C{},{} {},{} {x},{}",
                ya + box_h / 2.0,
                x - bulge,
                ya + box_h / 2.0,
                x - bulge,
                yb + box_h / 2.0,
                yb + box_h / 2.0
            ),
            x - bulge * 0.75 - 3.0,
            (ya + yb + box_h) / 2.0,
            "end",
        )
    }
}

fn display(n: &str) -> String {
    match n {
        START => "START".into(),
        END => "END".into(),
        other => other.to_string(),
    }
}

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_from_kt_graph_is_read_with_its_highlight() {
        let dot = r##"digraph G {
    rankdir=TB;
    "__start__" [label="START", shape=oval];
    "__end__" [label="END", shape=oval, style=filled, fillcolor="#fff3c4", color="#e08a00"];
    "plan" [shape=box, style=filled, fillcolor="#fff3c4", color="#e08a00"];
    "apply" [shape=box];
    "__start__" -> "plan" [color="#e08a00", penwidth=3];
    "plan" -> "apply" [style=dashed, label="route"];
    "plan" -> "__end__" [style=dashed, label="route", color="#e08a00", penwidth=3];
}"##;
        let g = parse_dot(dot);
        assert_eq!(g.nodes, vec!["__start__", "__end__", "plan", "apply"]);
        assert_eq!(g.visited, vec!["__end__", "plan"]);
        assert_eq!(g.edges.len(), 3);
        assert_eq!(g.edges[1], ("plan".into(), "apply".into(), "route".into()));
        assert_eq!(
            g.taken,
            vec![
                ("__start__".into(), "plan".into()),
                ("plan".into(), "__end__".into())
            ]
        );
        let svg = g.to_svg();
        assert!(svg.starts_with("<svg id=\"graph-svg\""));
        assert_eq!(
            svg.matches("class=\"node visited\"").count(),
            3,
            "START, plan and END"
        );
        assert_eq!(svg.matches("class=\"edge taken\"").count(), 2);
        assert_eq!(
            svg.matches("class=\"edge-label\"").count(),
            2,
            "route edges are labelled where they are drawn: {svg}"
        );
        assert!(svg.contains(">route</text>"), "{svg}");
    }

    #[test]
    fn a_route_is_drawn_with_the_outcome_its_graph_declares() {
        let dot = r##"digraph G {
    "validate" [shape=box];
    "breakdown" [shape=box];
    "prepare" [shape=box];
    "validate" -> "breakdown" [style=dashed, label="too big: break down"];
    "validate" -> "prepare" [style=dashed, label="valid", color="#e08a00", penwidth=3];
    "prepare" -> "apply" [style=bold, label="fan-out"];
}"##;
        let g = parse_dot(dot);
        assert_eq!(
            g.edges[1],
            ("validate".into(), "prepare".into(), "valid".into())
        );
        let svg = g.to_svg();
        assert!(svg.contains(">too big: break down</text>"), "{svg}");
        assert!(svg.contains(">valid</text>"), "{svg}");
        assert!(
            svg.contains("<title>validate → prepare (valid)</title>"),
            "{svg}"
        );
        assert_eq!(
            svg.matches(r#"stroke-dasharray="5,3""#).count(),
            2,
            "both routes dashed, the fan-out solid: {svg}"
        );
    }

    #[test]
    fn a_stage_the_run_went_on_from_does_not_draw_end_reached_and_the_running_node_is_drawn() {
        let mut g = GraphShape {
            nodes: vec![START.into(), "describe".into(), END.into()],
            edges: vec![
                (START.into(), "describe".into(), String::new()),
                ("describe".into(), END.into(), String::new()),
            ],
            visited: vec!["describe".into(), END.into()],
            taken: vec![
                (START.into(), "describe".into()),
                ("describe".into(), END.into()),
            ],
            note: None,
        };
        g.end_not_reached();
        assert_eq!(g.visited, ["describe"]);
        assert_eq!(g.taken, [(START.to_string(), "describe".to_string())]);
        g.add_running(&["dimensions".into(), "describe".into()]);
        assert!(g.to_svg().contains(r#"data-node="dimensions""#));
        assert!(
            g.edges
                .contains(&("describe".into(), "dimensions".into(), String::new()))
        );
        assert_eq!(g.nodes.len(), 4, "a node already drawn is not added again");
    }

    #[test]
    fn a_path_alone_draws_the_nodes_that_ran_in_order_and_ends_a_finished_run() {
        use kt_graph::{BranchId, CheckpointId, Task};
        let head = |id: u64, source, next: &[&str]| CheckpointHead {
            id: CheckpointId(id),
            parent: id.checked_sub(1).map(CheckpointId),
            branch: BranchId(0),
            step: id,
            fingerprint: String::new(),
            next: next.iter().map(|n| Task::single(*n)).collect(),
            timings: vec![],
            failures: vec![],
            source,
            created_ms: 0,
            snapshot: false,
        };
        let lineage = [
            head(0, CheckpointSource::Input, &["plan"]),
            head(1, CheckpointSource::Step, &["apply"]),
            head(2, CheckpointSource::Fork, &["apply"]),
            head(3, CheckpointSource::Step, &["plan"]),
            head(4, CheckpointSource::Step, &[]),
        ];
        let g = GraphShape::from_lineage(&lineage, &crate::steps::nodes_ran(&lineage));
        assert_eq!(g.nodes, [START, "plan", "apply", END]);
        assert_eq!(g.visited, ["plan", "apply", END]);
        let taken: Vec<(&str, &str)> = g
            .taken
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        assert_eq!(
            taken,
            [
                (START, "plan"),
                ("plan", "apply"),
                ("apply", "plan"),
                ("plan", END)
            ],
            "the fork ran nothing; each edge once"
        );
    }
}
