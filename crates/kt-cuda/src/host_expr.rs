//! Small pieces for reading host-code expressions (`(n + BS - 1) / BS`, `dim3 grid(W / 16, H / 16)`): splitting
//! at top-level commas or products, replacing whole identifiers, and evaluating integer constants with the
//! file's macros. Host code is read, never compiled: what cannot be evaluated is `None`, not a guess.

use std::collections::HashMap;

/// `text` split at commas outside brackets, each part trimmed; empty text gives no parts.
pub(crate) fn split_top(text: &str, sep: char) -> Vec<String> {
    let mut parts = Vec::new();
    let (mut depth, mut current) = (0i32, String::new());
    for c in text.chars() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            _ if c == sep && depth == 0 => {
                parts.push(std::mem::take(&mut current).trim().to_string());
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if !current.trim().is_empty() || !parts.is_empty() {
        parts.push(current.trim().to_string());
    }
    parts
}

/// `text` without whitespace runs and without one pair of parentheses around the whole of it.
pub(crate) fn normalized(text: &str) -> String {
    let mut t: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    while let Some(inner) = t.strip_prefix('(').and_then(|s| s.strip_suffix(')')) {
        if !balanced(inner) {
            break;
        }
        t = inner.trim().to_string();
    }
    t
}

fn balanced(text: &str) -> bool {
    let mut depth = 0i32;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            return false;
        }
    }
    depth == 0
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The identifiers of `text` with their byte ranges (numbers and their suffixes skipped; `a::b` is one name).
pub(crate) fn identifiers(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        if c.is_ascii_digit() {
            while i < bytes.len() && (is_ident_char(bytes[i] as char) || bytes[i] == b'.') {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < bytes.len()
                && (is_ident_char(bytes[i] as char)
                    || bytes[i] == b':' && bytes.get(i + 1) == Some(&b':'))
            {
                i += if bytes[i] == b':' { 2 } else { 1 };
            }
            out.push((start, i));
        } else {
            i += 1;
        }
    }
    out
}

/// `text` with every whole identifier that `replace` maps replaced (parenthesized when the replacement is
/// not a single token).
pub(crate) fn substitute(text: &str, replace: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    let mut last = 0;
    for (start, end) in identifiers(text) {
        if let Some(r) = replace(&text[start..end]) {
            out.push_str(&text[last..start]);
            if r.trim_start_matches('@').chars().all(is_ident_char) {
                out.push_str(&r);
            } else {
                out.push('(');
                out.push_str(&r);
                out.push(')');
            }
            last = end;
        }
    }
    out.push_str(&text[last..]);
    out
}

/// Bytes of the built-in types host code takes `sizeof` of.
fn size_of_type(ty: &str) -> Option<i64> {
    let ty = ty.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(
        match ty
            .trim_start_matches("const ")
            .trim_start_matches("unsigned ")
        {
            "char" | "int8_t" | "uint8_t" | "bool" => 1,
            "short" | "half" | "__half" | "__nv_bfloat16" | "nv_bfloat16" | "int16_t"
            | "uint16_t" => 2,
            "float" | "int" | "unsigned" | "uint" | "int32_t" | "uint32_t" => 4,
            "double" | "long" | "long long" | "size_t" | "int64_t" | "uint64_t" | "float2" => 8,
            "float4" | "double2" | "int4" => 16,
            _ => return None,
        },
    )
}

/// The integer value of `text`: literals, `+ - * / %` and parentheses, `sizeof(TYPE)`, `ceil_div`-style
/// calls and `min`/`max`, and identifiers `lookup` knows (macros). Division is C's (truncating).
pub(crate) fn eval_int(text: &str, lookup: &dyn Fn(&str) -> Option<i64>) -> Option<i64> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        lookup,
        depth: 0,
    };
    let v = p.sum()?;
    p.skip_ws();
    (p.i == p.s.len()).then_some(v)
}

/// A lookup of macros that evaluates their bodies (to a depth, so a macro defined by itself ends).
pub(crate) fn macro_lookup<'a>(
    macros: &'a HashMap<String, String>,
) -> impl Fn(&str) -> Option<i64> + 'a {
    move |name: &str| eval_macro(name, macros, 0)
}

