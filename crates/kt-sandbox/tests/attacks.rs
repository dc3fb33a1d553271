//! The attack corpus: hostile generator programs, each run through kt's real harness in the real sandbox, each
//! trying one way out. A generator that gets out raises `ESCAPED: …`; the host-side check looks for what it
//! would have left (a file, a socket connection, shared memory, a process). After every case nothing may be left
//! behind: no sandbox process, no work directory of this process, no new System V shared memory.
//!
//! `corpus_holds_here` runs the corpus as this process's user; when that is root, `corpus_holds_for_an_ordinary_user`
//! runs this same test binary again as an ordinary user with a home directory and files to steal in it
//! (`$KT_CORPUS_USER`, which scripts/test.sh creates). A case whose protection this machine lacks is listed as such
//! (and must then not be claimed contained); every other case must be contained. The attacks on the user's own
//! files live in `attacks/home.rs`.

#![allow(clippy::unwrap_used)] // tests may unwrap (COMMON rules)

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[path = "attacks/home.rs"]
mod home;

use kt_sandbox::{
    ArgSpec, GeneratorError, GeneratorSpec, Policy, Protections, PythonRuntime, Sandbox,
    run_generator,
};

/// What the host side prepared for the attacks.
struct Host {
    /// A root-only (0600) file with a secret.
    secret: PathBuf,
    /// A file the host keeps open for writing, inherited if descriptors leaked.
    appendable: PathBuf,
    /// A directory of the host's, not writable by others.
    host_dir: PathBuf,
    /// A pathname Unix socket, an abstract one and a TCP port the host listens on.
    socket_path: PathBuf,
    abstract_name: String,
    tcp_port: u16,
    marker: String,
    /// The argument of the `sleep` a case leaves running: unique to this process, so that only its own
    /// leftovers are looked for.
    sleep: String,
    home: home::Home,
    _keep: Vec<Box<dyn std::any::Any>>,
}

type Check = fn(&Host, &Result<kt_sandbox::GeneratedTest, GeneratorError>) -> Result<(), String>;

struct Case {
    name: &'static str,
    /// Python statements inside `generate(seed)`; they set `escaped` to a text when the attack worked.
    attack: &'static str,
    /// The protection the containment rests on (`None`: anything kt runs with).
    needs: Option<fn(&Protections) -> bool>,
    check: Check,
}

fn none(_: &Host, _: &Result<kt_sandbox::GeneratedTest, GeneratorError>) -> Result<(), String> {
    Ok(())
}

