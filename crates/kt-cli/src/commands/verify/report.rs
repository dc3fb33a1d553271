//! What `kt verify` prints: the report per test and output, the sanitizer's findings, and the JSON form.

use kt_tuner::host::sanitize::SanitizerReport;
use kt_tuner::model::args::TestSet;
use kt_tuner::session::{Verdict, VerifyReport};

use super::pair::Pair;

/// What a verification found, for printing.
pub(super) struct Outcome<'a> {
    pub(super) report: &'a VerifyReport,
    pub(super) passed: bool,
    pub(super) described: &'a [String],
    pub(super) warnings: &'a [String],
    pub(super) sanitizer: Option<&'a SanitizerReport>,
}

pub(super) fn print_json(pair: &Pair, o: &Outcome) -> anyhow::Result<()> {
    let mut json = serde_json::to_value(o.report)?;
    if let Some(map) = json.as_object_mut() {
        map.insert("passed".into(), o.passed.into());
        map.insert("extra_tests".into(), serde_json::to_value(o.described)?);
        map.insert("warnings".into(), serde_json::to_value(o.warnings)?);
        map.insert(
            "host_code_left_out".into(),
            serde_json::json!({
                "reference": pair.reference.host_code_left_out,
                "candidate": pair.candidate.host_code_left_out,
            }),
        );
        map.insert("sanitizer".into(), serde_json::to_value(o.sanitizer)?);
        map.insert(
            "mutable_globals".into(),
            serde_json::to_value(&pair.candidate.parsed.mutable_globals)?,
        );
    }
    println!("{}", serde_json::to_string_pretty(&json)?);
    Ok(())
}

/// `gen1, gen2, gen3; odd (next primes): n=10009; large (fills the GPU): n=2621568`.
pub(super) fn describe_tests(tests: &TestSet, extras: &[String]) -> String {
    let seeded: Vec<&str> = tests
        .tests
        .iter()
        .map(|t| t.id.as_str())
        .filter(|id| !kt_tuner::input::default_tests::EXTRA_TEST_IDS.contains(id))
        .collect();
    std::iter::once(seeded.join(", "))
        .chain(extras.iter().cloned())
        .collect::<Vec<_>>()
        .join("; ")
}

pub(super) fn print_report(
    report: &VerifyReport,
    sanitizer: Option<&SanitizerReport>,
    passed: bool,
) {
    for t in &report.tests {
        println!(
            "test {}: {}",
            t.test,
            if t.verdict.is_ok() { "PASS" } else { "FAIL" }
        );
        for o in &t.outputs {
            println!(
                "  {} {}",
                if o.passed() { "pass" } else { "FAIL" },
                o.describe()
            );
        }
        for i in &t.inputs_modified {
            println!("  FAIL input {i} was modified by the candidate");
        }
        match &t.verdict {
            Verdict::CompileError { log } => println!("  compile error:\n{log}"),
            Verdict::Invalid { reason } | Verdict::Crashed { reason } => {
                println!("  {}: {reason}", t.verdict.short())
            }
            Verdict::Timeout { after_s } => println!("  timeout after {after_s:.1} s"),
            Verdict::KernelNotFound { .. }
            | Verdict::Nondeterministic { .. }
            | Verdict::OutOfBounds { .. }
            | Verdict::TimedRunDiffers { .. }
            | Verdict::ImpossibleTime { .. }
            | Verdict::CarriesState { .. } => println!("  FAIL {}", t.verdict.reason()),
            _ => {}
        }
    }
    for line in sanitizer.map(SanitizerReport::lines).unwrap_or_default() {
        println!("{line}");
    }
    println!(
        "{}",
        if passed {
            "all tests passed"
        } else {
            "verification FAILED"
        }
    );
}
