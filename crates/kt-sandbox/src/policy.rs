//! What a sandboxed program may use: time, memory, files, processes, output, network, environment, identity.

use std::path::PathBuf;
use std::time::Duration;

/// Whether the program gets a network namespace of its own (no interfaces but a loopback that is down).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkIsolation {
    /// Refuse to run when a network namespace cannot be created here (the default for generated programs).
    Required,
    /// Isolate when possible; otherwise run with the host's network and say so in `Protections`.
    BestEffort,
    /// Share the host's network.
    Off,
}

/// Which identity the program runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserPolicy {
    /// When kt runs as root, switch to a fresh unprivileged uid/gid for this run only. As root RLIMIT_NPROC is
    /// not enforced (CAP_SYS_RESOURCE) and every file is writable; an unprivileged uid of its own makes the
    /// process limit count only this run's processes and makes writes outside its work directory fail.
    DropIfRoot,
    /// Keep kt's identity (the GPU worker needs the driver and kt's cache directories).
    Keep,
}

/// What happens to the program's stderr in `Sandbox::spawn` (a one-shot run always captures it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StderrMode {
    /// Keep the last `tail_bytes` bytes, readable with `SandboxedChild::stderr_tail`.
    Capture { tail_bytes: usize },
    /// Write straight to kt's own stderr.
    Inherit,
}

/// Which environment variables reach the program. The child starts from an empty environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvPolicy {
    /// Names copied from kt's environment when set; a trailing `*` matches a prefix (`PYTHON*`). Names that look
    /// like credentials or proxies are dropped even when listed (see [`crate::environment`]).
    pub pass: Vec<String>,
    /// Variables set explicitly (after `pass`; these win and are not scrubbed: the caller chose them).
    pub set: Vec<(String, String)>,
    /// Point HOME at the work directory instead of passing kt's own (so nothing reads or writes the real home).
    pub home_is_workdir: bool,
}

/// Limits and isolation for one kind of sandboxed program. `None` means "no limit".
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Wall-clock time after which the whole process group is killed.
    pub wall_timeout: Option<Duration>,
    /// RLIMIT_CPU in seconds (SIGXCPU at the limit, SIGKILL one second later).
    pub cpu_seconds: Option<u64>,
    /// RLIMIT_AS in bytes: allocations past it fail (Python raises MemoryError).
    pub address_space: Option<u64>,
    /// Resident memory of all the program's processes together (anonymous and shared, measured every
    /// [`crate::disk_quota::CHECK_EVERY`]; see `tree.rs`): RLIMIT_AS alone would let every child hold its own.
    pub memory: Option<u64>,
    /// RLIMIT_FSIZE in bytes: the largest file the program may write.
    pub file_size: Option<u64>,
    /// Bytes the work directory may take in all (see [`crate::disk_quota`]), deleted files the program still holds
    /// open included; each file is also held to it.
    pub disk_quota: Option<u64>,
    /// RLIMIT_NPROC: processes and threads. Only enforced when the program runs as a non-root uid of its own.
    pub processes: Option<u64>,
    /// RLIMIT_NOFILE.
    pub open_files: Option<u64>,
    /// Bytes of stdout + stderr kept for a one-shot run; past it the program is killed (OutputTooLarge).
    pub output_cap: usize,
    pub network: NetworkIsolation,
    pub user: UserPolicy,
    pub env: EnvPolicy,
    /// Run in this directory instead of a fresh empty temporary one (when kt is root it is handed to the run's
    /// unprivileged uid, mode 0700).
    pub workdir: Option<PathBuf>,
    /// Directories the program must be able to read even when they lie under a directory the unprivileged uid
    /// cannot enter (a Python installed under /root, say). They are bind-mounted read-only into its view.
    pub readable_paths: Vec<PathBuf>,
    /// Give the program a private, empty /tmp, /var/tmp and /dev/shm (needs a mount namespace; best effort),
    /// so that world-writable directories do not let it leave files behind. With it the program also sees every
    /// other host directory read-only and `hidden_paths` empty.
    pub private_tmp: bool,
    /// Directories the program must not see at all (with `private_tmp`): each is replaced by an empty tmpfs, and
    /// only `readable_paths` and the work directory under it are bound back. For generators: the user's home,
    /// /home, /root, kt's working directory (the sources, `./kt-runs`) and `$KT_RUNS_DIR` ([`default_hidden_paths`]).
    pub hidden_paths: Vec<PathBuf>,
    /// Install the system-call filter (see `syscall_filter.rs`): no Unix-socket connections, no kernel keyring,
    /// no io_uring.
    pub syscall_filter: bool,
    pub stderr: StderrMode,
}

const GIB: u64 = 1 << 30;

/// A generator's work directory quota unless its arrays need more or the user sets one: 8 GiB.
pub const DEFAULT_DISK_QUOTA: u64 = 8 * GIB;

