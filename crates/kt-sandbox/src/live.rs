//! The sandboxed programs this process is running, so that a signal to kt (Ctrl-C, SIGTERM, SIGHUP) can stop
//! them all at once, before kt records the run as interrupted and exits.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::confine;
use crate::identity::RunIdentity;

/// Live program leaders (pid = process group id) and the uid each runs as when it has one of its own.
static LIVE: Mutex<BTreeMap<libc::pid_t, Option<RunIdentity>>> = Mutex::new(BTreeMap::new());

/// Records a started program (its leader is unreaped until [`forget`]).
pub(crate) fn register(pid: libc::pid_t, identity: Option<RunIdentity>) {
    if let Ok(mut live) = LIVE.lock() {
        live.insert(pid, identity);
    }
}

/// Drops a program from the list; called *before* its leader is reaped, so that [`stop_all`] never signals a
/// process group id that may have been recycled.
pub(crate) fn forget(pid: libc::pid_t) {
    if let Ok(mut live) = LIVE.lock() {
        live.remove(&pid);
    }
}

/// Kills every sandboxed program this process runs, with everything it started. The threads watching them
/// then see them end, report them as killed and remove their work directories.
pub fn stop_all() -> usize {
    let Ok(live) = LIVE.lock() else {
        return 0;
    };
    stop(&live)
}

fn stop(live: &BTreeMap<libc::pid_t, Option<RunIdentity>>) -> usize {
    for (&pid, identity) in live {
        confine::kill_group(pid);
        if let Some(id) = identity {
            confine::kill_all_of_uid(id.uid, id.gid);
        }
    }
    live.len()
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;

    use super::*;

    #[test]
    fn stopping_kills_each_listed_group_with_its_children() {
        // A group of its own, like a sandboxed program's (the global list is left alone: other tests run
        // programs in parallel).
        let mut leader = std::process::Command::new("/bin/sh")
            .args(["-c", "sleep 60 & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = leader.id() as libc::pid_t;
        let list = BTreeMap::from([(pid, None)]);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(stop(&list), 1);
        let status = leader.wait().unwrap();
        assert!(!status.success());
    }
}
