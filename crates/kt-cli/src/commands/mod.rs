//! One module per subcommand; each exposes `<Name>Args` and `run(args)`. [`Cli::run`](crate::Cli::run)
//! dispatches to them.

pub mod analyze;
pub mod debug;
pub mod doctor;
mod dry_run;
pub mod experiment;
mod experiment_keys;
pub mod fork;
pub mod graph;
pub mod inspect;
mod interrupt;
mod kernel_input;
pub mod llm;
pub mod profile_launch;
pub mod replay;
pub mod resume;
mod resume_paths;
pub mod runs;
pub mod selftest;
mod store_check;
pub mod studio;
pub mod testgen;
mod tests_flag;
pub mod transform;
pub mod tune;
mod tune_checks;
pub mod tuner_worker;
mod unsandboxed;
pub mod verify;