impl Policy {
    /// Limits for an LLM-written input generator (Python + numpy): generous enough for arrays of a few GB,
    /// tight enough that a runaway program ends within two minutes and leaves nothing behind. Safe by default:
    /// without a network namespace it refuses to run ([`NetworkIsolation::Required`]) unless the user opted in
    /// ([`Policy::allow_unsandboxed`]).
    pub fn for_generator() -> Self {
        Self {
            wall_timeout: Some(Duration::from_secs(120)),
            cpu_seconds: Some(100),
            address_space: Some(16 * GIB),
            memory: Some(16 * GIB),
            file_size: Some(8 * GIB),
            // raised to fit each generator's arrays (`run_generator`) or by `[sandbox] disk_quota_mb`
            disk_quota: Some(DEFAULT_DISK_QUOTA),
            processes: Some(64),
            open_files: Some(256),
            output_cap: 1 << 20,
            network: NetworkIsolation::Required,
            user: UserPolicy::DropIfRoot,
            env: EnvPolicy {
                pass: [
                    "PATH",
                    "LANG",
                    "LC_ALL",
                    "LC_CTYPE",
                    "TZ",
                    "PYTHONPATH",
                    "PYTHONHOME",
                ]
                .map(String::from)
                .to_vec(),
                // One BLAS thread: threads count against the process limit, and results stay reproducible.
                set: [
                    ("OMP_NUM_THREADS", "1"),
                    ("OPENBLAS_NUM_THREADS", "1"),
                    ("MKL_NUM_THREADS", "1"),
                    ("PYTHONDONTWRITEBYTECODE", "1"),
                    ("PYTHONHASHSEED", "0"),
                ]
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .to_vec(),
                home_is_workdir: true,
            },
            workdir: None,
            readable_paths: Vec::new(),
            private_tmp: true,
            hidden_paths: default_hidden_paths(),
            syscall_filter: true,
            stderr: StderrMode::Capture {
                tail_bytes: 64 * 1024,
            },
        }
    }

    /// Limits for the tuner's long-lived GPU worker. No address-space limit (CUDA reserves huge virtual ranges),
    /// no wall timeout (the tuner's watchdog decides when a kernel hangs), kt's own identity (the driver and the
    /// module cache), CUDA's variables kept; credentials and proxies are still scrubbed and the network is
    /// isolated when possible (the worker needs none).
    pub fn for_gpu_worker() -> Self {
        Self {
            wall_timeout: None,
            cpu_seconds: None,
            address_space: None,
            memory: None,
            file_size: None,
            disk_quota: None,
            processes: None,
            open_files: Some(4096),
            output_cap: 1 << 20,
            network: NetworkIsolation::BestEffort,
            user: UserPolicy::Keep,
            env: EnvPolicy {
                pass: [
                    "PATH",
                    "HOME",
                    "LANG",
                    "LC_ALL",
                    "LD_LIBRARY_PATH",
                    "CUDA_VISIBLE_DEVICES",
                    "CUDA_*",
                    "NVIDIA_*",
                    "KT_*",
                    "RUST_LOG",
                    "RUST_BACKTRACE",
                ]
                .map(String::from)
                .to_vec(),
                set: Vec::new(),
                home_is_workdir: false,
            },
            workdir: None,
            readable_paths: Vec::new(),
            private_tmp: false,
            hidden_paths: Vec::new(),
            syscall_filter: false,
            stderr: StderrMode::Capture {
                tail_bytes: 64 * 1024,
            },
        }
    }

    /// The user's opt-in (`--allow-unsandboxed`, `[sandbox] allow_unsandboxed = true`): when `allow`, a policy
    /// that requires a network namespace runs without one where the machine cannot make it (the run records
    /// that it had none: `Sandbox::protections`).
    pub fn allow_unsandboxed(mut self, allow: bool) -> Self {
        if allow && self.network == NetworkIsolation::Required {
            self.network = NetworkIsolation::BestEffort;
        }
        self
    }

    /// The user's work-directory quota (`[sandbox] disk_quota_mb`), replacing the default.
    pub fn with_disk_quota_mb(mut self, mb: Option<u64>) -> Self {
        if let Some(mb) = mb {
            self.disk_quota = Some(mb.saturating_mul(1 << 20));
        }
        self
    }

    /// Hides `dir` from the program too (a run directory given with `--out`, say).
    pub fn hiding(mut self, dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        if !self.hidden_paths.contains(&dir) {
            self.hidden_paths.push(dir);
        }
        self
    }

    /// Adds an explicitly set environment variable.
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.set.push((name.into(), value.into()));
        self
    }
}

/// Top-level directories that hold the system (the interpreter, its libraries, devices): never hidden, even when
/// kt runs from inside one.
const SYSTEM_DIRS: [&str; 14] = [
    "usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "proc", "sys", "dev", "nix",
    "opt", "snap",
];

/// What an LLM-written program must not see of the user who runs kt: /home, /root, `$HOME`, the working
/// directory (the sources, `./kt-runs`) and `$KT_RUNS_DIR`. A working directory that is `/` or inside a system
/// directory is not hidden (the program needs the system).
pub fn default_hidden_paths() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = vec!["/home".into(), "/root".into()];
    dirs.extend(std::env::var_os("HOME").map(PathBuf::from));
    dirs.extend(std::env::current_dir().ok());
    dirs.extend(std::env::var_os("KT_RUNS_DIR").map(PathBuf::from));
    let mut hidden = Vec::new();
    for dir in dirs {
        if dir.is_absolute() && !is_system(&dir) && !hidden.contains(&dir) {
            hidden.push(dir);
        }
    }
    hidden
}

fn is_system(dir: &std::path::Path) -> bool {
    let mut parts = dir.components().skip(1);
    match parts.next() {
        None => true,
        Some(first) => SYSTEM_DIRS.iter().any(|s| first.as_os_str() == *s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_home_and_the_working_directory_are_hidden_but_never_the_system() {
        let hidden = default_hidden_paths();
        assert!(hidden.contains(&PathBuf::from("/home")), "{hidden:?}");
        assert!(hidden.contains(&PathBuf::from("/root")), "{hidden:?}");
        assert!(is_system(std::path::Path::new("/")));
        assert!(is_system(std::path::Path::new("/usr/local/src")));
        assert!(!is_system(std::path::Path::new("/home/ann/kernels")));
        assert!(!is_system(std::path::Path::new("/scratch/ann")));
        let p = Policy::for_gpu_worker()
            .hiding("/srv/runs")
            .hiding("/srv/runs");
        assert_eq!(p.hidden_paths, [PathBuf::from("/srv/runs")]);
    }
}
