//! The unprivileged uid/gid a sandboxed run gets when kt runs as root: a fresh one per run, never a real user's.
//!
//! Why not `nobody` (65534): RLIMIT_NPROC counts every process of a uid, so runs sharing `nobody` would eat each
//! other's process budget (and tests run in parallel); processes of one uid may also signal each other, so one
//! run could kill another; and the reaper that kills everything of a run's uid (`kill(-1)` as that uid) is only
//! sound when the uid belongs to that run alone. The range below is far from distribution users (< 60000),
//! systemd's dynamic users (61184–65519) and common LDAP ranges, and it has no passwd entry, which the programs we
//! run do not need (HOME is set explicitly).

use std::sync::atomic::{AtomicU32, Ordering};

/// First uid of kt's range ("kt" in the high bytes).
pub const UID_BASE: u32 = 0x6b74_0000;
/// Size of the range: 2^24 uids, so the range stays below 2^31 (some tools treat uids as signed).
const UID_SPAN: u32 = 1 << 24;

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A uid/gid pair for one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunIdentity {
    pub uid: u32,
    pub gid: u32,
}

impl RunIdentity {
    /// A fresh identity: the process id spreads concurrent kt processes apart, a counter spreads runs of one
    /// process apart (4096 runs before a uid is reused, long after the earlier run was reaped).
    pub fn allocate() -> Self {
        let run = NEXT.fetch_add(1, Ordering::Relaxed) % 4096;
        let slot = (std::process::id() % 4096) * 4096 + run;
        // The last uid of the range is reserved for the probe.
        let uid = UID_BASE + slot % (UID_SPAN - 1);
        Self { uid, gid: uid }
    }

    /// The identity used by the capability probe (the last of the range, which runs never get).
    pub fn probe() -> Self {
        Self {
            uid: UID_BASE + UID_SPAN - 1,
            gid: UID_BASE + UID_SPAN - 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_runs_get_distinct_unprivileged_uids() {
        let a = RunIdentity::allocate();
        let b = RunIdentity::allocate();
        assert_ne!(a.uid, b.uid);
        for id in [a, b, RunIdentity::probe()] {
            assert!(id.uid >= UID_BASE && id.uid < (1 << 31), "{id:?}");
        }
    }
}
