//! What `kt tune` prints: the result as a table or as JSON (with what each time means), the verdicts that
//! caught a kernel gaming its timing, and the note when only the default launch runs correctly.

use std::collections::BTreeMap;
use std::path::Path;

use kt_tuner::export;
use kt_tuner::model::args::TestSet;
use kt_tuner::session::TuneResult;

use super::{Prepared, TuneArgs};

pub(super) fn print_result(
    args: &TuneArgs,
    prepared: &Prepared,
    result: &TuneResult,
    sanitizer: Option<&kt_tuner::host::sanitize::SanitizerReport>,
) -> anyhow::Result<()> {
    if !args.json {
        print_summary(result, &prepared.tests);
        for line in sanitizer.iter().flat_map(|s| s.lines()) {
            println!("{line}");
        }
        return Ok(());
    }
    let mut json = serde_json::to_value(result)?;
    if let Some(o) = json.as_object_mut() {
        o.insert("time_basis".into(), time_basis(&prepared.tests));
        o.insert("sanitizer".into(), serde_json::to_value(sanitizer)?);
        o.insert(
            "host_code_left_out".into(),
            serde_json::to_value(&prepared.loaded.host_code_left_out)?,
        );
        o.insert(
            "derived_restrictions".into(),
            serde_json::to_value(prepared.space.derived.lines())?,
        );
    }
    println!("{}", serde_json::to_string_pretty(&json)?);
    Ok(())
}

/// One line when the default launch is the only configuration that verified (a kernel that works at one
/// launch only): the result is that launch, and `kt transform` is what makes the kernel tunable.
pub(super) fn default_only_line(r: &TuneResult, file: &Path) -> Option<String> {
    let best = r.best.as_ref()?;
    let reference = r.reference.as_ref()?;
    let others_ok = r
        .measurements
        .iter()
        .any(|m| m.verdict.is_ok() && m.config != reference.config);
    (best.config == reference.config && !others_ok).then(|| {
        format!(
            "note: `{}` is not tunable as written: only its default launch {} runs correctly ({} other configuration(s) tried), so that launch is the verified result; `kt transform {}` makes it tunable",
            r.kernel_name,
            reference.config,
            r.measurements.iter().filter(|m| m.config != reference.config).count(),
            file.display()
        )
    })
}

/// What each time in kt's result is, for `--json` readers.
pub(super) fn time_basis(tests: &TestSet) -> serde_json::Value {
    let first = tests.tests.first().map(|t| t.id.as_str()).unwrap_or("-");
    serde_json::json!({
        "objective": export::objective_basis(tests),
        "timing": format!("the launches of test `{first}`, one launch each (ms)"),
        "per_test_ms": "each test's median launch (ms), in test order",
        "tests": tests.tests.iter().map(|t| t.id.clone()).collect::<Vec<_>>(),
    })
}

/// A time's unit in a few words: one launch, or a sum over the tests.
pub(super) fn time_label(tests: &TestSet) -> String {
    match tests.tests.len() {
        1 => "one launch".into(),
        n => format!("sum of {n} tests"),
    }
}

fn print_summary(r: &TuneResult, tests: &TestSet) {
    println!(
        "device: {} ({} SMs, sm_{}{}), strategy {:?}, {} configs in the space, {} measured",
        r.device.name,
        r.device.sm_count,
        r.device.compute_capability.0,
        r.device.compute_capability.1,
        r.strategy,
        r.space_size,
        r.measurements.len()
    );
    let mut failed: BTreeMap<&str, usize> = BTreeMap::new();
    for m in &r.measurements {
        if !m.verdict.is_ok() {
            *failed.entry(m.verdict.short()).or_default() += 1;
        }
    }
    if !failed.is_empty() {
        println!("failed configurations: {failed:?}");
    }
    let row = |label: &str, m: &kt_tuner::Measurement| {
        println!(
            "{:<10} {:<40} {:>10} {:>10} {:>10} {:>8} {:>5}",
            label,
            m.config.to_string(),
            m.objective_ms()
                .map(|t| format!("{t:.4}"))
                .unwrap_or("-".into()),
            m.gbps.map(|g| format!("{g:.1}")).unwrap_or("-".into()),
            m.gflops.map(|g| format!("{g:.1}")).unwrap_or("-".into()),
            m.percent_of_peak
                .map(|p| format!("{p:.1}%"))
                .unwrap_or("-".into()),
            m.registers.map(|r| r.to_string()).unwrap_or("-".into()),
        );
    };
    println!(
        "{:<10} {:<40} {:>10} {:>10} {:>10} {:>8} {:>5}",
        "", "config", "ms", "GB/s", "GFLOP/s", "of peak", "regs"
    );
    if let Some(d) = &r.reference {
        row("default", d);
    }
    if let Some(b) = &r.best {
        row("best", b);
    }
    println!(
        "ms: {}; GB/s and GFLOP/s: one launch of test `{}`",
        export::objective_basis(tests),
        tests.tests.first().map(|t| t.id.as_str()).unwrap_or("-")
    );
    if let Some(s) = r.speedup() {
        println!(
            "speedup over the default launch: {s:.3}x ({})",
            time_label(tests)
        );
    }
    if let Some(note) = r.slower_best_note() {
        println!("{note}");
    }
    print_peak_basis(r);
    // a share of peak above 100 % is printed as measured; what it means, from the tuner
    for (label, m) in [("default", &r.reference), ("best", &r.best)] {
        if let Some(note) = m.as_ref().and_then(|m| m.peak_note.as_deref()) {
            println!("{label}: {note}");
        }
    }
    print_gaming_verdicts(r);
    let p = &r.phases;
    println!(
        "phases (ms): context {:.0}, upload {:.0}, reference {:.0}, benchmark {:.0}, compile wait {:.0}, compile cpu {:.0}, total {:.0}",
        p.context_ms,
        p.upload_ms,
        p.reference_ms,
        p.benchmark_ms,
        p.compile_wait_ms,
        p.compile_cpu_ms,
        p.total_ms
    );
    if p.gpu_turns_ms >= 1.0 {
        println!(
            "waited {:.1} s for turns on the GPU while other kt processes used it (their work never overlaps kt's timings; KT_GPU_TURNS=off to share it freely)",
            p.gpu_turns_ms / 1e3
        );
    }
    if let Some(line) = efficiency_line(r.efficiency.as_ref(), &r.measurements) {
        println!("{line}");
    }
}

