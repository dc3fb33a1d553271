//! Expressions over names (parameter names, scalar arguments): restrictions such as
//! `block_size_x*block_size_y >= 32 and block_size_x % 32 == 0`, problem sizes such as `n / 4`, shared memory
//! sizes, flops/bytes counts. Kernel Tuner writes restrictions in Python syntax, so `and`, `or` and `not` are
//! accepted beside `&&`, `||`, `!`; `min`, `max` and `ceil_div` are available as functions.

use std::collections::BTreeMap;

use evalexpr::{
    ContextWithMutableFunctions, ContextWithMutableVariables, DefaultNumericTypes, EvalexprError,
    Function, HashMapContext, Value,
};

use crate::error::TunerError;
use crate::model::param_value::ParamValue;

/// A value a name can take in an expression.
pub type Bindings = BTreeMap<String, f64>;

/// Rewrites Python-style boolean words into evalexpr operators, outside identifiers. `not x > 8` becomes
/// `!(x > 8)`: Python's `not` binds looser than comparisons, evalexpr's `!` tighter.
fn normalise(expr: &str) -> String {
    let mut out = String::with_capacity(expr.len() + 8);
    let mut word = String::new();
    let mut depth = 0i32;
    // parenthesis depths at which a `not` opened `!(` that is still to be closed
    let mut open_nots: Vec<i32> = Vec::new();
    let close_nots = |out: &mut String, open: &mut Vec<i32>, depth: i32| {
        while open.last().is_some_and(|d| *d >= depth) {
            open.pop();
            out.push(')');
        }
    };
    let flush = |word: &mut String, out: &mut String, open: &mut Vec<i32>, depth: i32| {
        match word.as_str() {
            "and" => {
                close_nots(out, open, depth);
                out.push_str("&&");
            }
            "or" => {
                close_nots(out, open, depth);
                out.push_str("||");
            }
            "not" => {
                out.push_str("!(");
                open.push(depth);
            }
            "True" => out.push_str("true"),
            "False" => out.push_str("false"),
            _ => out.push_str(word),
        }
        word.clear();
    };
    let chars: Vec<char> = expr.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let ch = chars[i];
        if ch == '\'' || ch == '"' {
            // a string literal (Python quotes either way, evalexpr only double): copied, never rewritten
            flush(&mut word, &mut out, &mut open_nots, depth);
            let end = chars[i + 1..]
                .iter()
                .position(|c| *c == ch)
                .map_or(chars.len(), |p| i + 1 + p);
            out.push('"');
            out.extend(
                chars[i + 1..end]
                    .iter()
                    .map(|c| if *c == '"' { '\'' } else { *c }),
            );
            out.push('"');
            i = end + 1;
            continue;
        }
        if ch.is_alphanumeric()
            || ch == '_'
            || (ch == '.' && !word.is_empty() && word.chars().all(|c| c.is_ascii_digit()))
        {
            word.push(ch);
        } else {
            flush(&mut word, &mut out, &mut open_nots, depth);
            let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            if two == "&&" || two == "||" {
                close_nots(&mut out, &mut open_nots, depth);
                out.push_str(&two);
                i += 2;
                continue;
            }
            match ch {
                '(' => depth += 1,
                ')' => {
                    close_nots(&mut out, &mut open_nots, depth);
                    depth -= 1;
                }
                _ => {}
            }
            out.push(ch);
        }
        i += 1;
    }
    flush(&mut word, &mut out, &mut open_nots, depth);
    close_nots(&mut out, &mut open_nots, i32::MIN);
    out
}

fn context(
    bindings: &Bindings,
    values: &[(String, ParamValue)],
) -> Result<HashMapContext<DefaultNumericTypes>, EvalexprError> {
    let mut ctx = HashMapContext::<DefaultNumericTypes>::new();
    for (name, value) in bindings {
        // Integral values stay integers so that `%` and integer division behave as in C and Python.
        let v = if value.fract() == 0.0 && value.abs() < 9.0e15 {
            Value::Int(*value as i64)
        } else {
            Value::Float(*value)
        };
        ctx.set_value(name.clone(), v)?;
    }
    // Parameter values keep their kind: a float stays a float even when whole (`1.0 / 2` is 0.5, as in
    // Python), strings compare with `==`, booleans combine with `and`/`or`.
    for (name, value) in values {
        let v = match value {
            ParamValue::Int(i) => Value::Int(*i),
            ParamValue::Float(f) => Value::Float(*f),
            ParamValue::Bool(b) => Value::Boolean(*b),
            ParamValue::Str(s) => Value::String(s.clone()),
        };
        ctx.set_value(name.clone(), v)?;
    }
    ctx.set_function(
        "ceil_div".into(),
        Function::new(|arg| {
            let t = arg.as_tuple()?;
            if t.len() != 2 {
                return Err(EvalexprError::CustomMessage(
                    "ceil_div takes two arguments".into(),
                ));
            }
            let (a, b): (f64, f64) = (t[0].as_number()?, t[1].as_number()?);
            if b == 0.0 {
                return Err(EvalexprError::CustomMessage("ceil_div by zero".into()));
            }
            Ok(Value::Int((a / b).ceil() as i64))
        }),
    )?;
    Ok(ctx)
}

