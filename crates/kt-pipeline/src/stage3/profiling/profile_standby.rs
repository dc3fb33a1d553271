//! A profile started before it is needed. Most of an Nsight Compute profile's cost is start-up: ncu itself,
//! its injection into `kt __profile-launch` and into that program's worker, and the worker's CUDA context
//! (about 2.5 of the 3 seconds a profile of the demo's matmul takes on an H100; the profiled launch and its
//! replays take a few hundred milliseconds). So while a kernel is being tuned, a standby (`kt
//! __profile-launch --standby` under ncu) starts and then waits on its standard input; when the tuned
//! kernel is accepted and must be profiled, the launch is written to it and only the launch itself is left
//! to wait for. A standby that is never used ends when its input closes (the run ends) or is killed when
//! the backend is dropped. The standby launches nothing while it waits, so the tuning it overlaps is timed
//! on a GPU that runs only the tuner's kernels. `KT_PROFILE_STANDBY=off` turns it off (every profile then
//! starts ncu when it is needed, as before).

use std::path::Path;
use std::sync::Mutex;

use kt_profile::{NcuPath, ProfileCommand, RunningProfile};

/// The environment variable that turns standbys off (`off`).
pub const STANDBY_ENV: &str = "KT_PROFILE_STANDBY";

/// At most one waiting profile run.
#[derive(Default)]
pub(in crate::stage3) struct ProfileStandby {
    waiting: Mutex<Option<RunningProfile>>,
}

/// The ncu command of a standby for kernel `kernel` with the tuner's cache in `cache_dir`: the same filter
/// and warm-up launch as a direct profile (`ProfileLaunch::args`), the launch itself still to come.
pub(in crate::stage3) fn standby_command(
    ncu: NcuPath,
    kernel: &str,
    kt: kt_tuner::host::self_command::SelfCommand,
    cache_dir: &Path,
) -> ProfileCommand {
    ProfileCommand::new(ncu, kernel, kt.program)
        .args(kt.args)
        .args([
            "__profile-launch".as_ref(),
            "--standby".as_ref(),
            "--cache-dir".as_ref(),
            cache_dir.as_os_str(),
        ])
        .metrics(kt_profile::SUMMARY_METRICS)
}

fn turned_off() -> bool {
    std::env::var(STANDBY_ENV).is_ok_and(|v| v.eq_ignore_ascii_case("off") || v == "0")
}

impl ProfileStandby {
    /// Starts a standby for `kernel` unless one is waiting (or standbys are off). A failure to start only
    /// means the next profile starts ncu itself.
    pub fn ensure(&self, ncu: &NcuPath, kernel: &str, cache_dir: &Path) {
        if turned_off() {
            return;
        }
        let mut slot = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(run) = slot.as_mut()
            && run.is_running()
        {
            return;
        }
        // kt's own command line: this executable, or the host's (kt's Python module)
        let kt = match kt_tuner::host::self_command::self_command() {
            Ok(kt) => kt,
            Err(e) => {
                tracing::debug!(error = %e, "no standby profile");
                return;
            }
        };
        match standby_command(ncu.clone(), kernel, kt, cache_dir).spawn(true) {
            Ok(run) => {
                tracing::debug!(kernel, "a standby profile is starting");
                *slot = Some(run);
            }
            Err(e) => tracing::debug!(error = %e, "no standby profile"),
        }
    }

