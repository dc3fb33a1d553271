//! The host side of the corpus: what is prepared for the attacks (a secret, open descriptors, sockets, a home),
//! the generator each case runs in, the corpus's policy, and what a case must not leave behind.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kt_sandbox::{ArgSpec, GeneratorSpec, Policy};

use super::home;

/// What the host side prepared for the attacks.
pub(super) struct Host {
    /// A root-only (0600) file with a secret.
    pub(super) secret: PathBuf,
    /// A file the host keeps open for writing, inherited if descriptors leaked.
    pub(super) appendable: PathBuf,
    /// A directory of the host's, not writable by others.
    pub(super) host_dir: PathBuf,
    /// A pathname Unix socket, an abstract one and a TCP port the host listens on.
    pub(super) socket_path: PathBuf,
    pub(super) abstract_name: String,
    pub(super) tcp_port: u16,
    pub(super) marker: String,
    /// The argument of the `sleep` a case leaves running: unique to this process, so that only its own
    /// leftovers are looked for.
    pub(super) sleep: String,
    pub(super) home: home::Home,
    pub(super) _keep: Vec<Box<dyn std::any::Any>>,
}

pub(super) const PRELUDE: &str = r#"
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

pub(super) const EPILOGUE: &str = r#"
    if escaped:
        raise Exception("ESCAPED: " + escaped)
    return [np.zeros(64, dtype=np.float32), 64]
"#;

pub(super) fn py_str(s: &str) -> String {
    format!("{s:?}")
}

pub(super) fn script(host: &Host, attack: &str) -> String {
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

pub(super) fn spec() -> GeneratorSpec {
    GeneratorSpec {
        kernel: "k".into(),
        params: vec![
            ArgSpec::array("a", "float", Some("n")),
            ArgSpec::scalar("n", "int"),
        ],
        constants: Vec::new(),
        outputs: vec!["a".into()],
        problem_size: Some(vec!["n".into()]),
        max_total_bytes: 16 << 20,
    }
}

pub(super) fn policy(home: &home::Home) -> Policy {
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

pub(super) fn prepare_host(root: &Path, outside_tmp: &Path) -> Host {
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
pub(super) fn leftovers(shm_before: usize, sleep: &str) -> Vec<String> {
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

pub(super) fn shm_segments() -> usize {
    std::fs::read_to_string("/proc/sysvipc/shm")
        .map(|t| t.lines().count().saturating_sub(1))
        .unwrap_or(0)
}
