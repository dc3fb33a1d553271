//! `kt_sandbox::stop_all` stops a program that another thread is running (alone in this test binary: it stops
//! every program of the process).

use std::time::{Duration, Instant};

use kt_sandbox::{Policy, Sandbox};

#[test]
fn stop_all_ends_a_running_program_at_once_and_its_work_directory_goes() {
    let mut policy = Policy::for_generator().allow_unsandboxed(true);
    policy.wall_timeout = Some(Duration::from_secs(60));
    let sandbox = Sandbox::new(policy);
    let workdir = sandbox.workdir().expect("a work directory");
    let path = workdir.path().to_path_buf();
    let runner = std::thread::spawn(move || {
        let outcome = sandbox.run_in(&workdir, "/bin/sleep", &["60"], None);
        drop(workdir);
        outcome
    });
    let start = Instant::now();
    while kt_sandbox::stop_all() == 0 && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let outcome = runner
        .join()
        .expect("the runner thread")
        .expect("an outcome");
    assert!(start.elapsed() < Duration::from_secs(10), "{outcome:?}");
    assert!(!outcome.success(), "{outcome:?}");
    assert!(!path.exists(), "{} was left behind", path.display());
}
