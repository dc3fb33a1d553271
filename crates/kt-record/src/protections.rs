//! The protections a run's generated programs got, as `run.json`, `result.json`, the report and `kt doctor`
//! show them (kt-sandbox detects them once per process).

use serde::{Deserialize, Serialize};

/// What a sandboxed run gets on this machine. Resource limits (time, CPU, address space, file size, open files, output) and
/// the process-group kill always work (`rlimits`); the other fields say which of the rest do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Protections {
    /// kt runs as root (then it can switch the program to an unprivileged uid).
    pub running_as_root: bool,
    /// A network namespace of its own: no network at all, not even loopback.
    pub network_namespace: bool,
    /// A mount namespace: private /tmp and /dev/shm, directories the program must not see replaced by empty ones.
    pub mount_namespace: bool,
    /// PID and IPC namespaces (with the mount namespace): the program sees only its own processes and a fresh
    /// /proc, its System V shared memory, semaphores and queues are private and vanish with it, and when it ends
    /// the kernel kills every process it left, however detached.
    pub pid_namespace: bool,
    /// (With the mount namespace) the host's directories are read-only to the program, world-writable scratch
    /// space included, and the user's home, /root, the sources and kt's runs are hidden (empty).
    pub read_only_host: bool,
    /// A seccomp filter refuses Unix sockets (an ssh ControlMaster, an agent), the kernel keyring and io_uring.
    pub syscall_filter: bool,
    /// The program runs as a fresh unprivileged uid (files outside its work directory are not writable).
    pub unprivileged_user: bool,
    /// The process limit is enforced: as root through the unprivileged uid (RLIMIT_NPROC is ignored for root),
    /// otherwise inside a user namespace of its own where the kernel counts only the namespace's processes.
    pub pids_limit: bool,
    /// kt is not root and the program gets a user namespace of its own (kt's uid mapped to itself), which the
    /// other namespaces and the process limit need.
    pub user_namespace: bool,
    /// Each run gets a cgroup v2 of its own whose `memory.max` caps all its processes together (no swap), held by
    /// the kernel; otherwise their memory is measured every 200 ms (see the "run memory" line for what that
    /// cannot cap).
    pub memory_cgroup: bool,
    /// Time, CPU, address-space, file-size and open-file limits and the process-group kill (always on).
    pub rlimits: bool,
}

impl Default for Protections {
    /// Nothing but rlimits (what an old run.json without this record is read as).
    fn default() -> Self {
        Self {
            running_as_root: false,
            network_namespace: false,
            mount_namespace: false,
            pid_namespace: false,
            read_only_host: false,
            syscall_filter: false,
            unprivileged_user: false,
            pids_limit: false,
            user_namespace: false,
            memory_cgroup: false,
            rlimits: true,
        }
    }
}

/// One protection, as `kt doctor` and the report show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProtectionLine {
    /// Short name, e.g. "network namespace".
    pub name: &'static str,
    /// The field of the same name in the record (`user_namespace`, ...): one source of truth for every view.
    pub active: bool,
    /// Inactive because nothing needs it here (a user namespace when kt is root): no fault.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub not_needed: bool,
    /// What it means here, and when inactive, why and how to get it.
    pub detail: String,
}

impl ProtectionLine {
    /// `active`, `not needed` or `NOT active`, as the report shows it.
    pub fn state(&self) -> &'static str {
        if self.active {
            "active"
        } else if self.not_needed {
            "not needed"
        } else {
            "NOT active"
        }
    }
}

