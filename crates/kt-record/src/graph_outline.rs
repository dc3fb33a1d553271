//! `graph.json`: the shape of the run's Stage 3 graph (the strategy's), saved when that graph first starts so
//! that whoever draws the run later (`kt runs report`, kt studio) reads it instead of rebuilding the graph from
//! the strategy — which may have changed, or need the pipeline to build. Runs recorded before it existed have
//! none: their readers draw the path the checkpoints show, and say so.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::RecordError;
use crate::layout::write_json;
use crate::lenient::or_default;

/// One edge of the graph and the label a drawing gives it: a route's outcome (`planned`), `fan-out`,
/// `on error`, or empty for an edge that always follows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutlineEdge {
    pub from: String,
    pub to: String,
    #[serde(default)]
    pub label: String,
}

/// A compiled graph's nodes and edges, and which of the run's graphs it is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GraphOutline {
    /// The graph run it belongs to, below the run's id (`stage3`).
    #[serde(deserialize_with = "or_default")]
    pub stage: String,
    /// Every node, START (`__start__`) and END (`__end__`) first.
    #[serde(deserialize_with = "or_default")]
    pub nodes: Vec<String>,
    #[serde(deserialize_with = "or_default")]
    pub edges: Vec<OutlineEdge>,
}

impl GraphOutline {
    /// The outline at `path`; None when the run has none (recorded before outlines were saved) or it is not
    /// one.
    pub fn read(path: &Path) -> Option<GraphOutline> {
        let text = std::fs::read_to_string(path).ok()?;
        serde_json::from_str::<GraphOutline>(&text)
            .ok()
            .filter(|g| !g.nodes.is_empty())
    }

    /// Writes the outline to `path` atomically.
    pub fn write(&self, path: &Path) -> Result<(), RecordError> {
        write_json(path, self)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn an_outline_round_trips_and_a_missing_or_empty_one_reads_as_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("graph.json");
        assert_eq!(GraphOutline::read(&path), None);
        let outline = GraphOutline {
            stage: "stage3".into(),
            nodes: vec!["__start__".into(), "__end__".into(), "plan".into()],
            edges: vec![OutlineEdge {
                from: "plan".into(),
                to: "__end__".into(),
                label: "done".into(),
            }],
        };
        outline.write(&path).unwrap();
        assert_eq!(GraphOutline::read(&path), Some(outline));
        std::fs::write(&path, r#"{"stage": "stage3", "nodes": "plan"}"#).unwrap();
        assert_eq!(GraphOutline::read(&path), None, "no nodes: nothing to draw");
    }
}
