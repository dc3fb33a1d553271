//! One memory cap for a run's whole process tree, held by the kernel: a cgroup v2 of the run's own, with
//! `memory.max` at the policy's `memory`, no swap (`memory.swap.max = 0`) and `memory.oom.group = 1` (past the
//! cap the kernel kills every process of the run at once). The child joins it before `exec` (`confine`), so
//! everything the program starts is inside, however it detaches.
//!
//! kt makes the run's cgroup beside its own, in the nearest cgroup that gives the memory controller to its
//! children and that kt may write (as root on a systemd host: the slice kt runs in). Where there is none (no
//! cgroup v2, mounted read-only in a container, memory only on cgroup v1, no delegation to a user), runs keep
//! the measured cap of `tree.rs`, and `kt doctor` and the run's record say which cap applied and what the
//! measured one cannot cap.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Prefix of the runs' cgroups: `kt-run-<kt's pid>-<n>` (a dead kt's leftovers are found by the pid).
const PREFIX: &str = "kt-run-";

static BASE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
static NEXT: AtomicU64 = AtomicU64::new(0);

/// The cgroup in which runs' cgroups are made, or why kt caps a run's memory by measuring instead (detected
/// once per process).
pub fn memory_cgroup() -> Result<&'static Path, &'static str> {
    match BASE.get_or_init(|| {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let chosen = choose(cgroup2_mount(&mountinfo), own_cgroup(&own), usable);
        match &chosen {
            Ok(base) => {
                remove_stale(base);
                tracing::debug!(base = %base.display(), "runs' memory is capped by a cgroup of their own");
            }
            Err(why) => tracing::debug!(%why, "no memory cgroup: runs' memory is measured"),
        }
        chosen
    }) {
        Ok(base) => Ok(base),
        Err(why) => Err(why),
    }
}

/// A cgroup v2 mount: the hierarchy's path it shows, where it is mounted, and whether it is writable.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Cgroup2Mount {
    root: String,
    point: PathBuf,
    writable: bool,
}

/// The first cgroup2 mount of /proc/self/mountinfo.
fn cgroup2_mount(mountinfo: &str) -> Option<Cgroup2Mount> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        if right.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let fields: Vec<&str> = left.split_whitespace().collect();
        let (root, point, options) = (fields.get(3)?, fields.get(4)?, fields.get(5)?);
        Some(Cgroup2Mount {
            root: unescape(root),
            point: PathBuf::from(unescape(point)),
            writable: options.split(',').any(|o| o == "rw"),
        })
    })
}

