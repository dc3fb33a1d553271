//! kt-studio: `kt studio`, a local web application to watch, inspect and steer kt runs — what LangGraph
//! Studio is to LangGraph, over kt's own run records.
//!
//! The server ([`server`]) reads a runs directory through kt-runs (the same reading as `kt runs` and
//! `kt debug`): the list of runs and experiments, a run's graph with the path taken and the node running now
//! ([`run_view`], what the page draws first), then its sections: LLM calls, kernel versions, tuning
//! ([`sections`], [`tuning_progress`], [`charts`]) and roofline; its checkpoint history, state and per-field
//! diffs, prompts and raw answers. Each part's build time is logged at debug level ([`timing`]; kept per run
//! while its files are unchanged: [`view_cache`]). A run's files are watched cheaply
//! ([`live`]) and changes are pushed to the page as server-sent events, so a run started from the CLI in
//! another terminal updates live. Steering ([`steer`]) is the same operation as the CLI command it mirrors.
//! Access ([`access`]) is safe by default: loopback only unless told otherwise with a token, a per-session
//! token on every change, read-only mode, and no credentials on the page ([`redact`]).
//!
//! It deliberately does not start transforms (`kt transform` does), keep its own database (the run's own
//! store is the truth), or load anything from the internet: the page ([`assets`]) is built into the binary.

#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod access;
pub mod assets;
pub mod charts;
pub mod error;
pub mod experiments;
pub mod jobs;
pub mod live;
pub mod redact;
pub mod run_view;
pub mod sections;
pub mod server;
pub mod steer;
pub mod timing;
pub mod tuning_progress;
pub mod view_cache;

pub use error::StudioError;
pub use server::{StudioConfig, serve};
