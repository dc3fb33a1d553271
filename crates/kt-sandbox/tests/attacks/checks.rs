//! What the host side checks after a case (beyond `ESCAPED` in the generator's error), and which protection a
//! case's containment rests on.

use std::path::{Path, PathBuf};

use kt_sandbox::{GeneratorError, Protections};

use super::Host;

pub(super) fn none(
    _: &Host,
    _: &Result<kt_sandbox::GeneratedTest, GeneratorError>,
) -> Result<(), String> {
    Ok(())
}

pub(super) fn refused_output(
    _: &Host,
    r: &Result<kt_sandbox::GeneratedTest, GeneratorError>,
) -> Result<(), String> {
    match r {
        Err(GeneratorError::OutputRefused { .. }) | Err(GeneratorError::OutputInvalid { .. }) => {
            Ok(())
        }
        other => Err(format!("kt read the planted file: {other:?}")),
    }
}

pub(super) fn limit_stopped(
    _: &Host,
    r: &Result<kt_sandbox::GeneratedTest, GeneratorError>,
) -> Result<(), String> {
    match r {
        Err(
            GeneratorError::LimitExceeded { .. }
            | GeneratorError::TimedOut { .. }
            | GeneratorError::OutputTooLarge { .. }
            | GeneratorError::Crashed { .. },
        ) => Ok(()),
        other => Err(format!("no limit stopped it: {other:?}")),
    }
}

pub(super) fn quota_stopped(
    _: &Host,
    r: &Result<kt_sandbox::GeneratedTest, GeneratorError>,
) -> Result<(), String> {
    match r {
        Err(e @ GeneratorError::DiskQuota { .. })
            if e.to_string().contains("disk_quota_mb") && e.to_string().contains("256.0 MiB") =>
        {
            Ok(())
        }
        other => Err(format!("the disk quota did not stop it: {other:?}")),
    }
}

pub(super) fn appendable_untouched(
    h: &Host,
    _: &Result<kt_sandbox::GeneratedTest, GeneratorError>,
) -> Result<(), String> {
    let len = std::fs::metadata(&h.appendable)
        .map(|m| m.len())
        .unwrap_or(0);
    if len == 0 {
        Ok(())
    } else {
        Err(format!("{} grew to {len} bytes", h.appendable.display()))
    }
}

pub(super) fn host_dir_untouched(
    h: &Host,
    _: &Result<kt_sandbox::GeneratedTest, GeneratorError>,
) -> Result<(), String> {
    let n = std::fs::read_dir(&h.host_dir)
        .map(|d| d.count())
        .unwrap_or(0);
    if n == 0 {
        Ok(())
    } else {
        Err(format!("{n} files appeared in {}", h.host_dir.display()))
    }
}

pub(super) fn no_marker_on_host(
    h: &Host,
    _: &Result<kt_sandbox::GeneratedTest, GeneratorError>,
) -> Result<(), String> {
    for dir in ["/tmp", "/var/tmp", "/run", "/run/lock", "/dev/shm", "/"] {
        let path = Path::new(dir).join(&h.marker);
        if std::fs::symlink_metadata(&path).is_ok() {
            let _ = std::fs::remove_file(&path);
            return Err(format!("{} was left on the host", path.display()));
        }
    }
    Ok(())
}

pub(super) fn test_written_without_secret(
    h: &Host,
    r: &Result<kt_sandbox::GeneratedTest, GeneratorError>,
) -> Result<(), String> {
    let secret = std::fs::read(&h.secret).unwrap_or_default();
    if let Ok(test) = r {
        for entry in walk(&test.dir) {
            if std::fs::read(&entry).unwrap_or_default() == secret {
                return Err(format!("the secret was copied to {}", entry.display()));
            }
        }
    }
    Ok(())
}

pub(super) fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p)
            } else {
                out.push(p)
            }
        }
    }
    out
}

pub(super) fn network(p: &Protections) -> bool {
    p.network_namespace
}
pub(super) fn mounts(p: &Protections) -> bool {
    p.mount_namespace
}
pub(super) fn pid_ns(p: &Protections) -> bool {
    p.pid_namespace
}
pub(super) fn own_uid(p: &Protections) -> bool {
    p.unprivileged_user
}
pub(super) fn pids(p: &Protections) -> bool {
    p.pids_limit
}