/// The longest expression kt evaluates, and the deepest parenthesis nesting: evalexpr builds and evaluates its
/// tree recursively, so a hostile sidecar or restriction (20,000 nested parentheses, a chain of 100,000 `+`)
/// would overflow the stack. Real restrictions are a line long.
pub const MAX_EXPRESSION_CHARS: usize = 2000;
pub const MAX_EXPRESSION_NESTING: usize = 64;

/// Refuses an expression past the limits above, with what to do.
fn check_size(expr: &str) -> Result<(), String> {
    let chars = expr.chars().count();
    if chars > MAX_EXPRESSION_CHARS {
        return Err(format!(
            "it is {chars} characters long, more than the {MAX_EXPRESSION_CHARS} kt evaluates; write it shorter"
        ));
    }
    let (mut depth, mut deepest) = (0usize, 0usize);
    for c in expr.chars() {
        match c {
            '(' | '[' | '{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    if deepest > MAX_EXPRESSION_NESTING {
        return Err(format!(
            "it nests parentheses {deepest} deep, more than the {MAX_EXPRESSION_NESTING} kt evaluates; write it flatter"
        ));
    }
    Ok(())
}

/// What went wrong, in the user's terms: the names an expression may use, rather than the evaluator's words
/// ("Variable identifier is not bound to anything by context").
fn in_plain_words(
    e: &EvalexprError,
    bindings: &Bindings,
    values: &[(String, ParamValue)],
) -> String {
    let known = || {
        let mut names: Vec<&str> = bindings.keys().map(String::as_str).collect();
        names.extend(values.iter().map(|(n, _)| n.as_str()));
        names.sort_unstable();
        names.dedup();
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    };
    match e {
        EvalexprError::VariableIdentifierNotFound(name) => format!(
            "`{name}` is not a tunable parameter or a scalar argument here (known names: {})",
            known()
        ),
        EvalexprError::FunctionIdentifierNotFound(name) => format!(
            "`{name}` is not a function kt knows (min, max, floor, ceil, round, ceil_div, and evalexpr's `math::` ones)"
        ),
        EvalexprError::UnmatchedLBrace | EvalexprError::UnmatchedRBrace => {
            "its parentheses do not match".to_string()
        }
        other => other.to_string(),
    }
}

fn evaluate(
    expr: &str,
    bindings: &Bindings,
    values: &[(String, ParamValue)],
) -> Result<Value, TunerError> {
    let err = |e: EvalexprError| TunerError::Expression {
        expr: expr.to_string(),
        message: in_plain_words(&e, bindings, values),
    };
    check_size(expr).map_err(|message| TunerError::Expression {
        expr: expr.chars().take(80).collect::<String>() + "…",
        message,
    })?;
    let ctx = context(bindings, values).map_err(err)?;
    evalexpr::eval_with_context(&normalise(expr), &ctx).map_err(err)
}

/// Evaluates a numeric expression (integer or float result).
pub fn eval_number(expr: &str, bindings: &Bindings) -> Result<f64, TunerError> {
    match evaluate(expr, bindings, &[])? {
        Value::Int(i) => Ok(i as f64),
        Value::Float(f) => Ok(f),
        Value::Boolean(b) => Ok(if b { 1.0 } else { 0.0 }),
        other => Err(TunerError::Expression {
            expr: expr.to_string(),
            message: format!("expected a number, got {other:?}"),
        }),
    }
}

/// Evaluates a numeric expression that must be a non-negative integer (sizes, counts).
pub fn eval_count(expr: &str, bindings: &Bindings) -> Result<u64, TunerError> {
    let v = eval_number(expr, bindings)?;
    if v < 0.0 || v.fract() != 0.0 || !v.is_finite() {
        return Err(TunerError::Expression {
            expr: expr.to_string(),
            message: format!("expected a non-negative integer, got {v}"),
        });
    }
    Ok(v as u64)
}

/// Evaluates a condition. Numbers count as true when non-zero (as in Python and C).
pub fn eval_bool(expr: &str, bindings: &Bindings) -> Result<bool, TunerError> {
    eval_bool_with(expr, bindings, &[])
}

/// Evaluates a condition over numbers and parameter values of any kind (a configuration's values take
/// precedence over a number of the same name).
pub fn eval_bool_with(
    expr: &str,
    bindings: &Bindings,
    values: &[(String, ParamValue)],
) -> Result<bool, TunerError> {
    match evaluate(expr, bindings, values)? {
        Value::Boolean(b) => Ok(b),
        Value::Int(i) => Ok(i != 0),
        Value::Float(f) => Ok(f != 0.0),
        other => Err(TunerError::Expression {
            expr: expr.to_string(),
            message: format!("expected true/false, got {other:?}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(pairs: &[(&str, f64)]) -> Bindings {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn python_string_literals_compare_with_string_values() {
        let values = vec![
            ("T".to_string(), ParamValue::Str("float".into())),
            ("alpha".to_string(), ParamValue::Float(1.0)),
            ("on".to_string(), ParamValue::Bool(true)),
        ];
        let env = Bindings::new();
        assert!(eval_bool_with("T == 'float' and alpha / 2 == 0.5", &env, &values).unwrap());
        assert!(!eval_bool_with("T == \"double\" or not on", &env, &values).unwrap());
        // words inside a string are not Python operators to rewrite
        assert!(!eval_bool_with("T == 'a and b'", &env, &values).unwrap());
    }

    #[test]
    fn an_unknown_name_is_named_with_the_names_an_expression_may_use() {
        let env: Bindings = [("block_size_x".to_string(), 32.0), ("n".to_string(), 100.0)].into();
        let err = eval_bool("nosuch > 4", &env).unwrap_err().to_string();
        assert!(
            err.contains("`nosuch` is not a tunable parameter or a scalar argument here (known names: block_size_x, n)"),
            "{err}"
        );
        assert!(!err.contains("bound to anything by context"), "{err}");
        let err = eval_number("frobnicate(n)", &env).unwrap_err().to_string();
        assert!(
            err.contains("`frobnicate` is not a function kt knows"),
            "{err}"
        );
    }

    #[test]
    fn python_style_restrictions_evaluate() {
        let env = b(&[("block_size_x", 64.0), ("block_size_y", 4.0)]);
        assert!(
            eval_bool(
                "block_size_x*block_size_y >= 32 and block_size_x % 32 == 0",
                &env
            )
            .unwrap()
        );
        assert!(!eval_bool("block_size_x < 32 or block_size_y > 8", &env).unwrap());
        assert!(eval_bool("not block_size_y > 8", &env).unwrap());
        assert!(eval_bool("not (block_size_y > 8) and not block_size_x == 32", &env).unwrap());
        assert!(!eval_bool("not block_size_y > 2 or block_size_x < 8", &env).unwrap());
        assert!(
            eval_bool(
                "block_size_x*block_size_y <= 1024 && block_size_y != 3",
                &env
            )
            .unwrap()
        );
    }

    #[test]
    fn integer_arithmetic_and_functions() {
        let env = b(&[("n", 1000.0), ("t", 256.0)]);
        assert_eq!(eval_count("ceil_div(n, t)", &env).unwrap(), 4);
        assert_eq!(eval_count("n / 4", &env).unwrap(), 250);
        assert_eq!(eval_count("min(n, t)", &env).unwrap(), 256);
        assert_eq!(eval_number("max(n, t) * 2", &env).unwrap(), 2000.0);
        assert_eq!(eval_number("0.5 * t", &env).unwrap(), 128.0);
    }

    #[test]
    fn unknown_name_is_an_error_that_names_the_expression() {
        let err = eval_bool("block_size_z > 1", &Bindings::new()).unwrap_err();
        assert!(err.to_string().contains("block_size_z > 1"), "{err}");
    }

    #[test]
    fn hostile_expressions_are_refused_and_the_largest_accepted_ones_evaluate_on_a_small_stack() {
        let env = b(&[("n", 1.0)]);
        let deep = format!("{}n{}", "(".repeat(20_000), ")".repeat(20_000));
        let err = eval_number(&deep, &env).unwrap_err().to_string();
        assert!(err.contains("more than the 2000"), "{err}");
        let nested = format!("{}n{}", "(".repeat(65), ")".repeat(65));
        let err = eval_number(&nested, &env).unwrap_err().to_string();
        assert!(err.contains("nests parentheses 65 deep"), "{err}");
        // At the limits: 64 levels, and a chain as long as allowed, on a 2 MiB stack (a tokio worker's).
        let at_limit = [
            format!("{}n{}", "(".repeat(64), ")".repeat(64)),
            format!("n{}", " + n".repeat((MAX_EXPRESSION_CHARS - 1) / 4)),
            format!("{}n{}", "max(n, ".repeat(64), ")".repeat(64)),
        ];
        let results = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                at_limit
                    .iter()
                    .map(|e| eval_number(e, &env).map_err(|e| e.to_string()))
                    .collect::<Vec<_>>()
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(results[0], Ok(1.0));
        assert!(
            results[1].as_ref().is_ok_and(|v| *v > 400.0),
            "{:?}",
            results[1]
        );
        assert_eq!(results[2], Ok(1.0));
    }
}