    /// Waits (at most `timeout`) until a standby that is still starting says it is ready, so that no kernel is
    /// timed while its worker creates a CUDA context under ncu (measured: that made a concurrent baseline
    /// 5 % slower). Returns how long it waited.
    pub async fn wait_until_ready(&self, timeout: std::time::Duration) -> std::time::Duration {
        let started = std::time::Instant::now();
        loop {
            let starting = {
                let mut slot = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
                slot.as_mut().is_some_and(|run| {
                    run.is_running()
                        && !run.output_contains(
                            crate::stage3::profiling::profile_launch::STANDBY_READY,
                        )
                })
            };
            if !starting || started.elapsed() >= timeout {
                return started.elapsed();
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// The waiting standby, if one is still alive (one that died is dropped: the caller profiles afresh).
    pub fn take(&self) -> Option<RunningProfile> {
        let mut slot = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        let mut run = slot.take()?;
        run.is_running().then_some(run)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_standby_runs_the_hidden_launch_command_with_the_direct_profiles_filter() {
        let kt = kt_tuner::host::self_command::SelfCommand {
            program: "/bin/kt".into(),
            args: Vec::new(),
        };
        let cmd = standby_command(
            NcuPath("/cuda/bin/ncu".into()),
            "matrixMultiply",
            kt,
            Path::new("/run/tuning"),
        );
        let args: Vec<String> = cmd
            .ncu_args(Path::new("/tmp/r.csv"))
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let line = args.join(" ");
        assert!(
            line.ends_with("/bin/kt __profile-launch --standby --cache-dir /run/tuning"),
            "{line}"
        );
        // the kernel's first launch is profiled (its module is loaded eagerly)
        assert!(
            line.contains("--kernel-name regex:^matrixMultiply$ --launch-skip 0 --launch-count 1 "),
            "{line}"
        );
        // only what the summary reads: no FP32 instruction counts (they patch the kernel's code)
        assert!(!line.contains("ffma"), "{line}");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_measurement_waits_for_a_starting_standby_until_it_says_it_is_ready() {
        use std::os::unix::fs::PermissionsExt;
        use std::time::Duration;
        let dir = tempfile::tempdir().unwrap();
        let ncu = dir.path().join("ncu");
        let script = format!(
            "#!/bin/sh\nsleep 0.4\necho {}\nsleep 5\n",
            crate::stage3::profiling::profile_launch::STANDBY_READY
        );
        std::fs::write(&ncu, script).unwrap();
        std::fs::set_permissions(&ncu, std::fs::Permissions::from_mode(0o755)).unwrap();
        let standby = ProfileStandby::default();
        assert!(
            standby.wait_until_ready(Duration::from_secs(5)).await < Duration::from_millis(50),
            "no standby: no wait"
        );
        standby.ensure(&NcuPath(ncu.clone()), "k", dir.path());
        let waited = standby.wait_until_ready(Duration::from_secs(5)).await;
        assert!(
            waited >= Duration::from_millis(300) && waited < Duration::from_secs(4),
            "{waited:?}"
        );
        // ready now: no second wait, and the standby is still there to be used
        assert!(standby.wait_until_ready(Duration::from_secs(5)).await < Duration::from_millis(50));
        assert!(standby.take().is_some());
        // one that never says it is ready is waited for only up to the limit
        std::fs::write(&ncu, "#!/bin/sh\nsleep 5\n").unwrap();
        standby.ensure(&NcuPath(ncu), "k", dir.path());
        let waited = standby.wait_until_ready(Duration::from_millis(300)).await;
        assert!(
            waited >= Duration::from_millis(300) && waited < Duration::from_secs(2),
            "{waited:?}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_dead_standby_is_not_handed_out_and_a_live_one_only_once() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let ncu = dir.path().join("ncu");
        // a fake ncu whose program waits for its input: `sleep` stands for the waiting launch
        std::fs::write(&ncu, "#!/bin/sh\nsleep 5\n").unwrap();
        std::fs::set_permissions(&ncu, std::fs::Permissions::from_mode(0o755)).unwrap();
        let standby = ProfileStandby::default();
        standby.ensure(&NcuPath(ncu.clone()), "k", dir.path());
        assert!(standby.take().is_some(), "a live standby is handed out");
        assert!(standby.take().is_none(), "and only once");
        std::fs::write(&ncu, "#!/bin/sh\nexit 1\n").unwrap();
        standby.ensure(&NcuPath(ncu), "k", dir.path());
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(standby.take().is_none(), "a standby that died is not used");
    }
}
