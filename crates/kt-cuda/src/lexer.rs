//! A small C/CUDA tokenizer. tree-sitter gives the structure, but several jobs only need to know which bytes
//! are code, which are comments or strings, and which belong to a preprocessor directive: substituting
//! qualifier macros before parsing, finding identifiers that collide with tunable parameters, and removing
//! a `#define` without touching identical text in a comment. It does not expand macros or evaluate `#if`.

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenKind {
    Ident,
    Number,
    Str,
    Char,
    Comment,
    Punct,
}

/// One token: its kind, its byte range and whether it sits inside a preprocessor directive (and which one:
/// the index of the directive's `#` token in the token list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token {
    pub kind: TokenKind,
    pub start: usize,
    pub end: usize,
    pub directive: Option<usize>,
}

impl Token {
    pub fn text<'a>(&self, source: &'a str) -> &'a str {
        &source[self.start..self.end]
    }
}

/// Splits `source` into tokens (whitespace dropped). Never fails: unknown bytes become one-character
/// punctuation, an unterminated string or comment runs to the end of its line or of the file.
pub(crate) fn tokenize(source: &str) -> Vec<Token> {
    let bytes = source.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    // `#` is a directive only as the first token of a line; the directive runs to an unescaped newline.
    let mut at_line_start = true;
    let mut directive: Option<usize> = None;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\n' {
            directive = None;
            at_line_start = true;
            i += 1;
            continue;
        }
        if b == b'\\' && matches!(bytes.get(i + 1), Some(b'\n')) {
            i += 2; // line continuation: the directive goes on
            continue;
        }
        if b == b'\\' && bytes.get(i + 1) == Some(&b'\r') && bytes.get(i + 2) == Some(&b'\n') {
            i += 3;
            continue;
        }
        if b.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let kind = if b == b'/' && bytes.get(i + 1) == Some(&b'/') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            TokenKind::Comment
        } else if b == b'/' && bytes.get(i + 1) == Some(&b'*') {
            i += 2;
            while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                i += 1;
            }
            i = (i + 2).min(bytes.len());
            TokenKind::Comment
        } else if b == b'"' || b == b'\'' {
            i += 1;
            while i < bytes.len() && bytes[i] != b && bytes[i] != b'\n' {
                if bytes[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i = (i + 1).min(bytes.len());
            if b == b'"' {
                TokenKind::Str
            } else {
                TokenKind::Char
            }
        } else if b.is_ascii_alphabetic() || b == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            TokenKind::Ident
        } else if b.is_ascii_digit()
            || (b == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric()
                    || bytes[i] == b'.'
                    // C++14 digit separators: 1'000'000
                    || (bytes[i] == b'\'' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
                    || ((bytes[i] == b'+' || bytes[i] == b'-')
                        && matches!(bytes[i - 1], b'e' | b'E' | b'p' | b'P')))
            {
                i += 1;
            }
            TokenKind::Number
        } else {
            // one UTF-8 character
            i += source[i..].chars().next().map_or(1, char::len_utf8);
            TokenKind::Punct
        };
        if kind == TokenKind::Punct && b == b'#' && at_line_start {
            directive = Some(tokens.len());
        }
        if kind != TokenKind::Comment {
            at_line_start = false;
        }
        // a `//` comment inside a directive ends the directive with its line; the `\n` check above handles it
        tokens.push(Token {
            kind,
            start,
            end: i,
            directive,
        });
    }
    tokens
}

/// A parsed `#define`: name, parameters when function-like, and the body's byte range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Define {
    pub name: String,
    pub function_like: bool,
    /// The body as written, continuation lines joined and comments dropped.
    pub body: String,
    /// Byte range of the whole directive, from `#` to the end of its last line (newline excluded).
    pub directive_start: usize,
    pub directive_end: usize,
    /// Byte range of the name.
    pub name_start: usize,
    pub name_end: usize,
    /// A default, not a fixed value: the line before is `#ifndef NAME` (or `#if !defined(NAME)`), Kernel
    /// Tuner's way to give a tunable parameter a value for compiles that do not set it.
    pub overridable: bool,
}

