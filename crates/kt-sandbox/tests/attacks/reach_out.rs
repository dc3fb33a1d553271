//! Cases that reach past the sandbox's walls: descriptors kt left open, host files and directories, the
//! world-writable directories, sockets, the network and System V shared memory.

use super::Case;
use super::checks::*;

pub(super) fn cases() -> Vec<Case> {
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
    ]
}