fn eval_macro(name: &str, macros: &HashMap<String, String>, depth: usize) -> Option<i64> {
    if depth > 16 {
        return None;
    }
    let body = macros.get(name)?;
    eval_int(body, &|n| eval_macro(n, macros, depth + 1))
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    lookup: &'a dyn Fn(&str) -> Option<i64>,
    depth: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn sum(&mut self) -> Option<i64> {
        let mut v = self.product()?;
        loop {
            if self.eat(b'+') {
                v = v.checked_add(self.product()?)?;
            } else if self.eat(b'-') {
                v = v.checked_sub(self.product()?)?;
            } else {
                return Some(v);
            }
        }
    }

    fn product(&mut self) -> Option<i64> {
        let mut v = self.unary()?;
        loop {
            if self.eat(b'*') {
                v = v.checked_mul(self.unary()?)?;
            } else if self.eat(b'/') {
                v = v.checked_div(self.unary()?)?;
            } else if self.eat(b'%') {
                v = v.checked_rem(self.unary()?)?;
            } else {
                return Some(v);
            }
        }
    }

    fn unary(&mut self) -> Option<i64> {
        self.depth += 1;
        if self.depth > 64 {
            return None;
        }
        let v = if self.eat(b'-') {
            self.unary().map(|v| -v)
        } else if self.eat(b'(') {
            let v = self.sum()?;
            self.eat(b')').then_some(v)
        } else {
            self.atom()
        };
        self.depth -= 1;
        v
    }

    fn atom(&mut self) -> Option<i64> {
        self.skip_ws();
        let start = self.i;
        while self.i < self.s.len()
            && (is_ident_char(self.s[self.i] as char)
                || self.s[self.i] == b':' && self.s.get(self.i + 1) == Some(&b':'))
        {
            self.i += if self.s[self.i] == b':' { 2 } else { 1 };
        }
        let word = std::str::from_utf8(&self.s[start..self.i]).ok()?;
        if word.starts_with(|c: char| c.is_ascii_digit()) {
            return parse_number(word);
        }
        self.skip_ws();
        if self.s.get(self.i) != Some(&b'(') {
            return (self.lookup)(word);
        }
        if word == "sizeof" {
            let close = self.s[self.i..].iter().position(|&b| b == b')')? + self.i;
            let ty = std::str::from_utf8(&self.s[self.i + 1..close]).ok()?;
            self.i = close + 1;
            return size_of_type(ty);
        }
        self.i += 1;
        let mut args = vec![self.sum()?];
        while self.eat(b',') {
            args.push(self.sum()?);
        }
        if !self.eat(b')') {
            return None;
        }
        call(word, &args)
    }
}

/// `ceil_div(a, b)`, `CEIL_DIV`, `div_up`, `iDivUp`, `min`, `max` (the helpers host code launches with).
fn call(name: &str, args: &[i64]) -> Option<i64> {
    match (ceil_division(name), args) {
        (true, [a, b]) if *b != 0 => Some((a + b - 1).div_euclid(*b)),
        _ => match (name.to_ascii_lowercase().as_str(), args) {
            ("min" | "std::min", [a, b]) => Some(*a.min(b)),
            ("max" | "std::max", [a, b]) => Some(*a.max(b)),
            _ => None,
        },
    }
}

/// Whether a function of that name divides rounding up (`ceil_div`, `CEIL_DIV`, `div_up`, `iDivUp`,
/// `DIVUP`, `cdiv`).
pub(crate) fn ceil_division(name: &str) -> bool {
    let lower = name.to_ascii_lowercase().replace('_', "");
    matches!(
        lower.as_str(),
        "ceildiv" | "divup" | "idivup" | "cdiv" | "divceil" | "ceildivide" | "roundupdiv"
    )
}

fn parse_number(word: &str) -> Option<i64> {
    let digits = word.trim_end_matches(['u', 'U', 'l', 'L']);
    match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => i64::from_str_radix(hex, 16).ok(),
        None => digits.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn macros(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn constants_evaluate_with_macros_sizeof_and_ceil_division() {
        let m = macros(&[("BS", "16"), ("TILE", "(BS * 2)"), ("SELF", "SELF")]);
        let look = macro_lookup(&m);
        assert_eq!(eval_int("BS * BS", &look), Some(256));
        assert_eq!(eval_int("(1000 + TILE - 1) / TILE", &look), Some(32));
        assert_eq!(eval_int("256 * sizeof(float)", &look), Some(1024));
        assert_eq!(eval_int("ceil_div(10, 4) + CEIL_DIV(8, 4)", &look), Some(5));
        assert_eq!(eval_int("0x10u", &look), Some(16));
        assert_eq!(eval_int("n / 4", &look), None);
        assert_eq!(eval_int("SELF", &look), None);
        assert_eq!(eval_int("4 /", &look), None);
        assert_eq!(eval_int("1 / 0", &look), None);
    }

    #[test]
    fn splitting_normalizing_and_substituting_keep_nested_expressions_whole() {
        assert_eq!(
            split_top("f(a, b), c[1, 2] , d", ','),
            ["f(a, b)", "c[1, 2]", "d"]
        );
        assert!(split_top("  ", ',').is_empty());
        assert_eq!(split_top("bs * (x * y) * 8", '*'), ["bs", "(x * y)", "8"]);
        assert_eq!(normalized(" ((n  + 1)) "), "n + 1");
        assert_eq!(normalized("(a) * (b)"), "(a) * (b)");
        let s = substitute("(N + bs - 1) / bs + x128::size", &|w| match w {
            "N" => Some("n".into()),
            "bs" => Some("block_size_x".into()),
            "x128::size" => Some("4 * 2".into()),
            _ => None,
        });
        assert_eq!(s, "(n + block_size_x - 1) / block_size_x + (4 * 2)");
    }
}
