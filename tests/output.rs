//! End-to-end tests of how kt's output behaves when nobody reads it or a pipe reads it: writing into a closed
//! pipe ends kt quietly (status 141, as SIGPIPE ends other tools, or 0 when it had finished), never with a
//! panic; log lines into a pipe carry no colour codes; an error is printed once.

#![allow(clippy::unwrap_used)]

use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{Output, Stdio};

use kt_pipeline::job::recorded_run::record_matmul_run;

mod support;
use support::{kt_command, text};

/// Runs `kt args` with stdout a pipe whose reading end is already closed (`… | head -c0`).
fn into_closed_pipe(home: &Path, args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    kt_command(home)
        .env("KT_RUNS_DIR", home.join("runs"))
        .args(args)
        .stdout(Stdio::from(OwnedFd::from(writer)))
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

fn assert_quiet_end(out: &Output, args: &[&str]) {
    let err = text(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 141)),
        "kt {args:?}: {:?}\n{err}",
        out.status
    );
    assert!(!err.contains("panicked"), "kt {args:?}: {err}");
    assert!(!err.contains("Broken pipe"), "kt {args:?}: {err}");
}

#[test]
fn a_closed_pipe_ends_every_printing_command_quietly() {
    let home = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let run = rt
        .block_on(record_matmul_run(&home.path().join("runs")))
        .run_id();
    let commands: [&[&str]; 5] = [
        &["runs", "show", &run, "--json"],
        &["debug", "state", &run],
        &["graph", "export", "autonomous"],
        &["inspect", "naive-kernels/matmul.cu"],
        &["tune", "naive-kernels/matmul.cu", "--dry-run"],
    ];
    for args in commands {
        let out = into_closed_pipe(home.path(), args);
        assert_quiet_end(&out, args);
    }
}

#[test]
fn an_error_into_a_pipe_is_said_once_without_colour_codes() {
    let home = tempfile::tempdir().unwrap();
    let out = kt_command(home.path())
        .args([
            "tune",
            "naive-kernels/matmul.cu",
            "--restrict",
            "nosuch > 4",
        ])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains('\u{1b}'), "colour codes into a pipe: {err:?}");
    assert_eq!(
        err.matches("nosuch > 4").count(),
        1,
        "said more than once: {err}"
    );
}

/// `naive-kernels/vectorAdd.cu` with its sidecar edited by `edit`, in a directory of its own.
fn vector_add_with_sidecar(dir: &Path, edit: impl Fn(String) -> String) -> std::path::PathBuf {
    let root = support::root().join("naive-kernels");
    std::fs::copy(root.join("vectorAdd.cu"), dir.join("k.cu")).unwrap();
    let toml = std::fs::read_to_string(root.join("vectorAdd.toml")).unwrap();
    std::fs::write(dir.join("k.toml"), edit(toml)).unwrap();
    dir.join("k.cu")
}

#[test]
fn a_sidecar_with_an_unknown_key_is_refused_in_sidecar_terms() {
    let home = tempfile::tempdir().unwrap();
    let cu = vector_add_with_sidecar(home.path(), |t| format!("{t}rtoll = {{ c = 0.1 }}\n"));
    let out = kt_command(home.path())
        .args(["tune", cu.to_str().unwrap(), "--dry-run"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("unknown key `rtoll`") && err.contains("line "),
        "{err}"
    );
    assert!(err.contains("`rtol`"), "the allowed keys: {err}");
    for rust in ["field", "untagged", "ScalarValue", "UnknownParameter"] {
        assert!(!err.contains(rust), "`{rust}` in {err}");
    }
    // a value of the wrong kind, and a name that is not a parameter, in the same terms
    let cu = vector_add_with_sidecar(home.path(), |t| t.replace("n = 10007", "n = \"small\""));
    let out = kt_command(home.path())
        .args(["tune", cu.to_str().unwrap()])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(err.contains("expected a number"), "{err}");
    assert!(
        !err.contains("untagged") && !err.contains("ScalarValue"),
        "{err}"
    );
    let cu = vector_add_with_sidecar(home.path(), |t| {
        t.replace("outputs = [\"c\"]", "outputs = [\"q\"]")
    });
    let out = kt_command(home.path())
        .args(["tune", cu.to_str().unwrap()])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(err.contains("`outputs` mentions `q`"), "{err}");
    assert!(!err.contains("UnknownParameter"), "{err}");
    // a missing key is said once
    let cu = vector_add_with_sidecar(home.path(), |t| t.replace("flops = \"n\"\n", ""));
    let out = kt_command(home.path())
        .args(["tune", cu.to_str().unwrap()])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(err.matches("missing key `flops`").count(), 1, "{err}");
}
