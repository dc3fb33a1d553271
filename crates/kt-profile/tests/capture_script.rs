//! experiments/profile/capture-ncu.sh captures real reports for these tests on a GPU; it must run exactly
//! the command line that `ProfileCommand` builds, or the captured fixtures would test another command.

#![allow(clippy::unwrap_used)]

use kt_profile::{METRICS, NcuPath, ProfileCommand};
use std::path::Path;

fn script() -> String {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/profile/capture-ncu.sh");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_capture_script_asks_for_the_crates_metric_set() {
    let text = script();
    let line = text.lines().find(|l| l.starts_with("METRICS=")).unwrap();
    assert_eq!(line.trim_start_matches("METRICS="), METRICS.join(","));
}

#[test]
fn the_capture_script_runs_the_command_line_the_crate_builds() {
    let text = script();
    // The ncu invocation: from the line that starts with "$NCU" up to the end of its continuation lines.
    let start = text.find("\"$NCU\" --target-processes").unwrap();
    let mut invocation = String::new();
    for line in text[start..].lines() {
        invocation.push_str(line.trim_end_matches('\\'));
        invocation.push(' ');
        if !line.ends_with('\\') {
            break;
        }
    }
    let invocation = invocation
        .split(" || ")
        .next()
        .unwrap()
        .replace("'regex:^matmul$'", "regex:^matmul$")
        .replace("\"$METRICS\"", &METRICS.join(","))
        .replace("\"$out\"", "LOG")
        .replace("\"$work/matmul_bench\"", "PROGRAM");
    let words: Vec<&str> = invocation.split_whitespace().collect();
    let built = ProfileCommand::new(NcuPath("ncu".into()), "matmul", "PROGRAM")
        .args(["1024"])
        .ncu_args(Path::new("LOG"));
    let built: Vec<String> = built
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert_eq!(words[0], "\"$NCU\"");
    assert_eq!(words[1..], built);
}
