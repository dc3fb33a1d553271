//! What a generator sees of the host and what reaches past the namespaces, checked with real runs: hidden
//! directories, the read-only host, the system-call filter, the memory of a whole run and deleted files held open.
//! Each asserts what this machine's protections promise (and says which ones it has).

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use crate::outcome::{Ending, Limit};
use crate::policy::Policy;
use crate::sandbox::Sandbox;

fn policy() -> Policy {
    let mut p = Policy::for_generator().allow_unsandboxed(true);
    p.wall_timeout = Some(Duration::from_secs(20));
    p.cpu_seconds = Some(10);
    p.address_space = Some(2 << 30);
    p.output_cap = 64 * 1024;
    p
}

/// A directory outside /tmp (whose private copy would hide it anyway), as a home or an HPC scratch space is.
fn outside_tmp(mode: u32) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix(".isolation-test")
        .tempdir_in(env!("CARGO_MANIFEST_DIR"))
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(mode)).unwrap();
    dir
}

#[test]
fn a_hidden_home_is_empty_the_host_is_read_only_and_the_work_directory_writable() {
    let home = outside_tmp(0o755);
    std::fs::create_dir(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/id_rsa"), "kt-private-key").unwrap();
    std::fs::write(home.path().join(".bashrc"), "# mine\n").unwrap();
    let scratch = outside_tmp(0o1777);
    let sandbox = Sandbox::new(policy().hiding(home.path()));
    let active = sandbox.protections();
    let script = format!(
        "cat {home}/.ssh/id_rsa; echo pwned >> {home}/.bashrc; echo x > {scratch}/left; echo w > written && cat written",
        home = home.path().display(),
        scratch = scratch.path().display()
    );
    let o = sandbox.run("/bin/sh", &["-c", &script], None).unwrap();
    let out = o.stdout_text();
    assert!(out.contains('w'), "the work directory takes writes: {o:?}");
    let bashrc = std::fs::read_to_string(home.path().join(".bashrc")).unwrap();
    let left = scratch.path().join("left").exists();
    if active.read_only_host {
        assert!(!out.contains("kt-private-key"), "{o:?}");
        assert_eq!(bashrc, "# mine\n");
        assert!(!left, "a file was left in a world-writable directory");
    } else {
        println!("no private home here: {}", active.summary());
    }
}

#[test]
fn a_unix_socket_anywhere_does_not_connect_and_no_key_is_stored() {
    let dir = outside_tmp(0o755);
    let path = dir.path().join("control.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    let sandbox = Sandbox::new(policy());
    let active = sandbox.protections();
    // python3 without numpy is enough; its ctypes reaches add_key
    let code = format!(
        "import socket, ctypes, platform\n\
         try:\n    socket.socket(socket.AF_UNIX).connect({path:?}); print('CONNECTED')\n\
         except OSError as e: print('refused', e.errno)\n\
         nr = {{'x86_64': 248, 'aarch64': 217}}.get(platform.machine())\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         k = libc.syscall(nr, b'user', b'kt-test', b'secret', 6, -4) if nr else -1\n\
         print('KEY' if k > 0 else 'no key')\n",
        path = path.to_string_lossy()
    );
    let o = sandbox.run("python3", &["-c", &code], None).unwrap();
    let out = o.stdout_text();
    assert!(o.success(), "{o:?}");
    if active.syscall_filter {
        assert!(out.contains("refused") && out.contains("no key"), "{out}");
    } else {
        println!("no system-call filter here: {}", active.summary());
    }
}

/// Three children of a python3 that first runs `prelude` hold 200 MiB each (within their own address-space
/// limit), 600 MiB together, against a run cap of 300 MiB: the run must end on the run's memory limit.
fn three_children_past_the_run_memory(prelude: &str) -> crate::outcome::Outcome {
    let mut p = policy();
    p.memory = Some(300 << 20);
    let sandbox = Sandbox::new(p);
    let code = format!(
        "import os, time\n{prelude}\n\
         for i in range(3):\n    if os.fork() == 0:\n        b = b'\\1' * (200 << 20); time.sleep(30); os._exit(0)\n\
         time.sleep(30)\n"
    );
    let o = sandbox.run("python3", &["-c", &code], None).unwrap();
    assert_eq!(
        o.ending,
        Ending::KilledByLimit {
            which: Limit::RunMemory
        },
        "{o:?}"
    );
    assert!(o.elapsed < Duration::from_secs(15), "{:?}", o.elapsed);
    o
}

#[test]
fn three_children_holding_memory_together_pass_the_run_memory_limit() {
    three_children_past_the_run_memory("");
}

#[test]
fn deleted_files_held_open_count_against_the_disk_quota() {
    let mut p = policy();
    p.disk_quota = Some(4 << 20);
    p.file_size = Some(2 << 20);
    let sandbox = Sandbox::new(p);
    // four 2 MiB files, each deleted at once but kept open: the directory stays empty
    let code = "import os, time\n\
                held = []\n\
                for i in range(4):\n    f = open('f%d' % i, 'wb'); f.write(b'\\1' * ((2 << 20) - 4096)); f.flush(); os.unlink('f%d' % i); held.append(f)\n\
                time.sleep(30)\n";
    let o = sandbox.run("python3", &["-c", code], None).unwrap();
    assert!(
        matches!(o.ending, Ending::DiskQuotaExceeded { .. }),
        "{o:?}"
    );
    assert!(o.elapsed < Duration::from_secs(15), "{:?}", o.elapsed);
}

#[test]
#[ignore = "needs a cgroup v2 kt may write that gives memory to its children (root on a systemd host); \
            scripts/test.sh runs it where /sys/fs/cgroup allows"]
fn memory_cgroup_caps_the_whole_tree_in_the_kernel() {
    use crate::confine::{self, Confinement};
    use crate::memory_cgroup::{RunCgroup, memory_cgroup};
    let base = memory_cgroup().unwrap_or_else(|why| panic!("no memory cgroup here: {why}"));
    // the kernel's own kill, without kt's measuring: one process past a 64 MiB cap
    let cgroup = RunCgroup::create(base, 64 << 20).unwrap();
    let mut command = std::process::Command::new("python3");
    command.args(["-c", "b = b'\\1' * (256 << 20)"]);
    confine::install(
        &mut command,
        Confinement {
            cgroup_procs: Some(cgroup.procs()),
            ..Confinement::default()
        },
    );
    let status = command.status().unwrap();
    assert!(!status.success() && cgroup.oom_killed(), "{status:?}");
    drop(cgroup);
    // a sandboxed run: its processes are in a cgroup of their own, together past the cap, and the cgroup goes
    assert!(
        Sandbox::new(policy()).protections().memory_cgroup,
        "{}",
        Sandbox::new(policy()).protections().summary()
    );
    let o = three_children_past_the_run_memory(
        "import sys; print(open('/proc/self/cgroup').read()); sys.stdout.flush()",
    );
    let mine = format!("kt-run-{}-", std::process::id());
    assert!(
        o.stdout_text().contains(&mine),
        "not in a run cgroup: {o:?}"
    );
    let left: Vec<_> = std::fs::read_dir(base)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&mine))
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "cgroups left behind: {left:?}");
}
