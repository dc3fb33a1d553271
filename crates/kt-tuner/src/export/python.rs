//! kt's expressions (restrictions, grid divisors, shared memory sizes) in the Python that Kernel Tuner
//! evaluates. kt accepts Python and C operators and integer arithmetic; Kernel Tuner `eval`s Python over the
//! tunable parameters only, so scalar arguments become the stated test's values and the block sizes kt
//! defaults (256, 1, 1) become numbers when they are not tuned.

use crate::model::expr::Bindings;
use crate::model::param_value::ParamValue;

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Name(String),
    Number(String),
    Op(&'static str),
}

const OPS: [&str; 19] = [
    "&&", "||", "==", "!=", "<=", ">=", "**", "<", ">", "!", "+", "-", "*", "/", "%", "^", "(",
    ")", ",",
];

fn tokenize(expr: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Name(chars[start..i].iter().collect()));
        } else if c.is_ascii_digit() || c == '.' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            out.push(Token::Number(chars[start..i].iter().collect()));
        } else {
            let rest: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            let op = OPS
                .iter()
                .find(|op| rest.starts_with(*op))
                .ok_or_else(|| format!("`{c}` has no Python equivalent"))?;
            out.push(Token::Op(op));
            i += op.len();
        }
    }
    Ok(out)
}

/// Whether `expr` mentions any of `names`.
pub fn mentions(expr: &str, names: &[String]) -> bool {
    tokenize(expr)
        .map(|t| {
            t.iter()
                .any(|t| matches!(t, Token::Name(n) if names.contains(n)))
        })
        .unwrap_or(false)
}

/// A number as Python writes it: integral values without a fraction.
pub fn py_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:?}")
    }
}

struct Translator<'a> {
    tokens: Vec<Token>,
    pos: usize,
    params: &'a [String],
    constants: &'a Bindings,
}

impl Translator<'_> {
    /// Translates tokens up to (not including) a `,` or `)` at depth 0, or the end.
    fn sequence(&mut self) -> Result<String, String> {
        let mut out = String::new();
        while let Some(t) = self.tokens.get(self.pos).cloned() {
            if matches!(t, Token::Op(",") | Token::Op(")")) {
                break;
            }
            let piece = self.operand_or_operator()?;
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&piece);
        }
        Ok(out)
    }

    fn expect(&mut self, op: &str) -> Result<(), String> {
        match self.tokens.get(self.pos) {
            Some(Token::Op(o)) if *o == op => {
                self.pos += 1;
                Ok(())
            }
            other => Err(format!("expected `{op}`, found {other:?}")),
        }
    }

    /// `( a, b, … )` after a function name: each argument translated.
    fn arguments(&mut self) -> Result<Vec<String>, String> {
        self.expect("(")?;
        let mut args = Vec::new();
        loop {
            args.push(self.sequence()?);
            match self.tokens.get(self.pos) {
                Some(Token::Op(",")) => self.pos += 1,
                _ => break,
            }
        }
        self.expect(")")?;
        Ok(args)
    }

    /// One operand (a name, number, call or parenthesised group, with a C `!` bound tightly as in kt) or one
    /// binary operator.
    fn operand_or_operator(&mut self) -> Result<String, String> {
        let t = self.tokens[self.pos].clone();
        self.pos += 1;
        Ok(match t {
            Token::Number(n) => n,
            Token::Name(n) => match n.as_str() {
                "and" | "or" | "not" => n,
                "True" | "true" => "True".into(),
                "False" | "false" => "False".into(),
                "min" | "max" => format!("{n}({})", self.arguments()?.join(", ")),
                "ceil_div" => {
                    let a = self.arguments()?;
                    if a.len() != 2 {
                        return Err("ceil_div takes two arguments".into());
                    }
                    format!("(-(-({}) // ({})))", a[0], a[1])
                }
                _ if self.params.contains(&n) => n,
                _ => match self.constants.get(&n) {
                    Some(v) => py_number(*v),
                    None => {
                        return Err(format!(
                            "`{n}` is neither a tunable parameter nor a scalar argument"
                        ));
                    }
                },
            },
            Token::Op("(") => {
                let inner = self.sequence()?;
                self.expect(")")?;
                format!("({inner})")
            }
            // kt's `!` applies to the operand right after it; Python's `not` would take the whole comparison
            Token::Op("!") => format!("(not {})", self.operand_or_operator()?),
            Token::Op("&&") => "and".into(),
            Token::Op("||") => "or".into(),
            // kt divides integers as integers
            Token::Op("/") => "//".into(),
            Token::Op("^") => "**".into(),
            Token::Op(op) => op.into(),
        })
    }
}