/// The tuning efficiency and how many configurations lost the race; None for a result without it.
fn efficiency_line(
    efficiency: Option<&kt_record::TuningEfficiency>,
    measurements: &[kt_tuner::Measurement],
) -> Option<String> {
    let raced = measurements
        .iter()
        .filter(|m| m.timing.as_ref().is_some_and(|t| t.aborted_early))
        .count();
    efficiency.map(|e| {
        format!(
            "{}; {raced} configuration(s) stopped early, having lost the race against the best",
            e.describe()
        )
    })
}

/// What `% of peak` is measured against.
fn print_peak_basis(r: &TuneResult) {
    let memory = kt_tuner::check::floor::Ceilings::from_figures(
        r.theoretical_peaks.map(|t| t.bandwidth_gb_s),
        r.peak_gbps,
        0,
    );
    let fp32 = kt_tuner::check::floor::Ceiling::confirm(
        r.theoretical_peaks.map(|t| t.fp32_gflop_s),
        r.peak_fp32_gflops,
        "GFLOP/s",
        "kt's FMA kernel",
    );
    if memory.bandwidth_gbps.is_some() || fp32.value.is_some() {
        println!("% of peak against {}; {}", memory.basis, fp32.basis);
    }
}

/// A line each for the configurations that gamed their measurement.
fn print_gaming_verdicts(r: &TuneResult) {
    for m in r.measurements.iter().filter(|m| {
        use kt_tuner::Verdict as V;
        // the verdicts that name a kernel gaming its measurement, each worth a line of its own
        matches!(
            m.verdict,
            V::Nondeterministic { .. }
                | V::OutOfBounds { .. }
                | V::TimedRunDiffers { .. }
                | V::ImpossibleTime { .. }
                | V::CarriesState { .. }
        )
    }) {
        println!("{}: {}", m.config, m.verdict.reason());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use kt_tuner::model::args::KernelTest;

    fn tests(n: usize) -> TestSet {
        TestSet {
            tests: (0..n)
                .map(|i| KernelTest {
                    id: format!("t{i}"),
                    args: vec![],
                    tolerances: Default::default(),
                    constants: Vec::new(),
                })
                .collect(),
        }
    }

    #[test]
    fn the_efficiency_line_counts_the_configurations_that_lost_the_race() {
        use kt_tuner::{Config, Measurement, Verdict};
        let mut lost = Measurement::synthetic(Config::ints([("b", 1)]), Verdict::Ok, Some(4.0));
        if let Some(t) = lost.timing.as_mut() {
            t.aborted_early = true;
        }
        let best = Measurement::synthetic(Config::ints([("b", 2)]), Verdict::Ok, Some(1.0));
        let gpu = [
            kt_record::GpuTime::of_samples(&[1.0, 1.0, 1.0], false),
            kt_record::GpuTime::of_samples(&[4.0], true),
        ];
        let e = kt_record::TuningEfficiency::new(gpu, 14.0);
        let line = efficiency_line(Some(&e), &[lost, best]).unwrap();
        assert!(line.starts_with("tuning efficiency 50.0 %"), "{line}");
        assert!(
            line.contains("; 1 configuration(s) stopped early"),
            "{line}"
        );
        assert_eq!(efficiency_line(None, &[]), None);
    }

    #[test]
    fn every_time_says_whether_it_is_one_launch_or_a_sum_over_tests() {
        assert_eq!(time_label(&tests(1)), "one launch");
        assert_eq!(time_label(&tests(3)), "sum of 3 tests");
        let basis = time_basis(&tests(3));
        assert!(
            basis["objective"]
                .as_str()
                .unwrap()
                .starts_with("the sum over 3 tests (t0, t1, t2)"),
            "{basis}"
        );
        assert_eq!(
            basis["timing"],
            "the launches of test `t0`, one launch each (ms)"
        );
    }
}
