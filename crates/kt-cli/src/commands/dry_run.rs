//! `--dry-run` of `kt tune`, `kt verify`, `kt transform` and `kt experiment run`: what the command would do,
//! checked as far as it can be without a GPU or an LLM call. Bad input exits 2, as a usage error does.

use std::process::ExitCode;

/// The exit status of a dry run whose input was refused.
pub(crate) const EXIT_BAD_INPUT: u8 = 2;

/// Prints what would run (stdout) and exits 0, or prints the error with its causes (stderr) and exits 2.
pub(crate) fn report(checked: anyhow::Result<String>) -> ExitCode {
    match checked {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{}", crate::error_report::error_report(&e));
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_input_exits_2_and_a_checked_one_0() {
        assert_eq!(report(Ok("would run".into())), ExitCode::SUCCESS);
        assert_eq!(
            report(Err(anyhow::anyhow!("bad restriction"))),
            ExitCode::from(EXIT_BAD_INPUT)
        );
    }
}
