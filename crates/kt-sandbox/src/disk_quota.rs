//! The work directory's disk quota. RLIMIT_FSIZE bounds one file, not how many a program writes, and a
//! size-limited tmpfs over the work directory would live only in the program's mount namespace (its files
//! would vanish with it, before kt reads them). So kt watches the directory while the program runs: every
//! [`CHECK_EVERY`] it adds up the blocks the directory's files take (symbolic links not followed) and kills
//! the program when they pass the quota, or when the directory holds more than [`MAX_ENTRIES`] entries; once
//! more after it ends. A program can overshoot by what it writes within one interval (each file stays
//! within RLIMIT_FSIZE, itself at most the quota); the run is then refused all the same.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

/// How often the work directory is measured while the program runs.
pub const CHECK_EVERY: Duration = Duration::from_millis(200);

/// Entries (files, directories, links) a work directory may hold (a generator writes a few dozen): a
/// million empty files fill no quota
/// but exhaust inodes and make every later walk slow.
pub const MAX_ENTRIES: u64 = 1024;

/// What a work directory takes on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Bytes of the blocks its files take (a sparse file counts what it really uses).
    pub bytes: u64,
    pub entries: u64,
}

impl Usage {
    /// Whether this is over `quota` bytes or over [`MAX_ENTRIES`].
    pub fn exceeds(&self, quota: u64) -> bool {
        self.bytes > quota || self.entries > MAX_ENTRIES
    }
}

/// Walks `dir` without following links, stopping early once past `quota` or [`MAX_ENTRIES`] (the verdict
/// is known). Entries that vanish or cannot be read mid-walk are skipped.
pub fn usage(dir: &Path, quota: u64) -> Usage {
    let mut u = Usage {
        bytes: 0,
        entries: 0,
    };
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(list) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in list.flatten() {
            let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
                continue;
            };
            u.entries += 1;
            u.bytes = u.bytes.saturating_add(meta.blocks().saturating_mul(512));
            if meta.is_dir() {
                stack.push(entry.path());
            }
            if u.exceeds(quota) {
                return u;
            }
        }
    }
    u
}

/// Whether the quota holds on this machine: a shell in the generator sandbox (1 MiB quota) writes 512 KiB
/// files until it is stopped. `Ok` with what stopped it, `Err` with what happened instead.
pub fn probe() -> Result<String, String> {
    let mut p = crate::policy::Policy::for_generator().allow_unsandboxed(true);
    p.wall_timeout = Some(Duration::from_secs(10));
    p.disk_quota = Some(1 << 20);
    let sandbox = crate::sandbox::Sandbox::new(p);
    let script = "i=0; while [ $i -lt 64 ]; do head -c 524288 /dev/zero > f$i || exit 1; i=$((i+1)); done; sleep 20";
    match sandbox.run("/bin/sh", &["-c", script], None) {
        Ok(o) => match o.ending {
            crate::outcome::Ending::DiskQuotaExceeded { used, .. } => Ok(format!(
                "a program past a 1 MiB quota was stopped at {} after {:.1} s",
                human(used),
                o.elapsed.as_secs_f64()
            )),
            other => Err(format!(
                "a program past a 1 MiB quota ended otherwise: {other:?}"
            )),
        },
        Err(e) => Err(format!("the probe could not run: {e}")),
    }
}

/// "1.5 GiB", "64.0 MiB".
pub fn human(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_in_nested_directories_count_and_links_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("out")).unwrap();
        std::fs::write(dir.path().join("out/a.bin"), vec![1u8; 1 << 20]).unwrap();
        let big = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(big.path(), vec![1u8; 4 << 20]).unwrap();
        std::os::unix::fs::symlink(big.path(), dir.path().join("link")).unwrap();
        let u = usage(dir.path(), u64::MAX);
        assert_eq!(u.entries, 3);
        assert!(u.bytes >= 1 << 20 && u.bytes < 2 << 20, "{u:?}");
        assert!(u.exceeds(512 << 10) && !u.exceeds(2 << 20));
    }

    #[test]
    fn a_sparse_file_counts_what_it_really_takes() {
        let dir = tempfile::tempdir().unwrap();
        let f = std::fs::File::create(dir.path().join("sparse")).unwrap();
        f.set_len(1 << 40).unwrap();
        assert!(usage(dir.path(), u64::MAX).bytes < 1 << 20);
    }

    #[test]
    fn the_probe_finds_the_quota_holding_here() {
        let held = probe();
        assert!(
            held.as_ref().is_ok_and(|t| t.contains("stopped at")),
            "{held:?}"
        );
    }

    #[test]
    fn too_many_entries_exceed_any_quota() {
        let u = Usage {
            bytes: 0,
            entries: MAX_ENTRIES + 1,
        };
        assert!(u.exceeds(u64::MAX));
        assert_eq!(human(3 << 29), "1.5 GiB");
        assert_eq!(human(64 << 20), "64.0 MiB");
    }
}
