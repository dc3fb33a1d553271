//! The corpus as an ordinary user with a home directory and files to steal in it, run from root (scripts/test.sh):
//! `$KT_CORPUS_USER` (created there with `useradd -m`), its real home as `$HOME`, a project directory in it as the
//! working directory, and a world-writable scratch directory outside /tmp (as HPC nodes have).

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use kt_sandbox::PythonRuntime;

#[path = "user_python.rs"]
mod user_python;
use user_python::{as_user, python_for, user};

#[test]
#[ignore = "runs the corpus as $KT_CORPUS_USER: needs root, setpriv and that user (scripts/test.sh creates it)"]
fn corpus_holds_for_an_ordinary_user() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "run as root: this test switches to $KT_CORPUS_USER (as an ordinary user, corpus_holds_here is the test)"
    );
    let name = std::env::var("KT_CORPUS_USER")
        .expect("KT_CORPUS_USER names an ordinary user with a home directory (scripts/test.sh: useradd -m kt-corpus)");
    let (uid, gid, home) = user(&name).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        uid != 0 && home.is_dir(),
        "{name} needs a uid of its own and a home: {home:?}"
    );
    let python = PythonRuntime::probe().expect("python3 with numpy");
    let scratch = tempfile::tempdir().unwrap();
    std::fs::set_permissions(scratch.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (interpreter, pythonpath) = python_for(uid, gid, &python.interpreter, scratch.path())
        .unwrap_or_else(|why| panic!("no python3 with numpy that {name} can run here: {why}"));
    println!(
        "{name} runs {} (PYTHONPATH: {})",
        interpreter.display(),
        pythonpath.as_ref().map_or("not set".into(), |p| format!(
            "a copy of numpy in {}",
            p.display()
        ))
    );
    // the test binary itself may lie where the user cannot enter (a checkout under /root)
    let exe = scratch.path().join("attacks");
    std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    // a world-writable scratch directory outside /tmp, as HPC nodes have
    let shared = PathBuf::from(format!("/var/lib/kt-attack-scratch-{}", std::process::id()));
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    // the user runs kt from a project in its home
    let project = home.join("proj");
    std::fs::create_dir_all(&project).unwrap();
    nix::unistd::chown(
        &project,
        Some(nix::unistd::Uid::from_raw(uid)),
        Some(nix::unistd::Gid::from_raw(gid)),
    )
    .unwrap();
    let mut command = std::process::Command::new("setpriv");
    command
        .args(as_user(uid, gid))
        .arg(&exe)
        .args([
            "--exact",
            "corpus_holds_here",
            "--nocapture",
            "--test-threads=1",
        ])
        .current_dir(&project)
        .env_remove("KT_RUNS_DIR")
        .env("KT_PYTHON", &interpreter)
        .env("TMPDIR", "/tmp")
        .env("HOME", &home)
        .env("KT_ATTACK_HOME", &home)
        .env("KT_ATTACK_SCRATCH", &shared)
        .env("KT_ATTACK_OUTSIDE", &shared)
        .env("USER", &name);
    if let Some(path) = &pythonpath {
        command.env("PYTHONPATH", path);
    }
    let out = command.output().expect("setpriv runs");
    let _ = std::fs::remove_dir_all(&shared);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    assert!(out.status.success(), "the corpus as {name} failed:\n{text}");
    assert!(
        text.contains("attack corpus as an ordinary user") && text.contains("the real one"),
        "{text}"
    );
}
