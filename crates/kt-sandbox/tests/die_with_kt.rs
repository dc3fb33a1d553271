//! Sandboxed programs die with kt even when kt is killed with SIGKILL (no chance to clean up): the program asks
//! for SIGKILL at its parent's death, and in a PID namespace everything it started dies with it.
//! This test binary plays kt: it runs itself again as a child that starts a sandboxed program, then kills that
//! child with SIGKILL.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use kt_sandbox::{Policy, Sandbox};

const MARK: &str = "1000.5151";
const CHILD_ENV: &str = "KT_TEST_DIE_WITH_KT_CHILD";

fn marked_processes() -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let zombie =
            std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|s| s.contains(") Z "));
        if cmdline.contains(MARK) && !cmdline.contains("--exact") && !zombie {
            found.push(format!(
                "{}: {cmdline}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    found
}

#[test]
fn programs_die_with_kt_even_on_sigkill() {
    if std::env::var_os(CHILD_ENV).is_some() {
        // The "kt" side: run a program with a background child, blocking until killed.
        let mut policy = Policy::for_generator().allow_unsandboxed(true);
        policy.wall_timeout = Some(Duration::from_secs(120));
        let script = format!("sleep {MARK} & sleep {MARK}");
        let _ = Sandbox::new(policy).run("/bin/sh", &["-c", &script], None);
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let mut kt = std::process::Command::new(exe)
        .args([
            "--exact",
            "programs_die_with_kt_even_on_sigkill",
            "--nocapture",
        ])
        .env(CHILD_ENV, "1")
        .spawn()
        .unwrap();
    let start = Instant::now();
    while marked_processes().len() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the sandboxed program never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    kt.kill().unwrap();
    kt.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut left = marked_processes();
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        left = marked_processes();
    }
    let protections = kt_sandbox::detect_protections();
    if protections.pid_namespace {
        assert!(left.is_empty(), "outlived kt: {left:?}");
    } else {
        // Without a PID namespace only the program itself asked for the signal; its background child is on its
        // own (kt doctor says so). The program must be gone, at least.
        assert!(left.len() <= 1, "outlived kt: {left:?}");
        for l in &left {
            let pid: i32 = l.split(':').next().unwrap().parse().unwrap();
            // SAFETY: kills a leftover sleep of this test.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}
