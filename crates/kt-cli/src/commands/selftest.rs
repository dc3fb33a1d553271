//! `kt selftest --gpu`: compile, launch, verify and time suite kernels and deliberately broken ones.

use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use kt_tuner::session::TunerConfig;

#[derive(Debug, Args)]
pub struct SelftestArgs {
    /// Run the GPU checks (needs an NVIDIA GPU, its driver and NVRTC).
    #[arg(long)]
    pub gpu: bool,
    /// Print the checks as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: SelftestArgs) -> anyhow::Result<ExitCode> {
    if !args.gpu {
        anyhow::bail!(
            "only the GPU self-test exists so far: run `kt selftest --gpu` on a machine with an NVIDIA GPU"
        );
    }
    let checks = kt_tuner::host::selftest::run(TunerConfig::default())
        .context("the GPU self-test could not start (`kt doctor` shows what is missing)")?;
    let failed = checks.iter().filter(|c| !c.passed).count();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&checks)?);
    } else {
        for c in &checks {
            println!(
                "{} {}: {}",
                if c.passed { "PASS" } else { "FAIL" },
                c.name,
                c.detail
            );
        }
        println!("{} passed, {} failed", checks.len() - failed, failed);
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