/// `expr` in Python over the names in `params`; every other name must be in `constants` and is replaced by
/// its value. Errors say what cannot be translated.
pub fn translate(expr: &str, params: &[String], constants: &Bindings) -> Result<String, String> {
    let mut t = Translator {
        tokens: tokenize(expr)?,
        pos: 0,
        params,
        constants,
    };
    let out = t.sequence()?;
    if t.pos != t.tokens.len() {
        return Err(format!("unbalanced `{:?}`", t.tokens[t.pos]));
    }
    if out.is_empty() {
        return Err("empty expression".into());
    }
    Ok(out)
}

/// A Python set literal of configurations as tuples over `names`, e.g. `{(16, 2), (32, 1)}`, and the tuple of
/// names it is compared with: `(block_size_x, block_size_y)`.
pub fn config_set(names: &[String], configs: &[Vec<ParamValue>]) -> (String, String) {
    let tuple = |items: Vec<String>| {
        if items.len() == 1 {
            format!("({},)", items[0])
        } else {
            format!("({})", items.join(", "))
        }
    };
    let lhs = tuple(names.to_vec());
    let set: Vec<String> = configs
        .iter()
        .map(|c| tuple(c.iter().map(py_value).collect()))
        .collect();
    (lhs, format!("{{{}}}", set.join(", ")))
}

/// A parameter value as a Python literal: `4`, `0.5`, `True`, `"float"`.
pub fn py_value(v: &ParamValue) -> String {
    match v {
        ParamValue::Str(s) => py_str(s),
        other => other.to_string(),
    }
}

/// A Python list literal of parameter values: `[16, 32]`, `["float", "double"]`.
pub fn py_values(values: &[ParamValue]) -> String {
    let items: Vec<String> = values.iter().map(py_value).collect();
    format!("[{}]", items.join(", "))
}

/// A Python string literal (double-quoted).
pub fn py_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    fn consts(pairs: &[(&str, f64)]) -> Bindings {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn c_operators_become_python_and_scalars_become_the_tests_values() {
        let p = names(&["block_size_x", "block_size_y"]);
        let c = consts(&[("n", 4096.0), ("block_size_z", 1.0)]);
        assert_eq!(
            translate(
                "block_size_x*block_size_y <= 1024 && n % block_size_x == 0",
                &p,
                &c
            )
            .unwrap(),
            "block_size_x * block_size_y <= 1024 and 4096 % block_size_x == 0"
        );
        assert_eq!(
            translate("!(block_size_y > 8) || block_size_z == 1", &p, &c).unwrap(),
            "(not (block_size_y > 8)) or 1 == 1"
        );
        assert_eq!(
            translate("n / block_size_x >= 4", &p, &c).unwrap(),
            "4096 // block_size_x >= 4"
        );
    }

    #[test]
    fn python_syntax_and_functions_pass_through() {
        let p = names(&["tile", "block_size_x"]);
        let c = consts(&[("n", 1000.0)]);
        assert_eq!(
            translate("not tile > 4 and min(block_size_x, n) >= 32", &p, &c).unwrap(),
            "not tile > 4 and min(block_size_x, 1000) >= 32"
        );
        assert_eq!(
            translate("ceil_div(n, block_size_x*tile) <= 64", &p, &c).unwrap(),
            "(-(-(1000) // (block_size_x * tile))) <= 64"
        );
    }

    #[test]
    fn unknown_names_and_foreign_syntax_are_refused_with_the_reason() {
        let p = names(&["block_size_x"]);
        let e = translate("block_size_x < m", &p, &Bindings::new()).unwrap_err();
        assert!(e.contains("`m`"), "{e}");
        let e = translate("block_size_x ? 1 : 2", &p, &Bindings::new()).unwrap_err();
        assert!(e.contains("`?`"), "{e}");
        assert!(translate("(block_size_x", &p, &Bindings::new()).is_err());
    }

    #[test]
    fn configuration_sets_are_tuples_even_for_one_parameter() {
        let v = |x: i64| ParamValue::Int(x);
        let (lhs, set) = config_set(&names(&["x"]), &[vec![v(16)], vec![v(32)]]);
        assert_eq!(format!("{lhs} in {set}"), "(x,) in {(16,), (32,)}");
        let (lhs, set) = config_set(&names(&["x", "y"]), &[vec![v(16), v(2)]]);
        assert_eq!(format!("{lhs} not in {set}"), "(x, y) not in {(16, 2)}");
    }

    #[test]
    fn python_strings_are_escaped() {
        assert_eq!(py_str("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
    }
}
