//! End-to-end tests of run directories and configurations as data (issue 45): a run whose recorded LLM runs a
//! command or receives the key is resumed with it only when the run is provably the user's, else with
//! `--trust-run`; a run with a symbolic link inside is refused; a `kt.toml` another user may write is refused;
//! a killed `kt testgen` run ends as interrupted; a run whose store vanished is reported, not restarted; an
//! answer path planted in result.json is refused. No GPU, no LLM service.
//!
//! As root these tests run twice: as root, and (`trust_holds_for_an_ordinary_user`, scripts/test.sh) as
//! `$KT_CORPUS_USER`, an ordinary user with a home, with a kt.toml planted in its project by another user.

#![allow(clippy::unwrap_used)]

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

mod support;
use support::other_user::OtherUser;
use support::{kt, kt_command, only_entry, output, read_json, require_no_gpu, text};

use support::stopped_matmul_run as stopped_run;

#[test]
fn a_run_is_private_and_a_planted_exec_command_or_url_needs_trust_run() {
    require_no_gpu();
    let home = tempfile::tempdir().unwrap();
    let run = stopped_run(home.path(), &home.path().join("runs"));
    let mode = std::fs::metadata(&run).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "a run is its user's only");
    let me = std::fs::metadata("/proc/self").unwrap().uid();
    assert_eq!(
        std::fs::metadata(&run).unwrap().uid(),
        me,
        "made by the user who ran kt"
    );
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
    assert_kt_toml_refused(home.path(), &project, "other users may write it");
}

/// Whether this process runs as root.
fn is_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// A project whose kt.toml another user owns (`nobody`, uid 65534), made here as root, or the one root made
/// for this run as an ordinary user (`KT_FOREIGN_PROJECT`); `None` where neither can be.
fn foreign_project(keep: &Path) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("KT_FOREIGN_PROJECT") {
        return Some(PathBuf::from(dir));
    }
    if !is_root() {
        return None;
    }
    let project = keep.join("project");
    plant_foreign_kt_toml(&project);
    Some(project)
}

/// `project/kt.toml` that runs `touch pwned` and is owned by `nobody`, not writable by others (root only).
fn plant_foreign_kt_toml(project: &Path) {
    std::fs::create_dir_all(project).unwrap();
    let config = project.join("kt.toml");
    std::fs::write(
        &config,
        "[llm]\nprovider = \"exec\"\ncommand = \"touch pwned\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
    let status = std::process::Command::new("chown")
        .args(["65534"])
        .arg(&config)
        .status()
        .unwrap();
    assert!(status.success(), "chown 65534 {}", config.display());
}

#[test]
fn a_kt_toml_another_user_owns_is_refused() {
    let keep = tempfile::tempdir().unwrap();
    let Some(project) = foreign_project(keep.path()) else {
        println!(
            "skipped: planting another user's kt.toml needs root (as root, trust_holds_for_an_ordinary_user runs \
             this as an ordinary user)"
        );
        return;
    };
    let home = tempfile::tempdir().unwrap();
    assert_kt_toml_refused(home.path(), &project, "owned by uid 65534");
}

/// `kt llm ask` in `project` refuses its kt.toml, saying `why` and how to trust it, and never runs its command.
fn assert_kt_toml_refused(home: &Path, project: &Path, why: &str) {
    let out = output(
        kt_command(home)
            .current_dir(project)
            .args(["llm", "ask", "hello"]),
    );
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("refusing") && stderr.contains(why) && stderr.contains("KT_SAFE_DIRECTORY"),
        "{stderr}"
    );
    assert!(!project.join("pwned").exists(), "the kt.toml's command ran");
}

#[test]
fn an_answer_path_planted_in_result_json_is_refused_and_nothing_is_written_there() {
    let home = tempfile::tempdir().unwrap();
    let (out, _) = support::start_manual_vector_add(home.path());
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let run = only_entry(&home.path().join("runs"));
    let mut result = read_json(&run.join("result.json"));
    let waiting = &result["waiting_for"];
    let real = PathBuf::from(waiting["answer_file"].as_str().unwrap());
    let answer = home.path().join("answer.md");
    std::fs::write(
        &answer,
        support::vector_add_answer(waiting["node"].as_str().unwrap()),
    )
    .unwrap();
    let victim = home.path().join("victim.answer.md");
    std::fs::write(&victim, "mine").unwrap();
    // beside the real answer file, where the manual provider writes: a link to the victim
    let link = real.with_file_name("999-x.answer.md");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    for (target, why) in [
        (&victim, "outside the run directory"),
        (&link, "writing the answer"),
    ] {
        result["waiting_for"]["answer_file"] = serde_json::json!(target);
        std::fs::write(run.join("result.json"), result.to_string()).unwrap();
        let out = kt(
            home.path(),
            &[
                "resume",
                run.to_str().unwrap(),
                "--answer",
                answer.to_str().unwrap(),
            ],
        );
        let stderr = text(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(why),
            "{target:?}: {stderr}"
        );
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
}

/// The tests above, run again as an ordinary user with a home (scripts/test.sh, as root).
const AS_AN_ORDINARY_USER: [&str; 5] = [
    "a_run_is_private_and_a_planted_exec_command_or_url_needs_trust_run",
    "a_lost_store_is_reported_and_a_killed_testgen_run_ends_as_interrupted",
    "a_kt_toml_other_users_may_write_is_refused_like_gits_safe_directory",
    "a_kt_toml_another_user_owns_is_refused",
    "an_answer_path_planted_in_result_json_is_refused_and_nothing_is_written_there",
];

#[test]
#[ignore = "runs these tests as $KT_CORPUS_USER: needs root, setpriv and that user (scripts/test.sh creates it)"]
fn trust_holds_for_an_ordinary_user() {
    let user = OtherUser::from_env();
    let staged = user.stage(true);
    // a project of the user's with a kt.toml that another user (nobody) owns
    let project = staged.owned_dir(&user, "project");
    plant_foreign_kt_toml(&project);
    let ran = user.run_tests(
        &staged,
        &AS_AN_ORDINARY_USER,
        &staged.root,
        &[("KT_FOREIGN_PROJECT", project.as_path())],
    );
    println!("{}", ran.text);
    assert!(ran.passed, "as {} ({}):\n{}", user.name, user.uid, ran.text);
    assert!(!project.join("pwned").exists());
}
