//! The machine around the tuner: what it offers (`cuda_probe`, for `kt doctor`), how kt starts itself again
//! (`self_command`), compute-sanitizer runs of one configuration (`sanitize`) and `kt selftest --gpu`
//! (`selftest`).

pub mod cuda_probe;
pub mod sanitize;
pub mod self_command;
pub mod selftest;