impl Protections {
    /// The protections, one line each, in the order of their importance for LLM-written programs.
    pub fn lines(&self) -> Vec<ProtectionLine> {
        let line = |name, active, on: &str, off: String| ProtectionLine {
            name,
            active,
            not_needed: false,
            detail: if active { on.to_string() } else { off },
        };
        let userns_fix = if self.running_as_root {
            "kt is root, but the kernel or container refuses (a container without CAP_SYS_ADMIN?)"
                .to_string()
        } else {
            "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu \
             kernel.apparmor_restrict_unprivileged_userns=0) or run kt as root"
                .to_string()
        };
        vec![
            line(
                "network namespace",
                self.network_namespace,
                "generated programs have no network",
                format!(
                    "unavailable: {userns_fix}; until then generated programs run only with --allow-unsandboxed \
                     or `[sandbox] allow_unsandboxed = true` in kt.toml"
                ),
            ),
            line(
                "private /tmp",
                self.mount_namespace,
                "a fresh /tmp, /var/tmp, /run and /dev/shm per run; nothing left behind there",
                format!("unavailable (programs share /tmp, /run and /dev/shm): {userns_fix}"),
            ),
            line(
                "PID and IPC namespaces",
                self.pid_namespace,
                "programs see only their own processes; their System V IPC is private; nothing they start \
                 outlives them",
                if self.mount_namespace {
                    "unavailable: the kernel refuses a PID namespace with a fresh /proc; processes a program \
                     detaches are still killed with its process group (and, as root, its uid)"
                        .to_string()
                } else {
                    format!("unavailable (it needs the mount namespace): {userns_fix}")
                },
            ),
            line(
                "private home",
                self.read_only_host,
                "programs see none of your home, /root, your sources or kt's runs, and every other host directory \
                 read-only (only their work directory and private /tmp take writes)",
                if self.mount_namespace {
                    "unavailable: the kernel cannot make the host read-only (mount_setattr needs Linux 5.12)"
                        .to_string()
                } else {
                    format!("unavailable (it needs the mount namespace): {userns_fix}")
                },
            ),
            line(
                "system-call filter",
                self.syscall_filter,
                "programs cannot open Unix sockets (an ssh ControlMaster, an agent), use the kernel keyring or \
                 io_uring",
                "unavailable: the kernel refuses a seccomp filter here (or kt does not know this architecture)"
                    .to_string(),
            ),
            line(
                "uid switch",
                self.unprivileged_user,
                "each run gets a fresh unprivileged uid: it can write only its work directory",
                if self.running_as_root {
                    "unavailable: switching uid failed although kt is root".to_string()
                } else {
                    "not possible without root: programs keep your uid (and can write what you can); run kt as \
                     root for a uid of their own"
                        .to_string()
                },
            ),
            ProtectionLine {
                not_needed: self.running_as_root && !self.user_namespace,
                ..line(
                    "user namespace",
                    self.user_namespace,
                    "programs run in a user namespace of their own (your uid mapped to itself)",
                    if self.running_as_root {
                        "not needed: kt is root".to_string()
                    } else {
                        format!("unavailable: {userns_fix}")
                    },
                )
            },
            line(
                "process limit",
                self.pids_limit,
                "at most 64 processes and threads per generator run",
                if self.running_as_root {
                    "unavailable: it needs the uid switch".to_string()
                } else {
                    format!(
                        "unavailable: it needs a user namespace and Linux 5.14 or later (which counts processes \
                         per namespace); {userns_fix}"
                    )
                },
            ),
            self.run_memory_line(),
            line(
                "rlimits",
                self.rlimits,
                "wall time, CPU time, memory, file size (each file; the work directory's total has a quota of its own), open \
                 files and output are limited; inherited descriptors are closed; programs die with kt",
                "unavailable".to_string(),
            ),
        ]
    }

