//! What one run's processes hold together, for the limits no rlimit can express: RLIMIT_AS caps each process
//! (three children could each hold the cap), and the work directory's quota counts the files it lists (a file
//! deleted while still open keeps its blocks and is listed nowhere). kt finds the run's processes in /proc (those
//! in its PID namespace, those of its own uid, or, with neither, those of its process group) and adds up their
//! anonymous and shared memory and the blocks of the deleted files they hold open.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// How a run's processes are recognised.
#[derive(Debug, Clone)]
pub(crate) struct Tree {
    /// `pid:[N]` of the run's PID namespace.
    pid_ns: Option<std::path::PathBuf>,
    /// The run's own uid (kt is root).
    uid: Option<u32>,
    /// The process group kt started (always: it holds what did not detach).
    pgid: i32,
}

/// What the run's processes hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TreeUsage {
    /// Resident anonymous and shared memory, summed over the processes (pages a fork shares count twice).
    pub memory: u64,
    /// Blocks of deleted files (and memfds) still open in the processes, each file once.
    pub unlinked: u64,
    pub processes: u64,
}

impl Tree {
    /// The tree of the process `pid` kt started (its process group leader), run as `uid` when kt switched it.
    pub(crate) fn of(pid: i32, uid: Option<u32>) -> Self {
        let own = std::fs::read_link("/proc/self/ns/pid").ok();
        let child = std::fs::read_link(format!("/proc/{pid}/ns/pid_for_children")).ok();
        Tree {
            pid_ns: child.filter(|c| Some(c) != own.as_ref()),
            uid,
            pgid: pid,
        }
    }

    fn contains(&self, proc_dir: &Path) -> bool {
        if let Some(ns) = &self.pid_ns
            && std::fs::read_link(proc_dir.join("ns/pid")).is_ok_and(|n| &n == ns)
        {
            return true;
        }
        let Ok(meta) = std::fs::metadata(proc_dir) else {
            return false;
        };
        if self.uid.is_some_and(|uid| uid == meta.uid()) {
            return true;
        }
        // the fifth field of stat, after the parenthesised command (which may itself hold spaces and parentheses)
        std::fs::read_to_string(proc_dir.join("stat")).is_ok_and(|stat| {
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(2)?.parse::<i32>().ok())
                == Some(self.pgid)
        })
    }

    /// What the run's processes hold now. Processes that vanish mid-walk are skipped.
    pub(crate) fn usage(&self) -> TreeUsage {
        let mut usage = TreeUsage::default();
        let mut files: HashSet<(u64, u64)> = HashSet::new();
        let Ok(list) = std::fs::read_dir("/proc") else {
            return usage;
        };
        for entry in list.flatten() {
            let name = entry.file_name();
            if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let dir = entry.path();
            if !self.contains(&dir) {
                continue;
            }
            usage.processes += 1;
            if let Ok(status) = std::fs::read_to_string(dir.join("status")) {
                usage.memory += status_kib(&status, "RssAnon:") * 1024;
                usage.memory += status_kib(&status, "RssShmem:") * 1024;
            }
            for fd in std::fs::read_dir(dir.join("fd"))
                .into_iter()
                .flatten()
                .flatten()
            {
                let Ok(meta) = std::fs::metadata(fd.path()) else {
                    continue;
                };
                let memfd = std::fs::read_link(fd.path())
                    .is_ok_and(|t| t.to_string_lossy().starts_with("/memfd:"));
                if meta.is_file()
                    && (meta.nlink() == 0 || memfd)
                    && files.insert((meta.dev(), meta.ino()))
                {
                    usage.unlinked += meta.blocks() * 512;
                }
            }
        }
        usage
    }
}

/// The value in KiB of a `Name:   123 kB` line of /proc/PID/status (0 when absent).
fn status_kib(status: &str, name: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn status_lines_are_read_in_kib() {
        let status = "Name:\tpython3\nRssAnon:\t  2048 kB\nRssShmem:\t 0 kB\n";
        assert_eq!(status_kib(status, "RssAnon:"), 2048);
        assert_eq!(status_kib(status, "VmSwap:"), 0);
    }

    #[test]
    fn a_deleted_file_held_open_counts_and_the_group_is_found() {
        // this test process is its own tree (its process group): a deleted 1 MiB file it holds counts once
        let pgid = nix::unistd::getpgrp().as_raw();
        let tree = Tree {
            pid_ns: None,
            uid: None,
            pgid,
        };
        let before = tree.usage();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&vec![1u8; 1 << 20]).unwrap();
        file.sync_all().unwrap();
        let _again = file.try_clone().unwrap();
        let after = tree.usage();
        assert!(after.processes >= 1, "{after:?}");
        assert!(
            after.unlinked >= before.unlinked + (1 << 20),
            "{before:?} -> {after:?}"
        );
        assert!(after.memory > 0, "{after:?}");
    }
}
