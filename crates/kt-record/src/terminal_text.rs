//! Text that came from an untrusted program or an LLM, made safe to print on a terminal: control characters
//! (ESC, BEL, CSI, DEL, the C1 range) are written as visible escapes, so a generator's exception or an LLM answer
//! cannot set the clipboard (`ESC ] 52`), retitle the window, move the cursor or hide what was printed before it.
//! Newlines and tabs stay.

use std::borrow::Cow;

/// `text` with every control character but `\n` and `\t` written as `\x1b`, `\u{9b}`, ...
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_unsafe(c) {
            if (c as u32) < 0x100 {
                out.push_str(&format!("\\x{:02x}", c as u32));
            } else {
                out.push_str(&format!("\\u{{{:x}}}", c as u32));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// C0 and C1 controls and DEL, except newline and tab; plus the bidirectional overrides that reorder what a
/// terminal shows.
fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_become_visible_text_and_lines_stay() {
        let osc52 = "ValueError: bad\n\x1b]52;c;cm0gLXJmIH4=\x07done\tok\r\u{9b}2J\u{202e}";
        let safe = terminal_safe(osc52);
        assert_eq!(
            safe,
            "ValueError: bad\n\\x1b]52;c;cm0gLXJmIH4=\\x07done\tok\\x0d\\x9b2J\\u{202e}"
        );
        assert!(
            !safe
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t')
        );
        assert!(matches!(terminal_safe("plain\ntext"), Cow::Borrowed(_)));
    }
}
