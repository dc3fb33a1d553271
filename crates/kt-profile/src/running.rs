//! An ncu run in flight: started by [`ProfileCommand::spawn`], ended by [`RunningProfile::finish`] (which
//! may first tell the program what to launch on its standard input) or by being dropped (ncu and its
//! program are killed). Starting early and finishing later is what lets ncu's own start-up, which costs
//! more than the profiled launch itself, overlap other work.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, ChildStdin};
use std::time::{Duration, Instant};

use crate::error::ProfileError;
use crate::ncu_log::interpret;
use crate::profile::KernelProfile;

/// ncu running on a program, with the files its report and the program's output go to.
pub struct RunningProfile {
    /// The kernel profiled, and ncu's filter for it (for the error when it never ran).
    kernel: String,
    filter: String,
    child: Child,
    input: Option<ChildStdin>,
    /// Holds the report and output files until the run is read.
    _dir: tempfile::TempDir,
    log: PathBuf,
    out: PathBuf,
    /// Set once ncu has exited and been reaped.
    ended: bool,
}

impl RunningProfile {
    pub(crate) fn new(
        kernel: String,
        filter: String,
        mut child: Child,
        dir: tempfile::TempDir,
        log: PathBuf,
        out: PathBuf,
    ) -> Self {
        let input = child.stdin.take();
        Self {
            kernel,
            filter,
            child,
            input,
            _dir: dir,
            log,
            out,
            ended: false,
        }
    }

    /// Whether the program has written `marker` to its output (a standby says so once it is ready).
    pub fn output_contains(&self, marker: &str) -> bool {
        std::fs::read_to_string(&self.out).is_ok_and(|text| text.contains(marker))
    }

    /// Whether ncu is still running (a program waiting for its input is).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Writes `input` (when given) to the program's standard input and closes it, waits for ncu to exit
    /// (at most `timeout` from now) and parses the one profiled launch.
    pub fn finish(
        mut self,
        input: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<KernelProfile, ProfileError> {
        if let Some(mut pipe) = self.input.take()
            && let Some(bytes) = input
        {
            // A program that already exited closed its end; its output then says why.
            if let Err(e) = pipe.write_all(bytes).and_then(|()| pipe.flush()) {
                tracing::debug!(error = %e, "the profiled program did not take its input");
            }
        }
        let started = Instant::now();
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if started.elapsed() >= timeout => {
                    self.stop();
                    return Err(ProfileError::Timeout {
                        kernel: self.kernel.clone(),
                        seconds: timeout.as_secs(),
                    });
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(source) => {
                    self.stop();
                    return Err(ProfileError::Io {
                        what: "wait for ncu".into(),
                        source,
                    });
                }
            }
        }
        self.ended = true;
        let report = std::fs::read_to_string(&self.log).unwrap_or_default();
        let program_text = std::fs::read_to_string(&self.out).unwrap_or_default();
        interpret(
            &self.kernel,
            &self.filter,
            &format!("{report}\n{program_text}"),
            &report,
        )
    }

    /// Kills ncu and the program it started (one process group), then reaps ncu.
    fn stop(&mut self) {
        self.input = None;
        #[cfg(unix)]
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: kill(2) with a negative pid signals the process group made for ncu at spawn; it has
            // no memory effects in this process.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.ended = true;
    }
}

impl Drop for RunningProfile {
    fn drop(&mut self) {
        if !self.ended {
            self.stop();
        }
    }
}
