//! `--tests N`: one meaning on every command that makes or runs tests (`kt transform`, `kt testgen`, `kt tune`,
//! `kt verify`): how many tests to generate. A tests directory is `--tests-dir DIR`; a value that is not a
//! count says so instead of clap's bare "invalid digit".

use std::str::FromStr;

/// Parses a `--tests`/`--tests-count` value as a count of tests; anything else is refused with the flag that
/// reads a directory.
pub fn count<T: FromStr>(value: &str) -> Result<T, String> {
    value.trim().parse::<T>().map_err(|_| {
        format!(
            "`--tests` is how many tests to generate (a number such as 3); to read the tests in a directory \
             use --tests-dir {value}"
        )
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_count_is_taken_and_a_directory_names_the_flag_that_reads_it() {
        assert_eq!(count::<usize>("3").unwrap(), 3);
        assert_eq!(count::<u32>(" 5 ").unwrap(), 5);
        let err = count::<usize>("kt-runs/R/tests").unwrap_err();
        assert!(err.contains("--tests-dir kt-runs/R/tests"), "{err}");
        assert!(count::<u32>("-1").is_err());
    }
}
