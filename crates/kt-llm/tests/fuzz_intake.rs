//! Bounded fuzzing of the lenient JSON intake every LLM answer goes through: any answer gives a value or an
//! error, never a panic or a stack overflow. Budget: KT_FUZZ_MS milliseconds (default 2000).

#[test]
fn any_answer_is_read_or_refused_cleanly() {
    const PIECES: &[&str] = &[
        "{",
        "}",
        "[",
        "]",
        "\"",
        "'",
        ":",
        ",",
        "\"code\"",
        "\"a\": ",
        "1",
        "-2.5e3",
        "true",
        "null",
        "```json\n",
        "```\n",
        "<think>",
        "</think>",
        "//",
        "/*",
        "*/",
        "\\",
        "\n",
        "\t",
        "é",
        "\u{0}",
        "prose ",
    ];
    let budget = std::env::var("KT_FUZZ_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let schema = serde_json::json!({"type": "object", "properties": {"code": {"type": "string"}, "a": {"type": "integer"}}});
    arbtest::arbtest(|u| {
        let mut answer = String::new();
        while !u.is_empty() {
            let piece = *u.choose(PIECES)?;
            let times = if u.ratio(1, 16)? {
                u.int_in_range(100..=5000)?
            } else {
                1
            };
            answer.push_str(&piece.repeat(times));
        }
        let _ = kt_llm::lenient_value(&answer, None);
        let _ = kt_llm::lenient_value(&answer, Some(&schema));
        let _ = kt_llm::json_block(&answer);
        Ok(())
    })
    .budget_ms(budget);
}
