//! Cases against the machine's processes and the run's limits: other processes, kt itself, privileges, mounts,
//! what outlives the run, CPU, memory, output, disk, inodes and the environment's keys.

use super::Case;
use super::checks::*;

pub(super) fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "see the host's processes",
            needs: Some(pid_ns),
            check: none,
            attack: r#"
    pids = [p for p in os.listdir("/proc") if p.isdigit()]
    if len(pids) > 20: escaped = "sees %d processes" % len(pids)
"#,
        },
        Case {
            name: "signal kt (the parent)",
            needs: Some(pid_ns),
            check: none,
            attack: r#"
    import signal
    for pid in {os.getppid(), 1}:
        try:
            if pid > 1: os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
"#,
        },
        Case {
            name: "kill every process it may signal",
            needs: Some(pid_ns),
            check: none,
            attack: r#"
    import signal
    pid = os.fork()
    if pid == 0:
        try:
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
"#,
        },
        Case {
            name: "read another process's memory through /proc",
            needs: Some(pid_ns),
            check: none,
            attack: r#"
    for p in os.listdir("/proc"):
        if p.isdigit() and int(p) not in (os.getpid(),):
            try:
                open("/proc/%s/environ" % p, "rb").read(); escaped = "read /proc/%s/environ" % p
            except OSError:
                pass
"#,
        },
        Case {
            name: "ptrace its parent",
            needs: None,
            check: none,
            attack: r#"
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    ppid = os.getppid()
    if ppid > 0 and libc.ptrace(16, ppid, None, None) == 0: escaped = "attached to %d" % ppid
"#,
        },
        Case {
            name: "become root",
            needs: None,
            check: none,
            attack: r#"
    try:
        os.setuid(0); escaped = "setuid(0)"
    except OSError:
        pass
"#,
        },
        Case {
            name: "mount a file system",
            needs: None,
            check: none,
            attack: r#"
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(b"tmpfs", b"/mnt", b"tmpfs", 0, None) == 0: escaped = "mounted /mnt"
"#,
        },
        Case {
            name: "outlive the run as a daemon",
            needs: Some(pid_ns),
            check: none,
            attack: r#"
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv("/bin/sleep", ["sleep", SLEEP])
        os._exit(0)
"#,
        },
        Case {
            name: "outlive the run in a background child",
            needs: None,
            check: none,
            attack: r#"
    if os.fork() == 0:
        os.execv("/bin/sleep", ["sleep", SLEEP])
"#,
        },
        Case {
            name: "fork bomb",
            needs: Some(pids),
            check: limit_stopped,
            attack: r#"
    while True:
        os.fork()
"#,
        },
        Case {
            name: "burn CPU forever",
            needs: None,
            check: limit_stopped,
            attack: r#"
    while True:
        pass
"#,
        },
        Case {
            name: "allocate 64 GiB",
            needs: None,
            check: limit_stopped,
            attack: r#"
    b = bytearray(64 << 30)
"#,
        },
        Case {
            name: "flood stdout",
            needs: None,
            check: limit_stopped,
            attack: r#"
    while True:
        print("x" * 100000)
"#,
        },
        Case {
            name: "write one huge file",
            needs: None,
            check: limit_stopped,
            attack: r#"
    with open("huge", "wb") as f:
        while True:
            f.write(b"\0" * (1 << 20))
"#,
        },
        Case {
            name: "fill the disk with files each within the file-size limit",
            needs: None,
            check: quota_stopped,
            attack: r#"
    i = 0
    while True:
        with open("fill%d" % i, "wb") as f:
            f.write(b"\1" * (16 << 20))
        i += 1
"#,
        },
        Case {
            name: "exhaust inodes with empty files",
            needs: None,
            check: quota_stopped,
            attack: r#"
    os.makedirs("many", exist_ok=True)
    for i in range(10 ** 7):
        os.close(os.open("many/%d" % i, os.O_CREAT | os.O_WRONLY))
"#,
        },
        Case {
            name: "read API keys from the environment",
            needs: None,
            check: none,
            attack: r#"
    leaked = [k for k in os.environ if any(w in k.upper() for w in ("KEY", "TOKEN", "SECRET", "PASSWORD"))]
    if leaked: escaped = "sees " + ", ".join(leaked)
"#,
        },
    ]
}
