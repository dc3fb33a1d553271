//! Another local user, as root sees it: its uid, gid and home, setpriv's arguments that become it, and a python3
//! with numpy it can run. Shared by the attack corpus as an ordinary user and by kt's end-to-end tests run as
//! another user (tests/support/other_user.rs includes this file).

#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// uid, gid and home of `name` from /etc/passwd.
pub fn user(name: &str) -> Result<(u32, u32, PathBuf), String> {
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
pub fn as_user(uid: u32, gid: u32) -> Vec<String> {
    vec![
        format!("--reuid={uid}"),
        format!("--regid={gid}"),
        "--clear-groups".into(),
        "--".into(),
    ]
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
pub fn python_for(
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
