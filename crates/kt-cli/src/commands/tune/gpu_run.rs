//! The GPU part of `kt tune`: the tuning itself with its progress bar, `--sanitize` on the best
//! configuration, Kernel Tuner's results reused (`--kt-cache`) and exported (`--export-kt-*`).

use std::path::Path;

use anyhow::Context as _;
use kt_tuner::export;
use kt_tuner::export::import::KernelTunerCache;
use kt_tuner::input::{TestSource, load_tests};
use kt_tuner::model::args::{SizeChoice, TestSet};
use kt_tuner::session::{TunableKernel, TuneOptions, TuneResult, Tuner, TunerConfig};

use super::report::time_label;
use super::{Prepared, TuneArgs};

/// Starts the tuner and tunes, with a progress bar unless the result is printed as JSON.
pub(super) fn tune_on_gpu(
    config: &TunerConfig,
    prepared: &Prepared,
    options: &TuneOptions,
    json: bool,
) -> anyhow::Result<TuneResult> {
    let mut tuner = Tuner::new(config.clone()).context("kt tune measures on a GPU and could not start one (it needs an NVIDIA GPU, its driver and NVRTC; `kt doctor` checks them)")?;
    let bar = indicatif::ProgressBar::new(0);
    if !json {
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
    } else {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let basis = time_label(&prepared.tests);
    let result = tuner.tune(
        &prepared.loaded.kernel,
        &prepared.tests,
        options,
        &mut |p| {
            bar.set_length(p.total as u64);
            bar.set_position(p.done as u64);
            bar.set_message(format!(
                "{} {} best {}",
                p.config,
                p.verdict,
                p.best_ms
                    .map(|b| format!("{b:.4} ms ({basis})"))
                    .unwrap_or("-".into())
            ));
        },
    )?;
    bar.finish_and_clear();
    Ok(result)
}

/// `--sanitize`: compute-sanitizer on the best configuration at the sidecar's small test size.
pub(super) fn sanitize_best(
    args: &TuneArgs,
    config: &TunerConfig,
    prepared: &Prepared,
    result: &TuneResult,
) -> anyhow::Result<Option<kt_tuner::host::sanitize::SanitizerReport>> {
    let (Some(best), true) = (&result.best, args.sanitize) else {
        return Ok(None);
    };
    let source = match args.tests.as_deref() {
        Some(dir) => TestSource::Dir(dir),
        None => TestSource::Generate {
            size: SizeChoice::Test,
            count: 1,
        },
    };
    let small = load_tests(
        &prepared.loaded,
        source,
        &prepared.sizes,
        &prepared.space.configs,
    )?;
    Ok(Some(kt_tuner::host::sanitize::run_tools(
        config,
        &prepared.loaded.kernel,
        &best.config,
        &small,
    )?))
}

/// `--export-kt-cache` and `--export-kt-script`.
pub(super) fn export_kernel_tuner(
    args: &TuneArgs,
    prepared: &Prepared,
    result: &TuneResult,
) -> anyhow::Result<()> {
    if args.export_kt_cache.is_none() && args.export_kt_script.is_none() {
        return Ok(());
    }
    let export = export::KernelTunerExport::new(&prepared.loaded.kernel, &prepared.tests, result)?;
    if let Some(path) = &args.export_kt_cache {
        std::fs::write(path, export.cache_json()?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.export_kt_script {
        let dir = path.parent().unwrap_or(Path::new("."));
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .with_context(|| format!("{}: give a file name for the script", path.display()))?;
        export.write(dir, Some(&name))?;
    }
    Ok(())
}

/// Reads and checks `--kt-cache` before any GPU time is spent.
pub(super) fn read_prior(
    path: &Path,
    kernel: &TunableKernel,
    tests: &TestSet,
) -> anyhow::Result<KernelTunerCache> {
    let prior = KernelTunerCache::read(path)?;
    prior.check(kernel, &tests.tests)?;
    Ok(prior)
}

pub(super) fn report_reuse(prior: &KernelTunerCache, kernel: &TunableKernel, r: &TuneResult) {
    match prior.measurements_for(kernel, &r.device.name) {
        Some(m) => {
            let reused = r
                .measurements
                .iter()
                .filter(|x| x.from_cache && m.contains_key(&x.config))
                .count();
            println!(
                "{}: {reused} configuration(s) reused from Kernel Tuner's results on {}",
                prior.path.display(),
                prior.device_name
            );
            if r.best
                .as_ref()
                .is_some_and(|b| b.from_cache && m.contains_key(&b.config))
            {
                println!(
                    "the best configuration is one of Kernel Tuner's results: kt did not run or verify it here (`kt verify` does)"
                );
            }
        }
        None => println!(
            "{}: measured on {}, this GPU is {}: nothing reused, every configuration was run",
            prior.path.display(),
            prior.device_name,
            r.device.name
        ),
    }
}
