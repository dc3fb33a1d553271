//! Problem-size expressions (`n`, `width * height`, `ceil_div(n, 4)`): parsed, checked against the kernel's
//! scalar parameters, and evaluated on a test's scalar values.
//!
//! The grammar is deliberately tiny — integers, identifiers, `+ - * / %`, parentheses and the sidecar
//! functions `min`, `max`, `ceil_div` — so an LLM answer cannot smuggle in anything but arithmetic, and every
//! identifier can be checked against the signature. `/` is integer division, as in the kernel's own C code.

use std::collections::BTreeSet;

use crate::error::PipelineError;

/// A parsed problem-size expression.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeExpression {
    text: String,
    ast: Expr,
}

#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Int(i64),
    Name(String),
    Neg(Box<Expr>),
    Binary(char, Box<Expr>, Box<Expr>),
    Call(String, Vec<Expr>),
}

const FUNCTIONS: [&str; 3] = ["min", "max", "ceil_div"];

impl SizeExpression {
    pub fn parse(text: &str) -> Result<SizeExpression, PipelineError> {
        let tokens = tokenize(text).map_err(|message| bad(text, message))?;
        let mut parser = Parser {
            tokens: &tokens,
            pos: 0,
        };
        let ast = parser.sum().map_err(|message| bad(text, message))?;
        if parser.pos != tokens.len() {
            return Err(bad(
                text,
                format!(
                    "unexpected `{}` after a complete expression",
                    tokens[parser.pos]
                ),
            ));
        }
        Ok(SizeExpression {
            text: text.trim().to_string(),
            ast,
        })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Every identifier the expression reads (function names excluded), sorted.
    pub fn identifiers(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        collect(&self.ast, &mut out);
        out
    }

    /// The value with `lookup` giving each identifier's value.
    pub fn evaluate(&self, lookup: &dyn Fn(&str) -> Option<i64>) -> Result<i64, PipelineError> {
        eval(&self.ast, lookup).map_err(|message| bad(&self.text, message))
    }
}

fn bad(text: &str, message: String) -> PipelineError {
    PipelineError::SizeExpression {
        expression: text.to_string(),
        message,
    }
}

fn collect(e: &Expr, out: &mut BTreeSet<String>) {
    match e {
        Expr::Int(_) => {}
        Expr::Name(n) => {
            out.insert(n.clone());
        }
        Expr::Neg(a) => collect(a, out),
        Expr::Binary(_, a, b) => {
            collect(a, out);
            collect(b, out);
        }
        Expr::Call(_, args) => args.iter().for_each(|a| collect(a, out)),
    }
}

fn eval(e: &Expr, lookup: &dyn Fn(&str) -> Option<i64>) -> Result<i64, String> {
    let overflow = || "the value overflows 64 bits".to_string();
    Ok(match e {
        Expr::Int(v) => *v,
        Expr::Name(n) => lookup(n).ok_or_else(|| format!("no value for `{n}`"))?,
        Expr::Neg(a) => eval(a, lookup)?.checked_neg().ok_or_else(overflow)?,
        Expr::Binary(op, a, b) => {
            let (a, b) = (eval(a, lookup)?, eval(b, lookup)?);
            match op {
                '+' => a.checked_add(b).ok_or_else(overflow)?,
                '-' => a.checked_sub(b).ok_or_else(overflow)?,
                '*' => a.checked_mul(b).ok_or_else(overflow)?,
                '/' | '%' if b == 0 => return Err("division by zero".into()),
                '/' => a / b,
                _ => a % b,
            }
        }
        Expr::Call(name, args) => {
            let v: Vec<i64> = args
                .iter()
                .map(|a| eval(a, lookup))
                .collect::<Result<_, _>>()?;
            match (name.as_str(), v.as_slice()) {
                ("min", [a, b]) => *a.min(b),
                ("max", [a, b]) => *a.max(b),
                ("ceil_div", [_, 0]) => return Err("ceil_div by zero".into()),
                ("ceil_div", [a, b]) => (a + b - 1).div_euclid(*b),
                (f, args) => return Err(format!("{f} takes 2 arguments, got {}", args.len())),
            }
        }
    })
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Int(i64),
    Name(String),
    Op(char),
}

impl std::fmt::Display for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Token::Int(v) => write!(f, "{v}"),
            Token::Name(n) => write!(f, "{n}"),
            Token::Op(c) => write!(f, "{c}"),
        }
    }
}

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let digits: String = chars[start..i].iter().collect();
            // C integer suffixes (`256u`, `4L`) are harmless; accept and drop them.
            while i < chars.len() && matches!(chars[i], 'u' | 'U' | 'l' | 'L') {
                i += 1;
            }
            out.push(Token::Int(
                digits
                    .parse()
                    .map_err(|_| format!("`{digits}` is too large"))?,
            ));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Name(chars[start..i].iter().collect()));
        } else if "+-*/%(),".contains(c) {
            out.push(Token::Op(c));
            i += 1;
        } else {
            return Err(format!(
                "`{c}` is not allowed (use scalar parameter names, integers, + - * / % and parentheses)"
            ));
        }
    }
    if out.is_empty() {
        return Err("the expression is empty".into());
    }
    Ok(out)
}

