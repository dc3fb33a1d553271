//! What the LLM is told when its kernel failed, one wording per kind of failure. A wrong answer is reported as
//! a wrong answer (which test, which output, the first mismatches), never as "did not compile"; a hang is
//! reported as a hang. Long compiler logs are cut to their head, where the first error is.

use crate::stage3::backend::tuning_backend::Outcome;

/// Compiler logs are cut to this many characters: the first errors matter, the cascade after them does not.
const MAX_LOG_CHARS: usize = 3000;

/// The message that sends a failed candidate back to the LLM; `None` for a verified one.
pub fn failure_feedback(outcome: &Outcome) -> Option<String> {
    Some(match outcome {
        Outcome::Verified { .. } => return None,
        Outcome::CompileError { config, log } => format!(
            "The kernel did not compile (configuration {config}). Compiler output:\n{}",
            cut(log, MAX_LOG_CHARS)
        ),
        Outcome::WrongAnswer {
            config,
            test,
            output,
            mismatches,
            mismatched,
            total,
            detail,
        } => {
            let first: Vec<String> = mismatches
                .iter()
                .take(5)
                .map(|m| format!("index {}: expected {}, got {}", m.index, m.expected, m.got))
                .collect();
            let what = if first.is_empty() {
                format!("on test {test}: {detail}")
            } else {
                format!(
                    "on test {test}, output `{output}` differs from the original kernel's in {mismatched} of {total} \
                     elements. First mismatches: {}",
                    first.join("; ")
                )
            };
            format!(
                "The kernel compiled and ran, but computed wrong results (configuration {config}): {what}. Check \
                 index arithmetic, bounds checks for sizes that are not multiples of the tile or block size, and \
                 synchronisation."
            )
        }
        Outcome::Timeout { config, seconds } => format!(
            "The kernel did not finish within {seconds:.1} s (configuration {config}) and was killed: it probably \
             hangs (a loop that never ends, or __syncthreads() inside a branch that not all threads take)."
        ),
        Outcome::Crashed { config, detail } => format!(
            "The kernel crashed while running (configuration {config}): {detail}. Look for out-of-bounds reads or \
             writes, especially in the last, partial tiles."
        ),
        Outcome::NoValidConfig { detail } => format!(
            "No configuration of the kernel could run: {detail}. Offer parameter values that fit the device (at most \
             1024 threads per block, 48 KB of static shared memory) and restrictions that leave some configurations."
        ),
    })
}

/// The first `max` characters of `text`, with a note when something was cut.
pub(crate) fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max).collect();
    format!(
        "{head}\n[... {} more characters cut]",
        text.chars().count() - max
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::stage3::backend::tuning_backend::Mismatch;

    #[test]
    fn wrong_answer_names_test_output_and_mismatches_and_never_says_compile() {
        let o = Outcome::WrongAnswer {
            config: "block_size_x=16".into(),
            test: "t2".into(),
            output: "C".into(),
            mismatches: vec![Mismatch {
                index: 4097,
                expected: "1.25".into(),
                got: "NaN".into(),
            }],
            mismatched: 3,
            total: 100,
            detail: String::new(),
        };
        let msg = failure_feedback(&o).unwrap();
        assert!(
            msg.contains("test t2")
                && msg.contains("`C`")
                && msg.contains("index 4097: expected 1.25, got NaN")
        );
        assert!(!msg.contains("did not compile"), "{msg}");
    }

    #[test]
    fn compile_error_carries_the_log_cut_to_its_head() {
        let log = format!("error: x undeclared\n{}", "noise ".repeat(2000));
        let msg = failure_feedback(&Outcome::CompileError {
            config: "a=1".into(),
            log,
        })
        .unwrap();
        assert!(
            msg.contains("did not compile")
                && msg.contains("x undeclared")
                && msg.contains("more characters cut")
        );
    }

    #[test]
    fn hang_is_reported_as_a_hang() {
        let msg = failure_feedback(&Outcome::Timeout {
            config: "a=1".into(),
            seconds: 10.0,
        })
        .unwrap();
        assert!(msg.contains("did not finish") && msg.contains("hangs"));
    }
}
