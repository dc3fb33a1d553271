//! A lexer for JSON as models write it: strings in either quote style, `//` and `/* */` comments. It finds
//! where a value that opens with `{` or `[` closes (so a ``` inside a string never ends the value), and it
//! escapes raw control characters inside strings, noting every relaxation it sees on the way.

/// One piece of the text, as the lexer sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    /// A character outside strings and comments (its first byte; syntax characters are all ASCII).
    Code(u8),
    /// A string opens with this quote.
    Open(u8),
    /// The string closes.
    Close,
    /// A character inside a string; `escaped` when a backslash comes before it (the span covers both).
    Inner { byte: u8, escaped: bool },
    /// A whole comment.
    Comment,
}

/// Splits text into tokens with their byte spans. Spans always end on character boundaries.
struct Lexer<'a> {
    bytes: &'a [u8],
    pos: usize,
    quote: Option<u8>,
}

impl<'a> Lexer<'a> {
    fn new(text: &'a str, from: usize) -> Self {
        Self {
            bytes: text.as_bytes(),
            pos: from,
            quote: None,
        }
    }

    /// The length of the UTF-8 character starting at `at`.
    fn char_len(&self, at: usize) -> usize {
        match self.bytes.get(at) {
            Some(b) if *b >= 0xF0 => 4,
            Some(b) if *b >= 0xE0 => 3,
            Some(b) if *b >= 0xC0 => 2,
            Some(_) => 1,
            None => 0,
        }
    }
}

impl Iterator for Lexer<'_> {
    type Item = (usize, usize, Token);

    fn next(&mut self) -> Option<Self::Item> {
        let b = *self.bytes.get(self.pos)?;
        let start = self.pos;
        let next = self.bytes.get(start + 1).copied();
        let (len, token) = match self.quote {
            Some(_) if b == b'\\' && next.is_some() => (
                1 + self.char_len(start + 1),
                Token::Inner {
                    byte: next.unwrap_or_default(),
                    escaped: true,
                },
            ),
            Some(q) if b == q => {
                self.quote = None;
                (1, Token::Close)
            }
            Some(_) => (
                self.char_len(start),
                Token::Inner {
                    byte: b,
                    escaped: false,
                },
            ),
            None if b == b'"' || b == b'\'' => {
                self.quote = Some(b);
                (1, Token::Open(b))
            }
            None if b == b'/' && next == Some(b'/') => {
                let end = self.bytes[start..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(self.bytes.len(), |i| start + i);
                (end - start, Token::Comment)
            }
            None if b == b'/' && next == Some(b'*') => {
                let end = self.bytes[start + 2..]
                    .windows(2)
                    .position(|w| w == b"*/")
                    .map_or(self.bytes.len(), |i| start + 2 + i + 2);
                (end - start, Token::Comment)
            }
            None => (self.char_len(start), Token::Code(b)),
        };
        self.pos = start + len.max(1);
        Some((start, self.pos, token))
    }
}

/// Where the value that opens at byte `start` (a `{` or `[`) closes: the byte after its matching bracket.
/// `None` when it never closes or a bracket closes the wrong kind.
pub(crate) fn balanced_end(text: &str, start: usize) -> Option<usize> {
    let mut stack: Vec<u8> = Vec::new();
    for (_, end, token) in Lexer::new(text, start) {
        match token {
            Token::Code(open @ (b'{' | b'[')) => stack.push(open),
            Token::Code(close @ (b'}' | b']')) => {
                let want = if close == b'}' { b'{' } else { b'[' };
                if stack.pop() != Some(want) {
                    return None;
                }
                if stack.is_empty() {
                    return Some(end);
                }
            }
            _ => {}
        }
        if stack.is_empty() {
            // The first token was not an opening bracket.
            return None;
        }
    }
    None
}

