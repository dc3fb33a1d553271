//! `kt tune --compile-only`: the default configuration compiled for an architecture as the tuner would
//! compile it, with no GPU.

use std::process::ExitCode;

use anyhow::Context as _;
use kt_tuner::model::args::TestSet;
use kt_tuner::session::TunableKernel;

/// `--compile-only`: the default configuration compiled for `arch` as the tuner would compile it.
pub(super) fn compile_only(
    kernel: &TunableKernel,
    tests: &TestSet,
    configs: &[kt_tuner::model::space::Config],
    arch: &str,
) -> anyhow::Result<ExitCode> {
    let cc = kt_tuner::compile::compile_check::parse_arch(arch)
        .with_context(|| format!("--arch {arch}: expected sm_XY, e.g. sm_90"))?;
    let config = kernel
        .reference
        .clone()
        .or_else(|| configs.first().cloned())
        .context("no configuration to compile: give --param or a sidecar with default_block")?;
    let scalars = tests.tests.first().map(|t| t.scalars()).unwrap_or_default();
    let nvcc = kt_tuner::compile::nvcc::find();
    match kt_tuner::compile::compile_check::compile_configuration(
        kernel,
        &config,
        &scalars,
        cc,
        nvcc.as_deref(),
    )? {
        Ok(c) => {
            let compiler = if c.log.starts_with(kt_tuner::compile::nvcc::NVCC_LOG_PREFIX) {
                "nvcc"
            } else {
                "NVRTC"
            };
            println!(
                "compiled `{}` at {config} for sm_{}{} with {compiler}: {} bytes of CUBIN in {:.0} ms{}",
                kernel.kernel_name,
                cc.0,
                cc.1,
                c.cubin.len(),
                c.ms,
                c.lowered_name
                    .map(|s| format!(", symbol {s}"))
                    .unwrap_or_default()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(f) => {
            eprintln!("{}", f.log);
            eprintln!(
                "error: `{}` did not compile at {config} for sm_{}{}",
                kernel.kernel_name, cc.0, cc.1
            );
            Ok(ExitCode::FAILURE)
        }
    }
}
