//! `kt __tuner-worker` (hidden): the GPU worker process kt-tuner starts; it is not meant to be run by hand.

use std::process::ExitCode;

use clap::Args;

#[derive(Debug, Args)]
pub struct TunerWorkerArgs {}

pub fn run(_args: TunerWorkerArgs) -> anyhow::Result<ExitCode> {
    kt_tuner::worker::serve()?;
    Ok(ExitCode::SUCCESS)
}
