//! A long-lived program ([`Sandbox::spawn`], [`Sandbox::spawn_with`]): piped stdin and stdout, stderr kept as
//! a tail, and optionally a reply pipe on an extra descriptor, for the tuner's GPU worker.

use std::ffi::OsStr;
use std::os::fd::AsRawFd;
use std::process::Stdio;

use crate::capture::OutputTail;
use crate::child::SandboxedChild;
use crate::error::SandboxError;
use crate::policy::StderrMode;
use crate::sandbox::Sandbox;

/// Extra plumbing for [`Sandbox::spawn_with`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpawnOptions {
    /// Open a pipe whose write end the child gets as this descriptor (e.g. 3) and whose read end
    /// [`SandboxedChild::take_replies`] returns: a protocol channel that kernel `printf` on stdout cannot corrupt.
    pub reply_fd: Option<i32>,
    /// Fold stdout into the captured tail (with stderr) instead of piping it to the caller; needs
    /// `StderrMode::Capture`.
    pub stdout_to_tail: bool,
}

impl Sandbox {
    /// Starts a long-lived program with piped stdin and stdout in a fresh work directory (kept as long as the
    /// child; pass absolute paths to it). Its stderr is captured (last bytes kept) or inherited per the policy. The
    /// output cap and wall timeout do not apply: the caller owns the protocol and its own watchdog.
    pub fn spawn<S: AsRef<OsStr>>(
        &self,
        program: impl AsRef<OsStr>,
        args: &[S],
    ) -> Result<SandboxedChild, SandboxError> {
        self.spawn_with(program, args, &SpawnOptions::default())
    }

    /// Like [`Sandbox::spawn`], with a reply pipe on an extra descriptor and/or stdout folded into the tail.
    pub fn spawn_with<S: AsRef<OsStr>>(
        &self,
        program: impl AsRef<OsStr>,
        args: &[S],
        options: &SpawnOptions,
    ) -> Result<SandboxedChild, SandboxError> {
        let workdir = self.workdir()?;
        let program = program.as_ref();
        let mut prepared = self.prepare(&workdir, program, args)?;
        let reply_pipe = match options.reply_fd {
            Some(target) => {
                let (read, write) =
                    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| {
                        SandboxError::Pipe {
                            pid: 0,
                            what: format!("creating the reply pipe: {e}"),
                        }
                    })?;
                prepared.confinement_extra_fd(write.as_raw_fd(), target);
                Some((read, write))
            }
            None => None,
        };
        let tail_bytes = match self.policy.stderr {
            StderrMode::Capture { tail_bytes } => Some(tail_bytes),
            StderrMode::Inherit => None,
        };
        prepared.command.stdin(Stdio::piped());
        prepared.command.stdout(Stdio::piped());
        prepared.command.stderr(if tail_bytes.is_some() {
            Stdio::piped()
        } else {
            Stdio::inherit()
        });
        let (mut command, identity) = prepared.finish();
        let mut child = command
            .spawn()
            .map_err(|source| self.spawn_error(program, source))?;
        // The parent's copy of the write end must go, or the reader would never see end-of-file.
        let replies = reply_pipe.map(|(read, write)| {
            drop(write);
            std::fs::File::from(read)
        });
        let tail = tail_bytes.map(|keep| {
            let tail = OutputTail::default();
            if let Some(stream) = child.stderr.take() {
                tail.follow(stream, keep);
            }
            if options.stdout_to_tail
                && let Some(stream) = child.stdout.take()
            {
                tail.follow(stream, keep);
            }
            tail
        });
        tracing::debug!(pid = child.id(), program = %program.to_string_lossy(), "sandboxed child spawned");
        Ok(SandboxedChild::new(child, identity, tail, replies, workdir))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::policy::Policy;

    #[test]
    fn long_lived_child_talks_over_pipes_and_kill_takes_its_whole_group() {
        use std::io::{BufRead, BufReader, Write};
        let sandbox = Sandbox::new(Policy::for_gpu_worker());
        // The shell starts a background sleeper, reports both pids, then echoes lines like a worker protocol.
        let mut child = sandbox
            .spawn(
                "/bin/sh",
                &[
                    "-c",
                    "sleep 100 & echo $$ $!; while read line; do echo \"got $line\"; done",
                ],
            )
            .unwrap();
        let mut stdout = BufReader::new(child.take_stdout().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let pids: Vec<i32> = line
            .split_whitespace()
            .map(|p| p.parse().unwrap())
            .collect();
        assert_eq!(pids[0] as u32, child.pid());
        writeln!(child.stdin().unwrap(), "ping").unwrap();
        child.stdin().unwrap().flush().unwrap();
        line.clear();
        stdout.read_line(&mut line).unwrap();
        assert_eq!(line, "got ping\n");
        assert_eq!(child.try_wait().unwrap(), None);
        let status = child.kill().unwrap();
        assert!(!status.success());
        let gone = |pid: i32| {
            !Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z "))
        };
        let deadline = Instant::now() + Duration::from_secs(2);
        while !gone(pids[1]) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            gone(pids[1]),
            "the background sleeper must die with its group"
        );
    }

    #[test]
    fn dropping_a_child_kills_it_and_wait_timeout_reports_a_running_child() {
        let sandbox = Sandbox::new(Policy::for_gpu_worker());
        let mut child = sandbox.spawn("/bin/sleep", &["100"]).unwrap();
        let pid = child.pid();
        assert_eq!(child.wait_timeout(Duration::from_millis(50)).unwrap(), None);
        drop(child);
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "dropped child {pid} must be killed and reaped"
        );
    }

    #[test]
    fn reply_pipe_on_fd_3_carries_the_protocol_while_stdout_goes_to_the_tail() {
        use std::io::Read;
        let sandbox = Sandbox::new(Policy::for_gpu_worker());
        let options = SpawnOptions {
            reply_fd: Some(3),
            stdout_to_tail: true,
        };
        let script =
            "echo kernel-printf-noise; echo cuda-warning >&2; echo reply >&3; exec 3>&-; read _";
        let mut child = sandbox
            .spawn_with("/bin/sh", &["-c", script], &options)
            .unwrap();
        let mut replies = child.take_replies().unwrap();
        let mut text = String::new();
        replies.read_to_string(&mut text).unwrap();
        assert_eq!(
            text, "reply\n",
            "end-of-file once the child closed fd 3: the parent holds no write end"
        );
        assert!(child.stdout().is_none(), "stdout is folded into the tail");
        let deadline = Instant::now() + Duration::from_secs(2);
        let tail = loop {
            let tail = String::from_utf8_lossy(&child.stderr_tail()).into_owned();
            if (tail.contains("kernel-printf-noise") && tail.contains("cuda-warning"))
                || Instant::now() > deadline
            {
                break tail;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(
            tail.contains("kernel-printf-noise") && tail.contains("cuda-warning"),
            "{tail:?}"
        );
        child.kill().unwrap();
    }
}
