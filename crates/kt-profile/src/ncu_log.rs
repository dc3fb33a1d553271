//! What a finished ncu run left: its log (the raw CSV report, with ncu's own messages) and the program's
//! output, turned into the one profiled launch or an error that says what went wrong.

use crate::error::ProfileError;
use crate::profile::KernelProfile;

/// The profile of `kernel` (ncu's filter `filter`) from ncu's `report`; `everything` (the report and the
/// program's output) is searched for ncu's messages.
pub(crate) fn interpret(
    kernel: &str,
    filter: &str,
    everything: &str,
    report: &str,
) -> Result<KernelProfile, ProfileError> {
    if everything.contains("ERR_NVGPUCTRPERM") {
        return Err(ProfileError::CountersRestricted);
    }
    let no_launch = || ProfileError::NoKernelProfiled {
        kernel: kernel.to_string(),
        regex: filter.to_string(),
        excerpt: tail(everything),
    };
    if everything.contains("No kernels were profiled") {
        return Err(no_launch());
    }
    match KernelProfile::parse_all(report) {
        // a warm-up launch (see `command.rs`) is profiled too: the kernel's own row is the other one
        Ok(profiles) => profiles
            .into_iter()
            .find(|p| !is_warmup(&p.kernel))
            .ok_or_else(no_launch),
        Err(ProfileError::NoReport { .. }) => Err(ProfileError::NoReport {
            excerpt: tail(everything),
        }),
        Err(e) => Err(e),
    }
}

/// Whether ncu's kernel name (function name, maybe with its parameters) is the warm-up kernel's.
fn is_warmup(name: &str) -> bool {
    name.split('(').next().map(str::trim) == Some(crate::command::WARMUP_KERNEL)
}

/// The last lines of some output, for an error message.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPTURED: &str = include_str!("../tests/fixtures/captured-matmul-naive-h100.csv");

    #[test]
    fn the_warm_up_kernels_row_is_skipped_wherever_it_comes() {
        let lines: Vec<&str> = CAPTURED.lines().collect();
        let data = lines
            .iter()
            .position(|l| l.starts_with("\"0\""))
            .expect("a data row");
        let warmup = lines[data].replacen("\"matmul(", "\"kt_ncu_warmup(", 1);
        assert_ne!(warmup, lines[data], "the fixture's kernel is named matmul");
        let second = lines[data].replacen("\"0\"", "\"1\"", 1);
        let mut both = lines[..data].to_vec();
        both.push(&warmup);
        both.push(&second);
        both.extend(&lines[data + 1..]);
        let report = both.join("\n");
        let p = interpret("matmul", "regex:^matmul$", &report, &report).unwrap();
        assert!(p.kernel.starts_with("matmul"), "{}", p.kernel);
        // only the warm-up profiled: the kernel never ran under the profiler
        let mut alone = lines[..data].to_vec();
        alone.push(&warmup);
        let report = alone.join("\n");
        let err = interpret("matmul", "regex:^matmul$", &report, &report).unwrap_err();
        assert!(
            matches!(err, ProfileError::NoKernelProfiled { .. }),
            "{err}"
        );
    }

    #[test]
    fn the_tail_keeps_the_last_eight_lines_that_say_something() {
        let text = (1..=12)
            .map(|i| format!("line {i}\n\n"))
            .collect::<String>();
        let t = tail(&text);
        assert!(t.starts_with("line 5") && t.ends_with("line 12"), "{t}");
    }
}
