//! The corpus as an ordinary user with a home directory and files to steal in it, run from root (scripts/test.sh):
//! `$KT_CORPUS_USER` (created there with `useradd -m`), its real home as `$HOME`, a project directory in it as the
//! working directory, and a world-writable scratch directory outside /tmp (as HPC nodes have).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use kt_sandbox::PythonRuntime;

/// uid, gid and home of `name` from /etc/passwd.
fn user(name: &str) -> Result<(u32, u32, PathBuf), String> {
    let passwd = std::fs::read_to_string("/etc/passwd").map_err(|e| e.to_string())?;
    passwd
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.len() >= 7 && f[0] == name)
        .and_then(|f| Some((f[2].parse().ok()?, f[3].parse().ok()?, PathBuf::from(f[5]))))
        .ok_or_else(|| {
            format!("no user {name} in /etc/passwd (scripts/test.sh creates it: useradd -m {name})")
        })
}

/// setpriv's arguments that become `uid`/`gid` with no supplementary groups.
fn as_user(uid: u32, gid: u32) -> Vec<String> {
    vec![
        format!("--reuid={uid}"),
        format!("--regid={gid}"),
        "--clear-groups".into(),
        "--".into(),
    ]
}

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

/// Whether `uid` can run `python` and import numpy (with `pythonpath`); the error output when not.
fn imports_numpy(
    uid: u32,
    gid: u32,
    python: &Path,
    pythonpath: Option<&Path>,
) -> Result<(), String> {
    // through a shell that already is the user: setpriv's own exec of the interpreter resolves its path with
    // root's access still in effect, and would pass where the test binary (as the user) cannot start it
    let mut c = std::process::Command::new("setpriv");
    c.args(as_user(uid, gid))
        .args(["/bin/sh", "-c", "exec \"$0\" -B -c 'import numpy'"])
        .arg(python)
        .env_remove("PYTHONPATH")
        .current_dir("/");
    if let Some(p) = pythonpath {
        c.env("PYTHONPATH", p);
    }
    let out = c.output().map_err(|e| format!("setpriv: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// A python3 with numpy the user can run: `python` itself when it can; else an interpreter of the same version
/// that the user can run (its base or the system's), with a copy of `python`'s numpy in `scratch/site` (then
/// PYTHONPATH). The error says what was tried.
fn python_for(
    uid: u32,
    gid: u32,
    python: &Path,
    scratch: &Path,
) -> Result<(PathBuf, Option<PathBuf>), String> {
    let Err(direct) = imports_numpy(uid, gid, python, None) else {
        return Ok((python.to_path_buf(), None));
    };
    let out = std::process::Command::new(python)
        .args([
            "-c",
            "import numpy, os, sys; print(os.path.dirname(os.path.dirname(numpy.__file__))); \
             print('%d.%d' % sys.version_info[:2]); print(sys._base_executable)",
        ])
        .output()
        .map_err(|e| format!("{}: {e}", python.display()))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let [site, version, base] = text.lines().collect::<Vec<_>>()[..] else {
        return Err(format!(
            "{} did not describe itself: {text}",
            python.display()
        ));
    };
    let site_copy = scratch.join("site");
    std::fs::create_dir(&site_copy).map_err(|e| e.to_string())?;
    for entry in std::fs::read_dir(site)
        .map_err(|e| format!("{site}: {e}"))?
        .flatten()
    {
        if entry.file_name().to_string_lossy().starts_with("numpy") {
            let status = std::process::Command::new("cp")
                .arg("-a")
                .arg(entry.path())
                .arg(&site_copy)
                .status()
                .map_err(|e| e.to_string())?;
            if !status.success() {
                return Err(format!("copying {} failed", entry.path().display()));
            }
        }
    }
    std::fs::set_permissions(&site_copy, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| e.to_string())?;
    let mut tried = vec![format!("{}: {direct}", python.display())];
    let candidates = [
        base.to_string(),
        format!("/usr/bin/python{version}"),
        format!("/usr/local/bin/python{version}"),
        "/usr/bin/python3".to_string(),
    ];
    for candidate in candidates {
        let candidate = PathBuf::from(candidate);
        match imports_numpy(uid, gid, &candidate, Some(&site_copy)) {
            Ok(()) => return Ok((candidate, Some(site_copy))),
            Err(e) => tried.push(format!("{} with a copy of numpy: {e}", candidate.display())),
        }
    }
    Err(tried.join("; "))
}