/// mountinfo writes space, tab, newline and backslash as octal escapes (`\040`).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|d| {
            std::str::from_utf8(d)
                .ok()
                .and_then(|d| u8::from_str_radix(d, 8).ok())
        });
        match (bytes[i], octal) {
            (b'\\', Some(b)) => {
                out.push(b);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// kt's own cgroup v2 path (the `0::` line of /proc/self/cgroup).
fn own_cgroup(proc_cgroup: &str) -> Option<String> {
    proc_cgroup
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(|p| p.trim().to_string())
}

/// Where to try making runs' cgroups, nearest first: kt's own cgroup, then each parent up to the top of what
/// the mount shows.
fn candidates(mount: &Cgroup2Mount, own: Option<&str>) -> Vec<PathBuf> {
    let top = mount.point.clone();
    let inside = own.and_then(|own| {
        let rest = if mount.root == "/" {
            Some(own)
        } else {
            own.strip_prefix(mount.root.as_str())
        }?;
        let rest = rest.trim_start_matches('/');
        Some(if rest.is_empty() {
            top.clone()
        } else {
            top.join(rest)
        })
    });
    let mut dirs: Vec<PathBuf> = inside
        .map(|dir| {
            dir.ancestors()
                .take_while(|d| d.starts_with(&top))
                .map(Path::to_path_buf)
                .collect()
        })
        .unwrap_or_default();
    if dirs.last() != Some(&top) {
        dirs.push(top);
    }
    dirs
}

/// The base for runs' cgroups: the first candidate that `usable` accepts, or why none is.
fn choose(
    mount: Option<Cgroup2Mount>,
    own: Option<String>,
    usable: impl Fn(&Path) -> Result<(), String>,
) -> Result<PathBuf, String> {
    let Some(mount) = mount else {
        return Err("no cgroup v2 is mounted (/proc/self/mountinfo lists no cgroup2)".into());
    };
    if !mount.writable {
        return Err(format!(
            "cgroup v2 at {} is mounted read-only (a container?)",
            mount.point.display()
        ));
    }
    let mut refused = Vec::new();
    for dir in candidates(&mount, own.as_deref()) {
        match usable(&dir) {
            Ok(()) => return Ok(dir),
            Err(why) => refused.push(format!("{}: {why}", dir.display())),
        }
    }
    Err(format!(
        "no cgroup kt may write gives the memory controller to its children ({})",
        refused.join("; ")
    ))
}

/// Whether runs' cgroups can be made in `dir`: it gives memory to its children, and a child made there has a
/// writable `memory.max` (tried with a throw-away child).
fn usable(dir: &Path) -> Result<(), String> {
    let control = std::fs::read_to_string(dir.join("cgroup.subtree_control"))
        .map_err(|e| format!("cgroup.subtree_control: {e}"))?;
    if !control.split_whitespace().any(|c| c == "memory") {
        return Err(format!(
            "memory is not among its children's controllers ({:?})",
            control.trim()
        ));
    }
    let probe = dir.join(format!("{PREFIX}{}-probe", std::process::id()));
    std::fs::create_dir(&probe).map_err(|e| format!("making a cgroup there: {e}"))?;
    let tried = std::fs::write(probe.join("memory.max"), "max")
        .map_err(|e| format!("memory.max of a cgroup made there: {e}"))
        .and_then(|()| {
            // moving a process in also needs write access to the common ancestor's cgroup.procs
            let procs = CString::new(probe.join("cgroup.procs").as_os_str().as_bytes())
                .map_err(|_| "NUL in the path".to_string())?;
            crate::confine::joins_cgroup(&procs)
                .then_some(())
                .ok_or_else(|| "a process cannot be moved into a cgroup made there".to_string())
        });
    let _ = std::fs::remove_dir(&probe);
    tried
}

/// Removes empty run cgroups that a killed kt left in `base`.
fn remove_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split('-').next()?.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// One run's cgroup: made with its cap before the run, emptied and removed when dropped.
#[derive(Debug)]
pub(crate) struct RunCgroup {
    dir: PathBuf,
    procs: CString,
}

impl RunCgroup {
    /// A fresh cgroup in `base` whose processes together may hold at most `limit` bytes, with no swap.
    pub(crate) fn create(base: &Path, limit: u64) -> io::Result<RunCgroup> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("{PREFIX}{}-{n}", std::process::id()));
        std::fs::create_dir(&dir)?;
        let procs = CString::new(dir.join("cgroup.procs").as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a cgroup path"))?;
        let cgroup = RunCgroup { dir, procs };
        cgroup.set("memory.max", &limit.to_string(), true)?;
        // absent without swap accounting (then there is no swap to cap) or on old kernels
        cgroup.set("memory.swap.max", "0", false)?;
        cgroup.set("memory.oom.group", "1", false)?;
        Ok(cgroup)
    }

    fn set(&self, file: &str, value: &str, required: bool) -> io::Result<()> {
        match std::fs::write(self.dir.join(file), value) {
            Err(e) if !required && e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    /// `cgroup.procs`, to which the child writes "0" before `exec` (0 moves the writer itself).
    pub(crate) fn procs(&self) -> CString {
        self.procs.clone()
    }

    /// Whether the kernel killed a process of the run for passing the cap.
    pub(crate) fn oom_killed(&self) -> bool {
        let events = std::fs::read_to_string(self.dir.join("memory.events")).unwrap_or_default();
        events.lines().any(|l| {
            l.strip_prefix("oom_kill ")
                .or_else(|| l.strip_prefix("oom_group_kill "))
                .and_then(|n| n.trim().parse::<u64>().ok())
                .is_some_and(|n| n > 0)
        })
    }
}

impl Drop for RunCgroup {
    /// Kills what is left in it (cgroup.kill, Linux 5.14; the run's own kill came first) and removes it once
    /// its processes have exited.
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.join("cgroup.kill"), "1");
        let deadline = Instant::now() + Duration::from_secs(2);
        while std::fs::remove_dir(&self.dir).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if self.dir.exists() {
            tracing::warn!(cgroup = %self.dir.display(), "a run's cgroup could not be removed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: &str = "24 1 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw\n";

    fn mount(root: &str, point: &str, writable: bool) -> Cgroup2Mount {
        Cgroup2Mount {
            root: root.into(),
            point: point.into(),
            writable,
        }
    }

    #[test]
    fn the_cgroup2_mount_is_read_from_mountinfo() {
        let hybrid = "30 25 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
                      31 25 0:27 / /sys/fs/cgroup/unified\\040v2 ro,relatime - cgroup2 cgroup2 rw\n";
        assert_eq!(
            cgroup2_mount(hybrid),
            Some(mount("/", "/sys/fs/cgroup/unified v2", false))
        );
        assert_eq!(
            cgroup2_mount(HOST),
            Some(mount("/", "/sys/fs/cgroup", true))
        );
        assert_eq!(cgroup2_mount("1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"), None);
        assert_eq!(
            own_cgroup("1:memory:/x\n0::/system.slice/ci.service\n").as_deref(),
            Some("/system.slice/ci.service")
        );
    }

    #[test]
    fn the_nearest_cgroup_that_delegates_memory_is_chosen() {
        let m = mount("/", "/sys/fs/cgroup", true);
        let own = Some("/system.slice/ci.service".to_string());
        assert_eq!(
            candidates(&m, own.as_deref()),
            [
                PathBuf::from("/sys/fs/cgroup/system.slice/ci.service"),
                PathBuf::from("/sys/fs/cgroup/system.slice"),
                PathBuf::from("/sys/fs/cgroup"),
            ]
        );
        // kt's own cgroup holds kt: the kernel gives no controller to the children of a cgroup with processes
        let delegating = |d: &Path| {
            if d.ends_with("system.slice") {
                Ok(())
            } else {
                Err("memory is not among its children's controllers".to_string())
            }
        };
        assert_eq!(
            choose(Some(m.clone()), own.clone(), delegating),
            Ok(PathBuf::from("/sys/fs/cgroup/system.slice"))
        );
        let none = choose(Some(m), own, |_| Err("EACCES".into())).unwrap_err();
        assert!(
            none.contains("no cgroup kt may write")
                && none.contains("/sys/fs/cgroup/system.slice: EACCES"),
            "{none}"
        );
    }

    #[test]
    fn a_missing_read_only_or_foreign_mount_says_why_it_falls_back() {
        let no_mount = choose(None, Some("/".into()), |_| Ok(())).unwrap_err();
        assert!(no_mount.contains("no cgroup v2 is mounted"), "{no_mount}");
        let read_only = choose(Some(mount("/", "/sys/fs/cgroup", false)), None, |_| Ok(()));
        assert!(read_only.unwrap_err().contains("read-only"));
        // a mount of part of the hierarchy that kt's cgroup is not in: only its top is tried
        let m = mount("/lxc/ct1", "/sys/fs/cgroup", true);
        assert_eq!(
            candidates(&m, Some("/user.slice/x.scope")),
            [PathBuf::from("/sys/fs/cgroup")]
        );
        assert_eq!(
            candidates(&m, Some("/lxc/ct1/init.scope")),
            [
                PathBuf::from("/sys/fs/cgroup/init.scope"),
                PathBuf::from("/sys/fs/cgroup")
            ]
        );
    }

    #[test]
    fn the_detected_cap_is_a_delegating_cgroup_or_a_reason() {
        match memory_cgroup() {
            Ok(base) => {
                println!("runs' memory cgroups are made in {}", base.display());
                let control = std::fs::read_to_string(base.join("cgroup.subtree_control")).unwrap();
                assert!(control.contains("memory"), "{control}");
            }
            Err(why) => {
                println!("runs' memory is measured here: {why}");
                assert!(why.len() > 20, "{why}");
            }
        }
    }
}