    /// Which cap holds the memory of all of a program's processes together, and what it cannot cap.
    fn run_memory_line(&self) -> ProtectionLine {
        const FALLBACK_MISSES: &str = "what measuring cannot cap: memory taken and used within one 200 ms interval, \
             swap, and kernel memory (page cache, socket buffers); for a kernel-held cap kt needs cgroup v2 mounted \
             read-write with the memory controller given to a cgroup it may write (as root on a systemd host it \
             is; `kt doctor` says what is missing)";
        let measured = self.pid_namespace || self.unprivileged_user;
        let detail = if self.memory_cgroup {
            "one kernel cap for all of a program's processes together: a cgroup of its own per run (memory.max, no \
             swap; past it the kernel ends the whole run), and its disk quota counts deleted files it still holds \
             open (measured every 200 ms)"
                .to_string()
        } else if measured {
            format!(
                "measured: the memory of all a program's processes together is added up every 200 ms and the run \
                 stopped past the cap, and its disk quota counts deleted files it still holds open; {FALLBACK_MISSES}"
            )
        } else {
            format!(
                "partial: only the processes of the program's process group are counted (one that starts a \
                 session of its own escapes the total; each process is still held to the address-space limit); it \
                 needs the PID namespace or the uid switch; {FALLBACK_MISSES}"
            )
        };
        ProtectionLine {
            name: "run memory",
            active: self.memory_cgroup || measured,
            not_needed: false,
            detail,
        }
    }

    /// One line, e.g. "active: network namespace, private /tmp, uid switch, process limit, rlimits".
    pub fn summary(&self) -> String {
        let lines = self.lines();
        let names = |active: bool| -> Vec<&str> {
            lines
                .iter()
                .filter(|l| l.active == active && l.name != "user namespace")
                .map(|l| l.name)
                .collect()
        };
        let mut text = format!("active: {}", names(true).join(", "));
        let off = names(false);
        if !off.is_empty() {
            text.push_str(&format!("; unavailable: {}", off.join(", ")));
        }
        text
    }

    /// True when every protection kt knows is active.
    pub fn complete(&self) -> bool {
        self.network_namespace
            && self.mount_namespace
            && self.pid_namespace
            && self.read_only_host
            && self.syscall_filter
            && self.unprivileged_user
            && self.pids_limit
            && self.rlimits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_namespace_line_says_what_the_record_says() {
        let root = Protections {
            running_as_root: true,
            ..Protections::default()
        };
        let line = root
            .lines()
            .into_iter()
            .find(|l| l.name == "user namespace")
            .unwrap_or_else(|| panic!("no user namespace line"));
        assert_eq!(line.active, root.user_namespace);
        assert_eq!(line.state(), "not needed");
        let user = Protections {
            user_namespace: true,
            ..Protections::default()
        };
        let line = &user.lines()[6];
        assert_eq!((line.name, line.state()), ("user namespace", "active"));
        let bare = &Protections::default().lines()[6];
        assert_eq!(bare.state(), "NOT active");
    }

    #[test]
    fn the_run_memory_line_says_which_cap_applied_and_what_measuring_cannot_cap() {
        let line = |p: Protections| {
            p.lines()
                .into_iter()
                .find(|l| l.name == "run memory")
                .unwrap_or_else(|| panic!("no run memory line"))
        };
        let cgroup = line(Protections {
            memory_cgroup: true,
            ..Protections::default()
        });
        assert!(
            cgroup.active && cgroup.detail.contains("memory.max"),
            "{cgroup:?}"
        );
        assert!(!cgroup.detail.contains("cannot cap"), "{cgroup:?}");
        let measured = line(Protections {
            pid_namespace: true,
            ..Protections::default()
        });
        assert!(
            measured.active && measured.detail.starts_with("measured"),
            "{measured:?}"
        );
        assert!(
            measured.detail.contains("what measuring cannot cap")
                && measured.detail.contains("swap"),
            "{measured:?}"
        );
        let bare = line(Protections::default());
        assert!(
            !bare.active && bare.detail.contains("cannot cap"),
            "{bare:?}"
        );
        let old: Protections =
            serde_json::from_str("{\"pid_namespace\": true}").unwrap_or_else(|e| panic!("{e}"));
        assert!(!old.memory_cgroup, "an older record read as measured");
    }
}