fn refused_output(
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

fn limit_stopped(
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

fn quota_stopped(
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

fn appendable_untouched(
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

fn host_dir_untouched(
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

fn no_marker_on_host(
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

fn test_written_without_secret(
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

fn walk(dir: &Path) -> Vec<PathBuf> {
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

fn network(p: &Protections) -> bool {
    p.network_namespace
}
fn mounts(p: &Protections) -> bool {
    p.mount_namespace
}
fn pid_ns(p: &Protections) -> bool {
    p.pid_namespace
}
fn own_uid(p: &Protections) -> bool {
    p.unprivileged_user
}
fn pids(p: &Protections) -> bool {
    p.pids_limit
}

/// Patches numpy.save so that the harness leaves `what` where an array should be (the harness's own checks
/// passed on the real arrays; only kt's reading of out/ stands between the plant and the run's tests).
macro_rules! plant {
    ($make:expr) => {
        concat!(
            "    import numpy\n",
            "    def _plant(path, a, **k):\n",
            "        ",
            $make,
            "\n",
            "    numpy.save = _plant\n"
        )
    };
}

fn corpus() -> Vec<Case> {
    let mut cases = base_cases();
    cases.extend(home::cases());
    cases
}

fn base_cases() -> Vec<Case> {
    vec![
        Case {
            name: "write through an inherited descriptor",
            needs: None,
            check: appendable_untouched,
            attack: r#"
    for fd in range(3, 256):
        try:
            os.write(fd, b"pwned"); escaped = "wrote to fd %d" % fd
        except OSError:
            pass
"#,
        },
        Case {
            name: "read a root-only file through an inherited descriptor",
            needs: None,
            check: none,
            attack: r#"
    for fd in range(3, 256):
        try:
            os.lseek(fd, 0, 0)
            if b"kt-secret" in os.read(fd, 100): escaped = "read fd %d" % fd
        except OSError:
            pass
"#,
        },
        Case {
            name: "read a root-only file by path",
            needs: Some(own_uid),
            check: none,
            attack: r#"
    try:
        if b"kt-secret" in open(SECRET, "rb").read(): escaped = "read " + SECRET
    except OSError:
        pass
"#,
        },
        Case {
            name: "write into a host directory",
            needs: Some(own_uid),
            check: host_dir_untouched,
            attack: r#"
    try:
        open(os.path.join(HOST_DIR, "x"), "w").write("x"); escaped = "wrote " + HOST_DIR
    except OSError:
        pass
"#,
        },
        Case {
            name: "leave a file in /tmp",
            needs: Some(mounts),
            check: no_marker_on_host,
            attack: r#"
    open("/tmp/" + MARKER, "w").write("x")
"#,
        },
        Case {
            name: "leave a file in /var/tmp",
            needs: Some(mounts),
            check: no_marker_on_host,
            attack: r#"
    open("/var/tmp/" + MARKER, "w").write("x")
"#,
        },
        Case {
            name: "leave a file in /dev/shm (POSIX shared memory)",
            needs: Some(mounts),
            check: no_marker_on_host,
            attack: r#"
    open("/dev/shm/" + MARKER, "w").write("x" * 1000)
"#,
        },
        Case {
            name: "leave a lock file in /run/lock",
            needs: Some(mounts),
            check: no_marker_on_host,
            attack: r#"
    try:
        os.makedirs("/run/lock", exist_ok=True)
        open("/run/lock/" + MARKER, "w").write("x")
    except OSError:
        pass
    try:
        open("/run/" + MARKER, "w").write("x")
    except OSError:
        pass
"#,
        },
        Case {
            name: "write at the file system root",
            needs: Some(own_uid),
            check: no_marker_on_host,
            attack: r#"
    try:
        open("/" + MARKER, "w").write("x"); escaped = "wrote /"
    except OSError:
        pass
"#,
        },
        Case {
            name: "connect to a host Unix socket by path",
            needs: Some(mounts),
            check: none,
            attack: r#"
    import socket
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(SOCKET_PATH); escaped = "connected to " + SOCKET_PATH
    except OSError:
        pass
"#,
        },
        Case {
            name: "connect to a host abstract Unix socket",
            needs: Some(network),
            check: none,
            attack: r#"
    import socket
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect("\0" + ABSTRACT); escaped = "connected to @" + ABSTRACT
    except OSError:
        pass
"#,
        },
        Case {
            name: "connect to a host TCP port on loopback",
            needs: Some(network),
            check: none,
            attack: r#"
    import socket
    try:
        socket.create_connection(("127.0.0.1", TCP_PORT), timeout=2); escaped = "connected to the host's port"
    except OSError:
        pass
"#,
        },
        Case {
            name: "reach the internet",
            needs: Some(network),
            check: none,
            attack: r#"
    import socket
    try:
        socket.create_connection(("1.1.1.1", 80), timeout=2); escaped = "reached 1.1.1.1"
    except OSError:
        pass
"#,
        },
        Case {
            name: "leave 256 MiB of System V shared memory",
            needs: Some(pid_ns),
            check: none,
            attack: r#"
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    shmid = libc.shmget(0x6b74 + os.getpid(), 256 << 20, 0o1666)
"#,
        },
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
        Case {
            name: "plant a symbolic link to a root-only file as its array",
            needs: None,
            check: refused_output,
            attack: plant!("os.symlink(SECRET, path)"),
        },
        Case {
            name: "plant a FIFO as its array",
            needs: None,
            check: refused_output,
            attack: plant!("os.mkfifo(path)"),
        },
        Case {
            name: "plant a symbolic link to /dev/zero as its array",
            needs: None,
            check: refused_output,
            attack: plant!("os.symlink('/dev/zero', path)"),
        },
        Case {
            name: "plant a hard link to a host file as its array",
            needs: None,
            check: test_written_without_secret,
            attack: plant!("os.link(SECRET, path)"),
        },
        Case {
            name: "plant a linked args directory",
            needs: None,
            check: refused_output,
            attack: r#"
    import numpy
    def _plant(path, a, **k):
        d = os.path.dirname(path)
        if not os.path.islink(d):
            os.rename(d, d + ".real")
            os.symlink(os.path.basename(d) + ".real", d)
        numpy.lib.format.write_array(open(path, "wb"), a)
    numpy.save = _plant
"#,
        },
        Case {
            name: "plant a symbolic link as result.json",
            needs: None,
            check: none,
            attack: r#"
    import builtins
    real_replace = os.replace
    def _replace(src, dst):
        if dst.endswith("result.json"):
            os.symlink(SECRET, dst); return
        real_replace(src, dst)
    os.replace = _replace
"#,
        },
    ]
}

const PRELUDE: &str = r#"
import os
SECRET = %SECRET%
HOST_DIR = %HOST_DIR%
SOCKET_PATH = %SOCKET%
ABSTRACT = %ABSTRACT%
TCP_PORT = %PORT%
MARKER = %MARKER%
SLEEP = %SLEEP%
HOME = %HOME%
SCRATCH = %SCRATCH%
KT_CWD = %KT_CWD%

def generate(seed):
    import numpy as np
    escaped = None
"#;

const EPILOGUE: &str = r#"
    if escaped:
        raise Exception("ESCAPED: " + escaped)
    return [np.zeros(64, dtype=np.float32), 64]
"#;

fn py_str(s: &str) -> String {
    format!("{s:?}")
}

fn script(host: &Host, attack: &str) -> String {
    PRELUDE
        .replace("%SECRET%", &py_str(&host.secret.to_string_lossy()))
        .replace("%HOST_DIR%", &py_str(&host.host_dir.to_string_lossy()))
        .replace("%SOCKET%", &py_str(&host.socket_path.to_string_lossy()))
        .replace("%ABSTRACT%", &py_str(&host.abstract_name))
        .replace("%PORT%", &host.tcp_port.to_string())
        .replace("%MARKER%", &py_str(&host.marker))
        .replace("%SLEEP%", &py_str(&host.sleep))
        .replace("%HOME%", &py_str(&host.home.dir.to_string_lossy()))
        .replace("%SCRATCH%", &py_str(&host.home.scratch.to_string_lossy()))
        .replace(
            "%KT_CWD%",
            &py_str(&std::env::current_dir().unwrap().to_string_lossy()),
        )
        + attack
        + EPILOGUE
}

fn spec() -> GeneratorSpec {
    GeneratorSpec {
        kernel: "k".into(),
        params: vec![
            ArgSpec::array("a", "float", Some("n")),
            ArgSpec::scalar("n", "int"),
        ],
        outputs: vec!["a".into()],
        problem_size: Some(vec!["n".into()]),
        max_total_bytes: 16 << 20,
    }
}

fn policy(home: &home::Home) -> Policy {
    // Opted in where no network namespace can be made, so that the rest of the corpus still runs; the network
    // cases are then listed as not contained here.
    let mut p = Policy::for_generator().allow_unsandboxed(true);
    p.wall_timeout = Some(Duration::from_secs(20));
    p.cpu_seconds = Some(3);
    p.address_space = Some(2 << 30);
    p.file_size = Some(32 << 20);
    // above what run_generator needs for this spec's arrays (2 x 17 MiB + 64 MiB)
    p.disk_quota = Some(256 << 20);
    p.processes = Some(32);
    // three children of 450 MiB pass it together, none alone
    p.memory = Some(1 << 30);
    p.output_cap = 256 * 1024;
    // the real home is hidden by the defaults ($HOME); a scratch one must be named
    if home.real { p } else { p.hiding(&home.dir) }
}

fn prepare_host(root: &Path, outside_tmp: &Path) -> Host {
    let mut keep: Vec<Box<dyn std::any::Any>> = Vec::new();
    let secret = root.join("secret");
    std::fs::write(&secret, b"kt-secret").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let appendable = root.join("appendable");
    std::fs::write(&appendable, b"").unwrap();
    let host_dir = root.join("host-dir");
    std::fs::create_dir(&host_dir).unwrap();
    // Descriptors left open without close-on-exec, as `time -o` or a CI runner leaves them.
    for (path, write) in [(&appendable, true), (&secret, false)] {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .append(write)
            .open(path)
            .unwrap();
        nix::fcntl::fcntl(
            &file,
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
        )
        .unwrap();
        assert!(file.as_raw_fd() >= 3);
        keep.push(Box::new(file));
    }
    let socket_path = root.join("x.sock");
    keep.push(Box::new(
        std::os::unix::net::UnixListener::bind(&socket_path).unwrap(),
    ));
    let abstract_name = format!("kt-attack-{}", std::process::id());
    {
        use std::os::linux::net::SocketAddrExt;
        let addr =
            std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
        keep.push(Box::new(
            std::os::unix::net::UnixListener::bind_addr(&addr).unwrap(),
        ));
    }
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp_port = tcp.local_addr().unwrap().port();
    keep.push(Box::new(tcp));
    Host {
        secret,
        appendable,
        host_dir,
        socket_path,
        abstract_name,
        tcp_port,
        marker: format!("kt-attack-{}", std::process::id()),
        sleep: format!("1000.{}", std::process::id()),
        home: home::Home::prepare(outside_tmp),
        _keep: keep,
    }
}

/// What a run must never leave: this process's sandboxed processes (its harness, by the work directory it runs
/// in; what a case leaves running, by the `sleep` argument unique to this process), its work directories, System
/// V shared memory. Other processes on the machine (another test run) are not looked at.
fn leftovers(shm_before: usize, sleep: &str) -> Vec<String> {
    let prefix = std::env::temp_dir().join(format!("kt-sandbox-{}-", std::process::id()));
    let mut left = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let mut cmdline = String::new();
        if let Ok(mut f) = std::fs::File::open(entry.path().join("cmdline")) {
            let _ = f.read_to_string(&mut cmdline);
        }
        let zombie =
            std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|s| s.contains(") Z "));
        let ours = cmdline.contains(sleep)
            || (cmdline.contains("kt_harness.py")
                && std::fs::read_link(entry.path().join("cwd")).is_ok_and(|cwd| {
                    cwd.to_string_lossy()
                        .starts_with(&*prefix.to_string_lossy())
                }));
        if !zombie && ours {
            left.push(format!("process {name}: {}", cmdline.replace('\0', " ")));
        }
    }
    let prefix = format!("kt-sandbox-{}-", std::process::id());
    for entry in std::fs::read_dir(std::env::temp_dir()).unwrap().flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            left.push(format!("work directory {}", entry.path().display()));
        }
    }
    let shm = shm_segments();
    if shm > shm_before {
        left.push(format!(
            "{} new System V shared memory segments",
            shm - shm_before
        ));
    }
    left
}

fn shm_segments() -> usize {
    std::fs::read_to_string("/proc/sysvipc/shm")
        .map(|t| t.lines().count().saturating_sub(1))
        .unwrap_or(0)
}

fn run_corpus() {
    let python = PythonRuntime::probe().unwrap_or_else(|e| {
        panic!("the attack corpus needs python3 with numpy: {e}. Run scripts/test.sh")
    });
    let root = tempfile::tempdir().unwrap();
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // outside /tmp (whose private copy would hide anything there anyway), as homes and scratch spaces are
    let outside_root = std::env::var_os("KT_ATTACK_OUTSIDE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    let outside = tempfile::Builder::new()
        .prefix("attacks")
        .tempdir_in(&outside_root)
        .unwrap();
    std::fs::set_permissions(outside.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let host = prepare_host(root.path(), outside.path());
    let sandbox = Sandbox::new(policy(&host.home));
    let protections = sandbox.protections();
    let user = if protections.running_as_root {
        "root"
    } else {
        "an ordinary user"
    };
    println!(
        "attack corpus as {user} (home {}: {}); protections: {}",
        host.home.dir.display(),
        if host.home.real {
            "the real one"
        } else {
            "a scratch one"
        },
        protections.summary()
    );
    let mut failures = Vec::new();
    let cases = corpus();
    assert!(cases.len() >= 30, "the corpus has {} cases", cases.len());
    for (i, case) in cases.iter().enumerate() {
        let available = case.needs.is_none_or(|needs| needs(&protections));
        if !available {
            // Some of these would hit this very process (kill(-1) as the same user): not run, and listed.
            println!(
                "| {:>2} | {} | not run: its protection is unavailable here | - | - |",
                i + 1,
                case.name
            );
            continue;
        }
        let dest = tempfile::tempdir().unwrap();
        let shm_before = shm_segments();
        let start = Instant::now();
        let result = run_generator(
            &sandbox,
            &python,
            &script(&host, case.attack),
            &spec(),
            1,
            dest.path(),
        );
        let took = start.elapsed();
        let text = match &result {
            Ok(_) => "test written".to_string(),
            Err(e) => e.to_string(),
        };
        let mut problems = Vec::new();
        if text.contains("ESCAPED") {
            problems.push(
                text.lines()
                    .find(|l| l.contains("ESCAPED"))
                    .unwrap_or("")
                    .to_string(),
            );
        }
        if let Err(e) = (case.check)(&host, &result) {
            problems.push(e);
        }
        // Give the kernel a moment to reap a torn-down namespace before looking for leftovers.
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut left = leftovers(shm_before, &host.sleep);
        while !left.is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            left = leftovers(shm_before, &host.sleep);
        }
        problems.extend(left);
        let verdict = if problems.is_empty() {
            "contained"
        } else {
            "ESCAPED"
        };
        let first_line = text
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(110)
            .collect::<String>();
        println!(
            "| {:>2} | {} | {verdict} | {:.1} s | {first_line} |",
            i + 1,
            case.name,
            took.as_secs_f64()
        );
        if !problems.is_empty() {
            failures.push(format!("{}: {}", case.name, problems.join("; ")));
        }
    }
    assert!(
        failures.is_empty(),
        "attacks not contained as {user}:\n{}",
        failures.join("\n")
    );
}

#[test]
fn corpus_holds_here() {
    run_corpus();
}

#[path = "attacks/as_user.rs"]
mod as_user;
