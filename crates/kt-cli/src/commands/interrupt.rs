//! How kt ends on a signal. SIGINT (Ctrl-C), SIGTERM (what `timeout`, SLURM and `kill` send) and SIGHUP (a closed
//! terminal) all do the same: every sandboxed program (generators, the GPU worker) is killed at once, the run is
//! cancelled at its last checkpoint and recorded as `interrupted` (resumable), and kt exits with 128 + the
//! signal's number (130, 143, 129), as shells report it. A second signal exits at once.

use std::sync::atomic::{AtomicI32, Ordering};

use kt_graph::CancelToken;
use tokio::signal::unix::{SignalKind, signal};

/// The first signal received (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The signals that stop a run.
const STOPPING: [(i32, &str); 3] = [
    (libc::SIGINT, "SIGINT"),
    (libc::SIGTERM, "SIGTERM"),
    (libc::SIGHUP, "SIGHUP"),
];

/// Starts listening for the stopping signals on `rt`; the token is cancelled at the first.
pub(crate) fn cancel_on_signals(rt: &tokio::runtime::Runtime) -> std::io::Result<CancelToken> {
    let cancel = CancelToken::new();
    for (number, name) in STOPPING {
        // Registered here (inside the runtime), so a signal arriving from now on is never the default action.
        let mut stream = {
            let _guard = rt.enter();
            signal(SignalKind::from_raw(number))?
        };
        let cancel = cancel.clone();
        rt.spawn(async move {
            while stream.recv().await.is_some() {
                if RECEIVED
                    .compare_exchange(0, number, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
                {
                    eprintln!(
                        "\n{name}: stopping the run's programs and saving it at its last checkpoint (again to exit at once)"
                    );
                    cancel.cancel();
                    kt_sandbox::stop_all();
                } else {
                    kt_sandbox::stop_all();
                    std::process::exit(exit_code_for(RECEIVED.load(Ordering::SeqCst)));
                }
            }
        });
    }
    Ok(cancel)
}

/// The exit code of a run a signal stopped: 128 + its number; 130 (Ctrl-C) when the run was cancelled otherwise.
pub(crate) fn exit_code() -> u8 {
    exit_code_for(RECEIVED.load(Ordering::SeqCst)) as u8
}

fn exit_code_for(signal: i32) -> i32 {
    128 + if signal == 0 { libc::SIGINT } else { signal }
}

/// After a signal: what the killed programs left (their work directories) once their threads let go.
pub(crate) fn clean_up_after_signal() {
    if RECEIVED.load(Ordering::SeqCst) == 0 {
        return;
    }
    kt_sandbox::stop_all();
    // The threads that ran them remove their directories as they unwind; give them a moment, then remove what
    // is left of this process's.
    std::thread::sleep(std::time::Duration::from_millis(200));
    kt_sandbox::remove_own_workdirs();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_128_plus_the_signal() {
        assert_eq!(exit_code_for(0), 130);
        assert_eq!(exit_code_for(libc::SIGTERM), 143);
        assert_eq!(exit_code_for(libc::SIGHUP), 129);
    }
}
