//! The Stage 3 graph nodes, one concept per file. Each node is a struct holding the shared
//! [`Stage3Context`](crate::stage3::Stage3Context) and implementing `kt_graph::Node`; routing between them lives in
//! [`crate::stage3::steps::graph`].

mod baseline;
mod candidate;
mod explicit_steps;
mod finish;
mod kernel_files;
mod launch_timing;
mod planning;
mod profile;
mod select;
mod step_gate;

pub(crate) use baseline::Baseline;
pub(crate) use candidate::{Apply, Prepare};
pub(crate) use explicit_steps::{NextExplicit, WorthItCheck};
pub(crate) use finish::Finish;
pub(crate) use planning::{Breakdown, NextStep, Planner, Validate};
pub(crate) use select::Select;
