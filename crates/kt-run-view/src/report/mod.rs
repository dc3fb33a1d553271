//! `kt runs report RUN --html`: one self-contained HTML page per run (inline CSS and SVG, no script, no
//! external resource) — the graph with the path taken, a timeline of nodes, every prompt and answer, every
//! kernel version with its diff against the previous one, tuning tables and a chart of speedup per step.
//!
//! [`ReportInputs::collect`] gathers everything from the run directory; [`render_html`] only formats, so the
//! page can be tested on inputs built in code.

mod chart;
mod collect;
mod graph_svg;
mod html;
mod notice;
mod roofline;

pub use chart::StepPoint;
pub use collect::{
    KernelFile, LlmExchange, PathGraph, ReportInputs, TuningRow, is_stage3, path_graph,
};
pub use graph_svg::{GraphShape, parse_dot};
pub use html::render_html;
