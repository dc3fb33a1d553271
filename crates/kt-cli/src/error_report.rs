//! How an error reaches the terminal: `error: …` and its causes, each said once.

/// `error: …` and one `caused by: …` line per cause, leaving out a cause whose text the lines above already say
/// (many errors name their cause in their own message; printing it again read as "X: X"). Control characters
/// are escaped: an error may quote a generator's exception or an LLM's answer, which must not reach the terminal
/// as escape sequences.
pub(crate) fn error_report(err: &anyhow::Error) -> String {
    kt_record::terminal_safe(&report_text(err)).into_owned()
}

fn report_text(err: &anyhow::Error) -> String {
    let mut text = format!("error: {err}");
    let mut said = err.to_string();
    for cause in err.chain().skip(1) {
        let cause = cause.to_string();
        if said.contains(&cause) {
            continue;
        }
        text.push_str(&format!("\n  caused by: {cause}"));
        said.push_str(&cause);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_in_an_error_reach_the_terminal_as_text() {
        let err = anyhow::anyhow!("the generator raised:\n\x1b]52;c;ZXZpbA==\x07");
        let report = error_report(&err);
        assert_eq!(
            report,
            "error: the generator raised:\n\\x1b]52;c;ZXZpbA==\\x07"
        );
    }

    #[derive(Debug)]
    struct Spawn {
        source: std::io::Error,
    }

    impl std::fmt::Display for Spawn {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "could not start `python`: {}", self.source)
        }
    }

    impl std::error::Error for Spawn {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.source)
        }
    }

    #[test]
    fn a_cause_the_message_already_names_is_not_repeated() {
        let inner = std::io::Error::other("No such file or directory");
        let err = anyhow::Error::new(Spawn { source: inner }).context("stage 2 failed");
        let report = error_report(&err);
        assert_eq!(
            report,
            "error: stage 2 failed\n  caused by: could not start `python`: No such file or directory"
        );
    }
}
