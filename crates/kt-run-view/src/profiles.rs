//! The profiles of a run in words, for `kt runs show` and the HTML report: what binds each profiled kernel
//! (the naive one, then each accepted step's), the largest stall, and what profiling cost in wall time.

use kt_profile::Binding;
use kt_record::ProfileRecord;

/// One line per profiled kernel, after a heading with the cost; one line saying why when there are none.
/// `run_seconds` is the run's wall time (for the overhead share). Empty when nothing was profiled.
pub fn profile_lines(records: &[ProfileRecord], run_seconds: Option<f64>) -> Vec<String> {
    if records.is_empty() {
        return Vec::new();
    }
    let measured: Vec<&ProfileRecord> = records.iter().filter(|r| r.profile.is_some()).collect();
    if measured.is_empty() {
        let why = records
            .iter()
            .find_map(|r| r.skipped.as_deref())
            .unwrap_or("no reason was recorded");
        return vec![format!("profiles off: {why}")];
    }
    let seconds: f64 = records.iter().map(|r| r.seconds).sum();
    let share = run_seconds
        .filter(|s| *s > 0.0)
        .map(|s| format!(" = {:.1}% of the run's wall time", 100.0 * seconds / s))
        .unwrap_or_default();
    let cached = measured.iter().filter(|r| r.from_cache).count();
    let reused = if cached > 0 {
        format!(", {cached} of them from the profile cache")
    } else {
        String::new()
    };
    let mut lines = vec![format!(
        "profiles (hardware counters, {} kernel(s){reused}, {seconds:.1} s{share}):",
        measured.len()
    )];
    for r in records {
        let what = match &r.profile {
            Some(p) => {
                let stall = p
                    .stalls
                    .first()
                    .map(|s| format!("; warps stall most on {}", s.reason.describe()))
                    .unwrap_or_default();
                format!("{}{stall}", Binding::of(p).sentence())
            }
            None => format!(
                "not profiled: {}",
                r.skipped.as_deref().unwrap_or("no reason was recorded")
            ),
        };
        let name = if r.is_naive() {
            "naive kernel"
        } else {
            r.step.as_str()
        };
        lines.push(format!("  {name:<36} {what}"));
    }
    lines
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn record(step: &str, profiled: bool, seconds: f64) -> ProfileRecord {
        let profile = profiled.then(|| {
            kt_profile::KernelProfile::parse(include_str!(
                "../../kt-profile/tests/fixtures/captured-matmul-naive-h100.csv"
            ))
            .unwrap()
        });
        ProfileRecord {
            step: step.into(),
            params: BTreeMap::new(),
            summary: None,
            skipped: (!profiled).then(|| "ncu was not found".to_string()),
            profile,
            seconds,
            from_cache: false,
        }
    }

    #[test]
    fn each_profiled_kernel_gets_a_line_with_what_binds_it_and_the_cost_is_stated() {
        let lines = profile_lines(
            &[record("original", true, 4.0), record("tiling", true, 6.0)],
            Some(200.0),
        );
        assert_eq!(lines.len(), 3, "{lines:#?}");
        assert!(
            lines[0].contains("2 kernel(s), 10.0 s = 5.0% of the run"),
            "{}",
            lines[0]
        );
        assert!(lines[1].contains("naive kernel"), "{}", lines[1]);
        assert!(
            lines[2].contains("tiling") && lines[2].contains("bound"),
            "{}",
            lines[2]
        );
    }

    #[test]
    fn profiles_reused_from_the_cache_are_counted() {
        let mut reused = record("original", true, 0.01);
        reused.from_cache = true;
        let lines = profile_lines(&[reused, record("tiling", true, 3.0)], None);
        assert!(
            lines[0].contains("2 kernel(s), 1 of them from the profile cache, 3.0 s"),
            "{}",
            lines[0]
        );
    }

    #[test]
    fn without_profiles_one_line_says_why() {
        let lines = profile_lines(
            &[record("original", false, 0.0), record("tiling", false, 0.0)],
            Some(10.0),
        );
        assert_eq!(lines, vec!["profiles off: ncu was not found".to_string()]);
        assert!(profile_lines(&[], None).is_empty());
    }
}
