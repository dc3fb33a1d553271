//! Who made a run, so that a run directory is data and never a program: `kt resume` runs a run's recorded
//! `exec:` command or sends the API key to its recorded `base_url` only when this user made the run on this
//! machine; a run handed over, copied from elsewhere or planted needs `--trust-run`.
//!
//! A uid and a host written in run.json prove nothing (whoever writes the file writes them), so the record is
//! sealed: a keyed BLAKE3 hash, with a secret only this user can read (`~/.local/share/kt/provenance.key`, 0600,
//! made on first use), over the run's id, the uid, the host and the recorded LLM spec and base URL. Changing any
//! of them, or copying the run to another user or machine, breaks the seal.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::run_llm::RunLlm;

/// The sealed record of who created a run (run.json's `provenance`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    pub uid: u32,
    pub host: String,
    /// Hex of the keyed hash (see the module documentation).
    pub seal: String,
}

impl Provenance {
    /// The record for a run `run_id` with `llm`, made now by this user; `None` when no key can be kept (no home
    /// directory): such a run's recorded command or URL then needs `--trust-run`, as a foreign one does.
    pub fn seal(run_id: &str, llm: &RunLlm) -> Option<Provenance> {
        let key = key(true)?;
        let uid = nix::unistd::geteuid().as_raw();
        let host = hostname();
        let seal = digest(&key, run_id, uid, &host, llm);
        Some(Provenance { uid, host, seal })
    }

    /// `Ok` when this user made run `run_id` with `llm` on this machine; otherwise why not, in words.
    pub fn check(record: Option<&Provenance>, run_id: &str, llm: &RunLlm) -> Result<(), String> {
        let Some(p) = record else {
            return Err("run.json records no provenance (an older kt, or written by hand)".into());
        };
        let uid = nix::unistd::geteuid().as_raw();
        let host = hostname();
        if p.uid != uid || p.host != host {
            return Err(format!(
                "it was made by uid {} on {}, not by you (uid {uid}) on {host}",
                p.uid, p.host
            ));
        }
        let Some(key) = key(false) else {
            return Err(
                "you have no provenance key (~/.local/share/kt/provenance.key) to check it with"
                    .into(),
            );
        };
        if digest(&key, run_id, uid, &host, llm) != p.seal {
            return Err(
                "its provenance seal does not match: run.json was changed, or made by another user"
                    .into(),
            );
        }
        Ok(())
    }
}

fn digest(key: &[u8; 32], run_id: &str, uid: u32, host: &str, llm: &RunLlm) -> String {
    let text = format!(
        "kt-run-provenance\0{run_id}\0{uid}\0{host}\0{}\0{}",
        llm.spec.as_deref().unwrap_or(""),
        llm.base_url.as_deref().unwrap_or("")
    );
    blake3::keyed_hash(key, text.as_bytes())
        .to_hex()
        .to_string()
}

/// This machine's name (the kernel's).
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// `$XDG_DATA_HOME/kt/provenance.key`, else `~/.local/share/kt/provenance.key`.
fn key_path() -> Option<PathBuf> {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".local/share"))
        })?;
    Some(data.join("kt").join("provenance.key"))
}

/// The user's key: read, or (with `create`) made from /dev/urandom, 0600 in a 0700 directory.
fn key(create: bool) -> Option<[u8; 32]> {
    let path = key_path()?;
    if let Some(key) = read_key(&path) {
        return Some(key);
    }
    if !create {
        return None;
    }
    let dir = path.parent()?;
    let _ = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir);
    let mut fresh = [0u8; 32];
    std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom").ok()?, &mut fresh).ok()?;
    // O_EXCL: two kt processes making it at once agree on the first one's
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc_nofollow())
        .open(&path)
    {
        Ok(mut f) => {
            f.write_all(hex(&fresh).as_bytes()).ok()?;
            f.sync_all().ok()?;
            Some(fresh)
        }
        Err(_) => read_key(&path),
    }
}

fn read_key(path: &std::path::Path) -> Option<[u8; 32]> {
    let text = std::fs::read_to_string(path).ok()?;
    let bytes: Vec<u8> = (0..text.trim().len() / 2)
        .map(|i| u8::from_str_radix(text.trim().get(2 * i..2 * i + 2)?, 16).ok())
        .collect::<Option<_>>()?;
    bytes.try_into().ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn libc_nofollow() -> i32 {
    nix::fcntl::OFlag::O_NOFOLLOW.bits()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn llm(spec: &str, url: Option<&str>) -> RunLlm {
        RunLlm {
            spec: Some(spec.into()),
            base_url: url.map(str::to_string),
            ..RunLlm::default()
        }
    }

    #[test]
    fn a_sealed_run_is_ours_and_any_change_or_a_foreign_record_is_not() {
        let key = [7u8; 32];
        let a = digest(&key, "r1", 1000, "node1", &llm("exec:ask", None));
        assert_eq!(a, digest(&key, "r1", 1000, "node1", &llm("exec:ask", None)));
        assert_ne!(
            a,
            digest(&key, "r1", 1000, "node1", &llm("exec:evil", None))
        );
        assert_ne!(
            a,
            digest(
                &key,
                "r1",
                1000,
                "node1",
                &llm("exec:ask", Some("http://x"))
            )
        );
        assert_ne!(a, digest(&key, "r2", 1000, "node1", &llm("exec:ask", None)));
        assert_ne!(
            a,
            digest(&[8u8; 32], "r1", 1000, "node1", &llm("exec:ask", None))
        );
        let none = Provenance::check(None, "r1", &llm("exec:ask", None)).unwrap_err();
        assert!(none.contains("no provenance"), "{none}");
        let foreign = Provenance {
            uid: nix::unistd::geteuid().as_raw() + 1,
            host: hostname(),
            seal: a,
        };
        let why = Provenance::check(Some(&foreign), "r1", &llm("exec:ask", None)).unwrap_err();
        assert!(why.contains("not by you"), "{why}");
    }

    #[test]
    fn the_key_is_made_once_and_kept_private() {
        use std::os::unix::fs::PermissionsExt;
        if key_path().is_none() {
            return;
        }
        let k1 = key(true).unwrap();
        let k2 = key(false).unwrap();
        assert_eq!(k1, k2);
        let path = key_path().unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let sealed = Provenance::seal("r9", &llm("exec:ask", None)).unwrap();
        assert!(Provenance::check(Some(&sealed), "r9", &llm("exec:ask", None)).is_ok());
        let changed =
            Provenance::check(Some(&sealed), "r9", &llm("exec:curl evil", None)).unwrap_err();
        assert!(changed.contains("does not match"), "{changed}");
    }
}
