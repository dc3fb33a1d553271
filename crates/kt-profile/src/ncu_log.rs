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
        Ok(mut profiles) if !profiles.is_empty() => Ok(profiles.swap_remove(0)),
        Ok(_) => Err(no_launch()),
        Err(ProfileError::NoReport { .. }) => Err(ProfileError::NoReport {
            excerpt: tail(everything),
        }),
        Err(e) => Err(e),
    }
}

/// The last lines of some output, for an error message.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_eight_lines_that_say_something() {
        let text = (1..=12)
            .map(|i| format!("line {i}\n\n"))
            .collect::<String>();
        let t = tail(&text);
        assert!(t.starts_with("line 5") && t.ends_with("line 12"), "{t}");
    }
}
