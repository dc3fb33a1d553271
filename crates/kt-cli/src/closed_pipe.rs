//! A closed pipe on stdout (`kt runs show RUN --json | head -c1`) ends kt quietly with status 141, as SIGPIPE
//! ends other command-line tools. Rust ignores SIGPIPE, so `println!` into a closed pipe panics instead; kt
//! keeps SIGPIPE ignored, because its own pipes to child processes (the tuner's worker, generators) must
//! report a dead reader as an error, not end kt. The panic hook asks the kernel whether stdout's reader is
//! gone (a pipe without readers polls as POLLERR) and, if so, exits without a word.

/// The status a shell reports for a process ended by SIGPIPE (128 + 13).
pub(crate) const EXIT_CLOSED_PIPE: i32 = 141;

/// Installs the hook; any other panic is reported as before.
pub(crate) fn exit_quietly_when_stdout_is_closed() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if reader_gone(libc::STDOUT_FILENO) {
            std::process::exit(EXIT_CLOSED_PIPE);
        }
        report(info)
    }));
}

/// Whether `fd` is a pipe whose reading end is closed.
fn reader_gone(fd: libc::c_int) -> bool {
    let mut fd = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: polls one descriptor we own a valid pollfd for, without waiting.
    let ready = unsafe { libc::poll(&mut fd, 1, 0) };
    ready > 0 && fd.revents & libc::POLLERR != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipe_without_readers_polls_as_an_error_and_an_open_one_does_not() {
        let mut fds = [0; 2];
        // SAFETY: pipe() fills two descriptors, closed below.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        assert!(!reader_gone(fds[1]));
        // SAFETY: closes the read end we opened.
        unsafe { libc::close(fds[0]) };
        assert!(reader_gone(fds[1]));
        // SAFETY: closes the write end we opened.
        unsafe { libc::close(fds[1]) };
    }
}
