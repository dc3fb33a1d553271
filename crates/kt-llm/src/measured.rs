//! Measured sections: text a caller wraps in a `<measured>` … `</measured>` pair (a hardware profile, say)
//! depends on the GPU it was measured on. Measured sections are not part of a request's identity, so a
//! recorded run replays on another GPU: [`LlmRequest::stable_hash`](crate::LlmRequest::stable_hash) hashes
//! each message with its measured sections left out. The model still sees them.

use std::borrow::Cow;

/// Opens a measured section.
pub const MEASURED_OPEN: &str = "<measured>";
/// Closes a measured section.
pub const MEASURED_CLOSE: &str = "</measured>";

/// `text` without its measured sections: each span from [`MEASURED_OPEN`] to the next [`MEASURED_CLOSE`] is
/// removed with the one line break that follows it, so a section on lines of its own leaves the text as it
/// would read without it. An opening marker with no closing one stays, as ordinary text.
pub fn without_measured(text: &str) -> Cow<'_, str> {
    if !text.contains(MEASURED_OPEN) {
        return Cow::Borrowed(text);
    }
    let mut kept = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find(MEASURED_OPEN) {
        let Some(close) = rest[open..].find(MEASURED_CLOSE) else {
            break;
        };
        kept.push_str(&rest[..open]);
        let after = &rest[open + close + MEASURED_CLOSE.len()..];
        rest = after
            .strip_prefix("\r\n")
            .or_else(|| after.strip_prefix('\n'))
            .unwrap_or(after);
    }
    kept.push_str(rest);
    Cow::Owned(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_on_lines_of_its_own_leaves_the_text_as_without_it() {
        let with =
            "Kernel:\n<measured>\nmemory-bound at 82 % of DRAM bandwidth\n</measured>\nPlan it.\n";
        assert_eq!(without_measured(with), "Kernel:\nPlan it.\n");
    }

    #[test]
    fn every_section_is_removed_and_the_text_between_them_kept() {
        let text = "a<measured>1</measured>b<measured>2\n3</measured>\nc";
        assert_eq!(without_measured(text), "abc");
    }

    #[test]
    fn text_without_sections_is_untouched() {
        assert!(matches!(
            without_measured("no sections here"),
            Cow::Borrowed("no sections here")
        ));
    }

    #[test]
    fn an_unclosed_marker_is_ordinary_text() {
        let text = "x <measured> y";
        assert_eq!(without_measured(text), text);
        assert_eq!(
            without_measured("<measured>a</measured>\nx <measured> y"),
            "x <measured> y"
        );
    }
}
