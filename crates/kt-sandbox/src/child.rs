//! [`SandboxedChild`]: a long-lived sandboxed process (the tuner's GPU worker) with piped stdin/stdout.

use std::process::{Child, ChildStdin, ChildStdout, ExitStatus};
use std::time::{Duration, Instant};

use crate::capture::OutputTail;
use crate::confine;
use crate::error::SandboxError;
use crate::identity::RunIdentity;
use crate::workdir::Workdir;

/// A running sandboxed program. It leads its own process group; [`SandboxedChild::kill`] and `Drop` kill the
/// whole group (and, when it runs as a uid of its own, every process of that uid), so nothing it started outlives
/// it.
#[derive(Debug)]
pub struct SandboxedChild {
    child: Child,
    identity: Option<RunIdentity>,
    tail: Option<OutputTail>,
    replies: Option<std::fs::File>,
    status: Option<ExitStatus>,
    workdir: Workdir,
}

impl SandboxedChild {
    pub(crate) fn new(
        child: Child,
        identity: Option<RunIdentity>,
        tail: Option<OutputTail>,
        replies: Option<std::fs::File>,
        workdir: Workdir,
    ) -> Self {
        crate::live::register(child.id() as libc::pid_t, identity);
        Self {
            child,
            identity,
            tail,
            replies,
            status: None,
            workdir,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its work directory (deleted when the child is dropped, unless the policy named one).
    pub fn workdir(&self) -> &std::path::Path {
        self.workdir.path()
    }

    pub fn stdin(&mut self) -> Option<&mut ChildStdin> {
        self.child.stdin.as_mut()
    }

    pub fn stdout(&mut self) -> Option<&mut ChildStdout> {
        self.child.stdout.as_mut()
    }

    /// Takes ownership of stdin (e.g. to move it into a writer thread). Dropping it closes the pipe.
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }

    /// Takes ownership of stdout (e.g. to move it into a reader thread).
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    /// Takes the read end of the reply pipe requested with `SpawnOptions::reply_fd`.
    pub fn take_replies(&mut self) -> Option<std::fs::File> {
        self.replies.take()
    }

    /// The last bytes the program wrote to stderr (and to stdout with `SpawnOptions::stdout_to_tail`);
    /// empty when stderr is inherited.
    pub fn stderr_tail(&self) -> Vec<u8> {
        self.tail
            .as_ref()
            .map(OutputTail::snapshot)
            .unwrap_or_default()
    }

    /// Kills the whole process group with SIGKILL and reaps the program. Idempotent.
    pub fn kill(&mut self) -> Result<ExitStatus, SandboxError> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        self.kill_everything();
        self.reap()
    }

    /// Returns the exit status if the program has ended (then also kills whatever it left in its group).
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>, SandboxError> {
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        let pid = self.pid();
        if confine::has_exited(pid as libc::pid_t)
            .map_err(|source| SandboxError::Wait { pid, source })?
        {
            self.kill_everything();
            return self.reap().map(Some);
        }
        Ok(None)
    }

    /// Waits up to `timeout` for the program to end; `None` when it is still running.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Result<Option<ExitStatus>, SandboxError> {
        let deadline = Instant::now() + timeout;
        let mut pause = Duration::from_millis(1);
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(Some(status));
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            std::thread::sleep(pause.min(deadline - now));
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    /// Kills the group while the leader is unreaped (its pid, hence the group id, cannot be recycled yet).
    fn kill_everything(&self) {
        confine::kill_group(self.pid() as libc::pid_t);
        if let Some(id) = self.identity {
            confine::kill_all_of_uid(id.uid, id.gid);
        }
    }

    fn reap(&mut self) -> Result<ExitStatus, SandboxError> {
        let pid = self.pid();
        crate::live::forget(pid as libc::pid_t);
        let status = self
            .child
            .wait()
            .map_err(|source| SandboxError::Wait { pid, source })?;
        self.status = Some(status);
        Ok(status)
    }
}

impl Drop for SandboxedChild {
    fn drop(&mut self) {
        if self.status.is_none()
            && let Err(err) = self.kill()
        {
            tracing::warn!(pid = self.pid(), %err, "could not reap a sandboxed child");
        }
    }
}
