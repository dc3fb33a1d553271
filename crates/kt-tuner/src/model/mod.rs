//! The tuner's nouns, the floor everything else stands on: a kernel's arguments and tests (`args`), where an
//! array's bytes come from (`array_source`), the
//! `__constant__` symbols a test fills (`constants`), its
//! tunable parameters and their values (`space`, `param_value`), the expressions restrictions and sizes are
//! written in (`expr`), the launch a configuration makes (`geometry`, `block_names`), the kernel as the tuner
//! tunes it (`tunable_kernel`), how far an output may be off (`tolerance`) and what a tuning hands back
//! (`outcome`). Nothing here compiles, launches or reads a GPU.

pub mod args;
pub mod array_source;
pub mod block_names;
pub mod constants;
pub mod expr;
pub mod geometry;
pub mod outcome;
pub mod param_value;
pub mod space;
pub mod tolerance;
pub mod tunable_kernel;
