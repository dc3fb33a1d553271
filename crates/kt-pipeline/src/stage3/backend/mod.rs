//! The GPU side of Stage 3 behind one trait: `tuning_backend` (what the step loop may ask of a GPU), the
//! real one over kt-tuner (`tuner_backend`, set up by `backend_config`; its tuner and tests in `session`; one
//! tuning job in `tuning_job`, whose result `tuned_outcome` reads; the original's outputs kept as the tests'
//! expected ones in `original_outputs`; the tuner started while Stages 1 and 2 run in `early_tuner`), the
//! scripted `fake_backend` that runs every path of every graph in CPU tests, and the verified values a
//! kernel file records (`config_record`).

pub(super) mod backend_config;
pub(crate) mod config_record;
pub(super) mod early_tuner;
pub(super) mod fake_backend;
mod original_outputs;
pub(super) mod session;
pub(super) mod tuned_outcome;
pub(super) mod tuner_backend;
pub(crate) mod tuning_backend;
pub(super) mod tuning_job;
