//! How a sandboxed run ended, and the honest mapping from signals and error messages to the limit that stopped it.

use std::time::Duration;

use serde::Serialize;

use crate::policy::Policy;

/// A resource limit that stopped a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    Cpu,
    Memory,
    /// The memory of all the run's processes together (`Policy::memory`).
    RunMemory,
    FileSize,
    Processes,
    OpenFiles,
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Limit::Cpu => "CPU-time limit",
            Limit::Memory => "memory (address-space) limit",
            Limit::RunMemory => "memory limit (all its processes together)",
            Limit::FileSize => "file-size limit",
            Limit::Processes => "process limit",
            Limit::OpenFiles => "open-files limit",
        })
    }
}

/// How the program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Ending {
    /// It exited by itself (any exit code) and no limit explains a failure.
    Finished { exit_code: i32 },
    /// The wall-clock timeout expired; the whole process group was killed.
    TimedOut { limit: Duration },
    /// A resource limit stopped it (by signal, or by making an operation fail so that it gave up).
    KilledByLimit { which: Limit },
    /// It died of a signal no limit explains (SIGSEGV, SIGABRT, …).
    Crashed { signal: i32 },
    /// It wrote more than the output cap to stdout + stderr; it was killed.
    OutputTooLarge { limit: usize },
    /// Its work directory took more than the disk quota (bytes), or held too many entries; it was killed
    /// (or, having finished, its output refused).
    DiskQuotaExceeded { limit: u64, used: u64, entries: u64 },
}

/// The result of a one-shot run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub ending: Ending,
    /// Captured stdout (at most the output cap, stdout and stderr together).
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub elapsed: Duration,
    /// User + system CPU time of the program and the children it waited for.
    pub cpu_time: Duration,
}

impl Outcome {
    /// True for `Finished { exit_code: 0 }`.
    pub fn success(&self) -> bool {
        self.ending == Ending::Finished { exit_code: 0 }
    }

    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// How much of stderr's end is searched for a limit's error message: a traceback's last lines, not whatever the
/// program printed earlier.
const STDERR_TAIL: usize = 4096;

/// Maps a terminated program to an [`Ending`], given the limits that were in force.
///
/// Signals are unambiguous: SIGXCPU is the CPU limit's soft signal, SIGXFSZ the file-size limit's (Python ignores
/// SIGXFSZ and sees EFBIG instead). A SIGKILL kt did not send, once the CPU time reached the limit, is the
/// CPU limit's hard stop. Limits that make a call fail instead of killing (address space → ENOMEM/MemoryError,
/// processes → EAGAIN from fork, open files → EMFILE, file size → EFBIG) are recognised from the error the
/// program died with, and only when that limit was actually set, so a program that merely prints "MemoryError"
/// without a limit in force is not misreported.
pub(crate) fn classify(
    policy: &Policy,
    pids_enforced: bool,
    exit_code: Option<i32>,
    signal: Option<i32>,
    cpu_time: Duration,
    stderr: &[u8],
) -> Ending {
    let tail =
        String::from_utf8_lossy(&stderr[stderr.len().saturating_sub(STDERR_TAIL)..]).into_owned();
    let mentions = |needles: &[&str]| needles.iter().any(|n| tail.contains(n));
    let by_message = || -> Option<Limit> {
        if policy.address_space.is_some()
            && mentions(&[
                "MemoryError",
                "Cannot allocate memory",
                "std::bad_alloc",
                "out of memory",
            ])
        {
            return Some(Limit::Memory);
        }
        if pids_enforced
            && policy.processes.is_some()
            && mentions(&[
                "BlockingIOError",
                "Resource temporarily unavailable",
                "can't start new thread",
                "pthread_create failed",
            ])
        {
            return Some(Limit::Processes);
        }
        if policy.open_files.is_some() && mentions(&["Too many open files", "[Errno 24]"]) {
            return Some(Limit::OpenFiles);
        }
        if policy.file_size.is_some() && mentions(&["File too large", "[Errno 27]"]) {
            return Some(Limit::FileSize);
        }
        None
    };
    match (exit_code, signal) {
        (_, Some(libc::SIGXCPU)) => Ending::KilledByLimit { which: Limit::Cpu },
        (_, Some(libc::SIGXFSZ)) => Ending::KilledByLimit {
            which: Limit::FileSize,
        },
        (_, Some(libc::SIGKILL))
            if policy
                .cpu_seconds
                .is_some_and(|s| cpu_time >= Duration::from_secs(s)) =>
        {
            Ending::KilledByLimit { which: Limit::Cpu }
        }
        (_, Some(sig)) => match by_message() {
            Some(which) => Ending::KilledByLimit { which },
            None => Ending::Crashed { signal: sig },
        },
        (Some(0), None) => Ending::Finished { exit_code: 0 },
        (Some(code), None) => match by_message() {
            Some(which) => Ending::KilledByLimit { which },
            None => Ending::Finished { exit_code: code },
        },
        (None, None) => Ending::Crashed { signal: 0 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigxcpu_is_reported_as_the_cpu_limit() {
        let p = Policy::for_generator();
        let e = classify(&p, true, None, Some(libc::SIGXCPU), Duration::ZERO, b"");
        assert_eq!(e, Ending::KilledByLimit { which: Limit::Cpu });
    }

    #[test]
    fn python_memory_error_is_the_memory_limit_only_when_one_was_set() {
        let stderr = b"Traceback (most recent call last):\n  ...\nMemoryError: Unable to allocate 40.0 GiB\n";
        let mut p = Policy::for_generator();
        assert_eq!(
            classify(&p, true, Some(1), None, Duration::ZERO, stderr),
            Ending::KilledByLimit {
                which: Limit::Memory
            }
        );
        p.address_space = None;
        assert_eq!(
            classify(&p, true, Some(1), None, Duration::ZERO, stderr),
            Ending::Finished { exit_code: 1 }
        );
    }

    #[test]
    fn segfault_without_a_limit_message_is_a_crash() {
        let p = Policy::for_generator();
        assert_eq!(
            classify(&p, true, None, Some(libc::SIGSEGV), Duration::ZERO, b"boom"),
            Ending::Crashed {
                signal: libc::SIGSEGV
            }
        );
    }
}