/// The deepest nesting of `{` and `[` outside strings and comments anywhere in `text` (one pass, no recursion).
pub(crate) fn max_nesting(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for (_, _, token) in Lexer::new(text, 0) {
        match token {
            Token::Code(b'{' | b'[') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            Token::Code(b'}' | b']') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The relaxations of strict JSON found in a text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Findings {
    /// Raw newlines, tabs and other control characters inside strings (escaped in the normalised text).
    pub raw_controls: usize,
    pub comments: usize,
    pub single_quoted: usize,
    pub trailing_commas: usize,
}

impl Findings {
    /// One sentence per kind of relaxation, for the record.
    pub fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut say = |n: usize, what: &str| {
            if n > 0 {
                out.push(format!("{what} ({n})"));
            }
        };
        say(
            self.raw_controls,
            "escaped raw control characters (newlines, tabs) inside strings",
        );
        say(self.comments, "ignored comments");
        say(self.single_quoted, "read single-quoted strings");
        say(self.trailing_commas, "ignored trailing commas");
        out
    }
}

/// `text` with every raw control character inside a string escaped, and what relaxations it contains. A
/// backslash right before a raw line break (a macro continuation written without escaping) stays a backslash.
pub(crate) fn normalise(text: &str) -> (String, Findings) {
    let mut out = String::with_capacity(text.len() + 16);
    let mut found = Findings::default();
    let mut last_code = 0u8;
    for (start, end, token) in Lexer::new(text, 0) {
        match token {
            Token::Inner { byte, escaped } if byte < 0x20 => {
                found.raw_controls += 1;
                if escaped {
                    out.push_str("\\\\");
                }
                out.push_str(&escape_control(byte));
                continue;
            }
            Token::Open(b'\'') => found.single_quoted += 1,
            Token::Comment => found.comments += 1,
            Token::Code(c) if !c.is_ascii_whitespace() => {
                if matches!(c, b'}' | b']') && last_code == b',' {
                    found.trailing_commas += 1;
                }
                last_code = c;
            }
            Token::Open(_) | Token::Close => last_code = b'"',
            _ => {}
        }
        out.push_str(&text[start..end]);
    }
    (out, found)
}

fn escape_control(byte: u8) -> String {
    match byte {
        b'\n' => "\\n".into(),
        b'\r' => "\\r".into(),
        b'\t' => "\\t".into(),
        other => format!("\\u{other:04x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_inside_a_string_does_not_end_the_value() {
        let text = "x {\"code\": \"```cuda\\n}\\n```\", 'b': [1, {\"c\": \"]\"}]} tail";
        let start = text.find('{').unwrap();
        let end = balanced_end(text, start).unwrap();
        assert!(text[start..end].ends_with("]}"), "{}", &text[start..end]);
        assert_eq!(&text[end..], " tail");
    }

    #[test]
    fn brackets_in_comments_are_ignored_and_mismatches_rejected() {
        let text = "{\"a\": 1 /* } */ // ]\n}";
        assert_eq!(balanced_end(text, 0), Some(text.len()));
        assert_eq!(balanced_end("{\"a\": [1}", 0), None);
        assert_eq!(balanced_end("{\"a\": 1", 0), None);
        assert_eq!(balanced_end("x{}", 0), None);
    }

    #[test]
    fn raw_newlines_and_tabs_in_strings_are_escaped_and_counted() {
        let (fixed, found) = normalise("{\"code\": \"a\n\tb\"}");
        assert_eq!(fixed, "{\"code\": \"a\\n\\tb\"}");
        assert_eq!(found.raw_controls, 2);
        let v: serde_json::Value = serde_json::from_str(&fixed).unwrap();
        assert_eq!(v["code"], "a\n\tb");
    }

    #[test]
    fn macro_continuation_backslash_survives_escaping() {
        let (fixed, _) = normalise("{\"code\": \"#define M(x) \\\n  (x)\"}");
        let v: serde_json::Value = serde_json::from_str(&fixed).unwrap();
        assert_eq!(v["code"], "#define M(x) \\\n  (x)");
    }

    #[test]
    fn relaxations_are_noticed_but_not_inside_strings() {
        let (_, found) = normalise("{'a': 1, // note\n \"b\": \"x, }\", /* c */ \"d\": [1, 2,],}");
        assert_eq!(
            found,
            Findings {
                raw_controls: 0,
                comments: 2,
                single_quoted: 1,
                trailing_commas: 2
            }
        );
        assert_eq!(found.describe().len(), 3);
    }

    #[test]
    fn multibyte_text_is_kept_intact() {
        let (fixed, found) = normalise("{\"s\": \"größe → 16\"}");
        assert_eq!(fixed, "{\"s\": \"größe → 16\"}");
        assert_eq!(found, Findings::default());
    }
}