struct Parser<'a> {
    tokens: &'a [Token],
    pos: usize,
}

impl Parser<'_> {
    fn peek_op(&self) -> Option<char> {
        match self.tokens.get(self.pos) {
            Some(Token::Op(c)) => Some(*c),
            _ => None,
        }
    }

    fn sum(&mut self) -> Result<Expr, String> {
        let mut left = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek_op() {
            self.pos += 1;
            left = Expr::Binary(op, Box::new(left), Box::new(self.product()?));
        }
        Ok(left)
    }

    fn product(&mut self) -> Result<Expr, String> {
        let mut left = self.unary()?;
        while let Some(op @ ('*' | '/' | '%')) = self.peek_op() {
            self.pos += 1;
            left = Expr::Binary(op, Box::new(left), Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, String> {
        if self.peek_op() == Some('-') {
            self.pos += 1;
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<Expr, String> {
        let token = self
            .tokens
            .get(self.pos)
            .cloned()
            .ok_or("the expression ends too early")?;
        self.pos += 1;
        match token {
            Token::Int(v) => Ok(Expr::Int(v)),
            Token::Name(name) if self.peek_op() == Some('(') => {
                if !FUNCTIONS.contains(&name.as_str()) {
                    return Err(format!(
                        "`{name}(...)` is not allowed; the only functions are {}",
                        FUNCTIONS.join(", ")
                    ));
                }
                self.pos += 1;
                let mut args = vec![self.sum()?];
                while self.peek_op() == Some(',') {
                    self.pos += 1;
                    args.push(self.sum()?);
                }
                self.expect(')')?;
                Ok(Expr::Call(name, args))
            }
            Token::Name(name) => Ok(Expr::Name(name)),
            Token::Op('(') => {
                let inner = self.sum()?;
                self.expect(')')?;
                Ok(inner)
            }
            Token::Op(c) => Err(format!("unexpected `{c}`")),
        }
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.peek_op() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected `{c}`"))
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn values(name: &str) -> Option<i64> {
        match name {
            "n" => Some(10007),
            "width" => Some(100),
            "height" => Some(7),
            _ => None,
        }
    }

    #[test]
    fn arithmetic_follows_c_precedence_and_integer_division() {
        let e = SizeExpression::parse("width * height + n / 2 - (n % 3)").unwrap();
        assert_eq!(e.evaluate(&values).unwrap(), 700 + 5003 - 2);
        assert_eq!(
            e.identifiers().into_iter().collect::<Vec<_>>(),
            ["height", "n", "width"]
        );
        assert_eq!(
            SizeExpression::parse("ceil_div(n, 256)")
                .unwrap()
                .evaluate(&values)
                .unwrap(),
            40
        );
        assert_eq!(
            SizeExpression::parse("max(width, -height)")
                .unwrap()
                .evaluate(&values)
                .unwrap(),
            100
        );
        assert_eq!(
            SizeExpression::parse("256u")
                .unwrap()
                .evaluate(&values)
                .unwrap(),
            256
        );
    }

    #[test]
    fn anything_but_arithmetic_is_refused_with_a_reason() {
        for (text, needle) in [
            ("n ** 2", "unexpected `*`"),
            ("n; import os", "`;` is not allowed"),
            ("len(a)", "only functions"),
            ("n +", "ends too early"),
            ("(n", "expected `)`"),
            ("", "empty"),
            ("n n", "after a complete"),
        ] {
            let err = SizeExpression::parse(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn unknown_names_and_division_by_zero_fail_at_evaluation() {
        let err = SizeExpression::parse("rows * n")
            .unwrap()
            .evaluate(&values)
            .unwrap_err();
        assert!(err.to_string().contains("no value for `rows`"), "{err}");
        let err = SizeExpression::parse("n / (width - 100)")
            .unwrap()
            .evaluate(&values)
            .unwrap_err();
        assert!(err.to_string().contains("division by zero"), "{err}");
    }
}