/// All `#define` directives in token order.
pub(crate) fn defines(source: &str, tokens: &[Token]) -> Vec<Define> {
    let mut out = Vec::new();
    // the macro the directive just before tests for being undefined
    let mut guard: Option<&str> = None;
    let mut i = 0;
    while i < tokens.len() {
        let t = tokens[i];
        if t.directive == Some(i) {
            let members: Vec<&Token> = tokens[i..]
                .iter()
                .take_while(|x| x.directive == Some(i))
                .filter(|m| m.kind != TokenKind::Comment)
                .collect();
            let count = tokens[i..]
                .iter()
                .take_while(|x| x.directive == Some(i))
                .count();
            let words: Vec<&str> = members.iter().map(|m| m.text(source)).collect();
            let tested = undefined_test(&words);
            let is_define = members.get(1).is_some_and(|k| k.text(source) == "define");
            if let (true, Some(name)) = (is_define, members.get(2))
                && name.kind == TokenKind::Ident
            {
                let function_like = members
                    .get(3)
                    .is_some_and(|p| p.text(source) == "(" && p.start == name.end);
                let mut body_from = 3;
                if function_like {
                    while body_from < members.len() && members[body_from].text(source) != ")" {
                        body_from += 1;
                    }
                    body_from += 1;
                }
                let body: Vec<&str> = members
                    .iter()
                    .skip(body_from)
                    .filter(|m| m.kind != TokenKind::Comment)
                    .map(|m| m.text(source))
                    .collect();
                let last = members.last().map_or(name.end, |m| m.end);
                out.push(Define {
                    name: name.text(source).to_string(),
                    function_like,
                    body: body.join(" "),
                    directive_start: t.start,
                    directive_end: line_end(source, last),
                    name_start: name.start,
                    name_end: name.end,
                    overridable: guard == Some(name.text(source)),
                });
            }
            guard = tested;
            i += count;
        } else {
            if t.kind != TokenKind::Comment {
                guard = None;
            }
            i += 1;
        }
    }
    out
}

/// The macro a directive's words (`#`, keyword, …) test for being undefined: `#ifndef NAME`,
/// `#if !defined(NAME)` or `#if !defined NAME`.
fn undefined_test<'s>(words: &[&'s str]) -> Option<&'s str> {
    match words {
        [_, "ifndef", name, ..] => Some(name),
        [_, "if", "!", "defined", "(", name, ")"] | [_, "if", "!", "defined", name] => Some(name),
        _ => None,
    }
}

fn line_end(source: &str, from: usize) -> usize {
    source[from..].find('\n').map_or(source.len(), |n| from + n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(TokenKind, String)> {
        tokenize(src)
            .iter()
            .map(|t| (t.kind, t.text(src).to_string()))
            .collect()
    }

    #[test]
    fn comments_and_strings_are_single_tokens() {
        let k = kinds("a /* __global__ */ \"__global__\" // x\n'c' 1.5e-3f");
        assert_eq!(
            k,
            vec![
                (TokenKind::Ident, "a".into()),
                (TokenKind::Comment, "/* __global__ */".into()),
                (TokenKind::Str, "\"__global__\"".into()),
                (TokenKind::Comment, "// x".into()),
                (TokenKind::Char, "'c'".into()),
                (TokenKind::Number, "1.5e-3f".into()),
            ]
        );
    }

    #[test]
    fn a_define_under_its_own_ifndef_is_a_default_not_a_fixed_value() {
        let src = "#ifndef block_size_x\n#define block_size_x 16\n#endif\n\
                   #if !defined(TILE) // Kernel Tuner sets it\n#define TILE 4\n#endif\n\
                   #ifndef OTHER\n#define WIDTH 8\n#endif\n\
                   #ifndef GUARD\nint x;\n#define GUARD 1\n#endif\n#define FIXED 2\n";
        let d = defines(src, &tokenize(src));
        let overridable: Vec<(&str, bool)> =
            d.iter().map(|d| (d.name.as_str(), d.overridable)).collect();
        assert_eq!(
            overridable,
            vec![
                ("block_size_x", true),
                ("TILE", true),
                ("WIDTH", false),
                ("GUARD", false),
                ("FIXED", false)
            ]
        );
        assert_eq!(d[1].body, "4");
    }

    #[test]
    fn defines_are_found_with_continuations_and_function_form() {
        let src = "#define N 256\n  # define F(x) ((x) \\\n  + 1)\nint N2; // #define NOT this\n#define E\n";
        let d = defines(src, &tokenize(src));
        assert_eq!(d.len(), 3);
        assert_eq!(
            (d[0].name.as_str(), d[0].body.as_str(), d[0].function_like),
            ("N", "256", false)
        );
        assert_eq!(
            (d[1].name.as_str(), d[1].body.as_str(), d[1].function_like),
            ("F", "( ( x ) + 1 )", true)
        );
        assert_eq!(
            &src[d[1].directive_start..d[1].directive_end],
            "# define F(x) ((x) \\\n  + 1)"
        );
        assert_eq!((d[2].name.as_str(), d[2].body.as_str()), ("E", ""));
    }

    #[test]
    fn digit_separators_stay_inside_the_number() {
        assert_eq!(
            kinds("x = 1'000'000; y"),
            vec![
                (TokenKind::Ident, "x".into()),
                (TokenKind::Punct, "=".into()),
                (TokenKind::Number, "1'000'000".into()),
                (TokenKind::Punct, ";".into()),
                (TokenKind::Ident, "y".into()),
            ]
        );
    }

    #[test]
    fn hash_inside_a_line_is_not_a_directive() {
        let src = "x = a # b;\n";
        assert!(tokenize(src).iter().all(|t| t.directive.is_none()));
    }
}
