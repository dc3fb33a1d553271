//! Bounded fuzzing of the expression evaluator (restrictions, problem sizes, sidecar expressions, all of which
//! an LLM or a user writes): any text gives a value or an error, never a panic or a stack overflow. Budget:
//! KT_FUZZ_MS milliseconds (default 2000).

use kt_tuner::model::expr::{Bindings, eval_bool, eval_number};

#[test]
fn any_expression_evaluates_or_fails_cleanly() {
    const PIECES: &[&str] = &[
        "n",
        "block_size_x",
        "(",
        ")",
        "+",
        "-",
        "*",
        "/",
        "%",
        "^",
        "&&",
        "||",
        "!",
        " and ",
        " or ",
        "not ",
        "<",
        ">=",
        "==",
        "min(",
        "max(",
        "ceil_div(",
        ",",
        "1",
        "0",
        "2.5",
        "1e308",
        "True",
        "\"s\"",
        " ",
        "é",
    ];
    let budget = std::env::var("KT_FUZZ_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let bindings: Bindings = [
        ("n".to_string(), 1000.0),
        ("block_size_x".to_string(), 32.0),
    ]
    .into();
    arbtest::arbtest(|u| {
        let mut expr = String::new();
        while !u.is_empty() {
            let piece = *u.choose(PIECES)?;
            let times = if u.ratio(1, 16)? {
                u.int_in_range(10..=3000)?
            } else {
                1
            };
            expr.push_str(&piece.repeat(times));
        }
        let _ = eval_number(&expr, &bindings);
        let _ = eval_bool(&expr, &bindings);
        Ok(())
    })
    .budget_ms(budget);
}
