//! Protocol and watchdog tests against a fake worker: this test binary re-executes itself with only
//! `fake_worker_entry` selected and `KT_TUNER_FAKE_WORKER` set, so no GPU is needed.

use std::time::{Duration, Instant};

use super::client::{WorkerClient, WorkerFailure};
use super::process::WorkerCommand;
use super::protocol::{LaunchArg, Reply, Request, RunRequest};
use super::{FAKE_ENV, serve};
use crate::geometry::LaunchDims;

#[test]
fn fake_worker_entry() {
    if std::env::var(FAKE_ENV).is_ok() && std::env::var(super::process::PROTOCOL_ENV).is_ok() {
        let _ = serve();
        std::process::exit(0);
    }
}

fn fake(mode: &str) -> WorkerClient {
    let cmd = WorkerCommand {
        program: std::env::current_exe().unwrap(),
        args: vec![
            "--exact".into(),
            "worker::tests::fake_worker_entry".into(),
            "--nocapture".into(),
            "--test-threads=1".into(),
        ],
        env: vec![(FAKE_ENV.into(), mode.into())],
    };
    WorkerClient::start(&cmd).unwrap()
}

fn run_request(block: u32) -> Request {
    Request::Run {
        run: RunRequest {
            module: "m".into(),
            test: "t".into(),
            args: vec![
                LaunchArg::Array("x".into()),
                LaunchArg::Scalar(vec![1, 0, 0, 0]),
            ],
            dims: LaunchDims {
                grid: [1, 1, 1],
                block: [block, 1, 1],
                shared_mem: 0,
            },
            verify: true,
            timing: None,
            best_ms: None,
        },
    }
}

#[test]
fn healthy_worker_answers_in_order_even_though_libtest_prints_to_stdout() {
    let mut w = fake("ok");
    let (hello, _) = w
        .request(&Request::Hello { ordinal: 0 }, &[], Duration::from_secs(10))
        .unwrap();
    assert!(matches!(hello, Reply::Hello(d) if d.name == "fake"));
    let (ran, _) = w
        .request(&run_request(128), &[], Duration::from_secs(10))
        .unwrap();
    match ran {
        Reply::Ran(o) => assert_eq!(o.timing.unwrap().median_ms, 2.0),
        other => panic!("{other:?}"),
    }
    w.shutdown();
}

#[test]
fn hung_kernel_is_killed_by_the_watchdog_and_a_fresh_worker_continues() {
    let mut w = fake("hang");
    w.request(&Request::Hello { ordinal: 0 }, &[], Duration::from_secs(10))
        .unwrap();
    let t = Instant::now();
    let err = w
        .request(&run_request(64), &[], Duration::from_millis(300))
        .unwrap_err();
    assert!(matches!(err, WorkerFailure::Timeout { .. }), "{err}");
    assert!(t.elapsed() < Duration::from_secs(5));
    assert!(w.is_dead());
    // the replacement serves normally
    let mut fresh = fake("ok");
    assert!(
        fresh
            .request(&run_request(64), &[], Duration::from_secs(10))
            .is_ok()
    );
}

#[test]
fn worker_that_dies_is_reported_with_its_exit_status() {
    let mut w = fake("die");
    w.request(&Request::Hello { ordinal: 0 }, &[], Duration::from_secs(10))
        .unwrap();
    let err = w
        .request(&run_request(64), &[], Duration::from_secs(10))
        .unwrap_err();
    match err {
        WorkerFailure::Died { detail } => assert!(detail.contains("exit status: 3"), "{detail}"),
        other => panic!("{other}"),
    }
}

#[test]
fn garbled_reply_is_detected_and_the_worker_killed() {
    let mut w = fake("garbage");
    w.request(&Request::Hello { ordinal: 0 }, &[], Duration::from_secs(10))
        .unwrap();
    let err = w
        .request(&run_request(64), &[], Duration::from_secs(10))
        .unwrap_err();
    assert!(matches!(err, WorkerFailure::Garbage { .. }), "{err}");
    assert!(w.is_dead());
}

#[test]
fn serve_refuses_to_run_without_the_protocol_pipe() {
    if std::env::var(super::process::PROTOCOL_ENV).is_ok() {
        return;
    }
    let err = serve().unwrap_err();
    assert!(err.to_string().contains("fd 3"), "{err}");
}
