//! Protocol and watchdog tests against a fake worker: this test binary re-executes itself with only
//! `fake_worker_entry` selected and `KT_TUNER_FAKE_WORKER` set, so no GPU is needed.

use std::time::{Duration, Instant};

use super::client::{WorkerClient, WorkerFailure};
use super::process::WorkerCommand;
use super::protocol::{LaunchArg, Reply, Request, RunRequest};
use super::{FAKE_ENV, serve};
use crate::model::geometry::LaunchDims;

#[test]
fn fake_worker_entry() {
    if std::env::var(FAKE_ENV).is_ok() && std::env::var(super::process::PROTOCOL_ENV).is_ok() {
        let _ = serve();
        std::process::exit(0);
    }
}

/// A fake worker with test `t` uploaded (as the real one, it refuses launches on tests it never got).
fn fake(mode: &str) -> WorkerClient {
    let mut w = fake_bare(mode);
    let t = crate::model::args::KernelTest {
        id: "t".into(),
        args: vec![],
        tolerances: Default::default(),
        constants: Vec::new(),
    };
    let (reply, _) = w
        .request(&Request::Upload { test: t }, &[], Duration::from_secs(10))
        .unwrap();
    assert!(matches!(reply, Reply::Done { .. }), "{reply:?}");
    w
}

fn fake_bare(mode: &str) -> WorkerClient {
    let cmd = WorkerCommand {
        program: std::env::current_exe().unwrap(),
        args: vec![
            "--exact".into(),
            "worker::tests::fake_worker_entry".into(),
            "--nocapture".into(),
            "--test-threads=1".into(),
        ],
        env: vec![(FAKE_ENV.into(), mode.into())],
        under_profiler: false,
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
            best: None,
            extents: vec![],
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
fn a_launch_on_a_test_never_uploaded_is_refused_as_the_real_worker_refuses_it() {
    let mut w = fake_bare("ok");
    let (ran, _) = w
        .request(&run_request(128), &[], Duration::from_secs(10))
        .unwrap();
    assert!(
        matches!(&ran, Reply::Ran(o) if matches!(&o.status, super::protocol::RunStatus::Invalid(r) if r == "test t not uploaded")),
        "{ran:?}"
    );
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

#[test]
fn record_outputs_writes_the_named_files_and_reports_unwritten_elements() {
    use super::protocol::OutputFile;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("C.npy");
    let mut w = fake("ok");
    let Request::Run { run } = run_request(64) else {
        unreachable!()
    };
    let req = Request::RecordOutputs {
        run,
        files: vec![OutputFile {
            name: "C".into(),
            path: path.clone(),
            shape: vec![2, 3],
        }],
        probe: true,
    };
    let (reply, _) = w.request(&req, &[], Duration::from_secs(10)).unwrap();
    let Reply::Ran(o) = reply else {
        panic!("{reply:?}")
    };
    assert_eq!(o.recorded.len(), 1);
    let r = &o.recorded[0];
    assert_eq!((r.name.as_str(), r.shape.as_slice()), ("C", &[2u64, 3][..]));
    assert_eq!(
        r.never_written, 1,
        "the fake leaves its last element unwritten"
    );
    let info = kt_record::tests_format::npy::read_header(&path).unwrap();
    assert_eq!(info.shape, vec![2, 3]);
    let bytes = std::fs::read(&path).unwrap();
    let values: Vec<f32> = bytes[info.data_offset as usize..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    assert_eq!(values, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    w.shutdown();
}

#[test]
fn record_outputs_request_survives_the_frame_round_trip() {
    use super::protocol::{OutputFile, read_frame, write_frame};
    let Request::Run { run } = run_request(32) else {
        unreachable!()
    };
    let req = Request::RecordOutputs {
        run,
        files: vec![OutputFile {
            name: "out".into(),
            path: "/tmp/x/out.npy".into(),
            shape: vec![4],
        }],
        probe: true,
    };
    let mut buf = Vec::new();
    write_frame(&mut buf, &req, &[]).unwrap();
    let (back, _): (Request, _) = read_frame(&mut &buf[..]).unwrap();
    assert_eq!(back, req);
}

fn repeat_request() -> Request {
    let Request::Run { run } = run_request(64) else {
        unreachable!("run_request makes a Run")
    };
    Request::Repeat { run, runs: 2 }
}

#[test]
fn reruns_that_differ_become_a_nondeterministic_verdict() {
    let mut w = fake("nondeterministic");
    let (ran, _) = w
        .request(&repeat_request(), &[], Duration::from_secs(10))
        .unwrap();
    let Reply::Ran(o) = ran else {
        panic!("{ran:?}")
    };
    let verdict = crate::session::judge_reruns("gen1", &o.outputs).unwrap();
    assert_eq!(verdict.short(), "nondeterministic");
    assert!(
        verdict.reason().contains("first at index 7"),
        "{}",
        verdict.reason()
    );
    w.shutdown();

    let mut w = fake("ok");
    let (ran, _) = w
        .request(&repeat_request(), &[], Duration::from_secs(10))
        .unwrap();
    let Reply::Ran(o) = ran else {
        panic!("{ran:?}")
    };
    assert_eq!(crate::session::judge_reruns("gen1", &o.outputs), None);
    w.shutdown();
}

fn verifying_run(timed: bool) -> Request {
    let Request::Run { mut run } = run_request(64) else {
        unreachable!("run_request makes a Run")
    };
    run.verify = true;
    run.timing = timed.then(crate::check::measure::TimingPolicy::default);
    Request::Run { run }
}

fn ran(w: &mut WorkerClient, req: &Request) -> super::protocol::RunOutcome {
    let (reply, _) = w.request(req, &[], Duration::from_secs(10)).unwrap();
    let Reply::Ran(o) = reply else {
        panic!("{reply:?}")
    };
    o
}

#[test]
fn a_write_past_the_end_reaches_the_tuner_as_an_out_of_bounds_verdict() {
    use crate::model::outcome::Verdict;
    let mut w = fake("out-of-bounds");
    let o = ran(&mut w, &verifying_run(false));
    let v = Verdict::from_outcome(&o, Some("gen1")).unwrap();
    assert_eq!(
        v.reason(),
        "out-of-bounds write: test gen1: wrote 4 bytes past the end of `x`"
    );
    w.shutdown();
    let mut w = fake("ok");
    assert_eq!(
        Verdict::from_outcome(&ran(&mut w, &verifying_run(false)), None),
        None
    );
    w.shutdown();
}

#[test]
fn a_kernel_that_works_only_when_watched_fails_on_its_checked_timed_launch() {
    use crate::model::outcome::Verdict;
    let mut w = fake("unwatched");
    // untimed: nothing to catch, and nothing caught
    assert_eq!(
        Verdict::from_outcome(&ran(&mut w, &verifying_run(false)), None),
        None
    );
    let v = Verdict::from_outcome(&ran(&mut w, &verifying_run(true)), Some("gen1")).unwrap();
    assert_eq!(v.short(), "timed launches differ");
    let r = v.reason();
    assert!(
        r.contains("never written") && r.contains("did not do the verified work"),
        "{r}"
    );
    w.shutdown();
}

#[test]
fn a_launch_counter_past_the_timed_samples_is_caught_by_the_check_after_many_launches() {
    use crate::check::measure::TimingPolicy;
    use crate::model::outcome::Verdict;
    let mut w = fake("lazy-late");
    let with = |timing: TimingPolicy| {
        let Request::Run { mut run } = run_request(64) else {
            unreachable!("run_request makes a Run")
        };
        run.timing = Some(timing);
        Request::Run { run }
    };
    // sampled as any kernel: its right last sample is all anyone sees
    let o = ran(&mut w, &with(TimingPolicy::default()));
    assert_eq!(Verdict::from_outcome(&o, Some("gen1")), None);
    // sampled as a kernel with state across launches: the late check finds its output never written
    let o = ran(&mut w, &with(TimingPolicy::default().for_stateful_kernel()));
    let v = Verdict::from_outcome(&o, Some("gen1")).unwrap();
    assert_eq!(v.short(), "timed launches differ");
    let r = v.reason();
    assert!(
        r.contains("test gen1: after 250 more launches in the same module")
            && r.contains("never written"),
        "{r}"
    );
    w.shutdown();
}

#[test]
fn a_kernel_that_skips_written_outputs_is_timed_only_on_launches_that_did_the_work() {
    let mut w = fake("skips-written");
    // every timed sample started from a poisoned output: the 0.1 ms launches that find the previous
    // result and return never reach the median
    let o = ran(&mut w, &verifying_run(true));
    let timing = o.timing.unwrap();
    assert!(timing.samples_ms.iter().all(|&ms| ms == 1.0), "{timing:?}");
    assert_eq!(timing.median_ms, 1.0);
    // and its reference run, which found the output already holding numbers, did no work: refused
    let (reply, _) = w
        .request(
            &Request::Reference {
                run: match run_request(64) {
                    Request::Run { run } => run,
                    _ => unreachable!("run_request makes a Run"),
                },
            },
            &[],
            Duration::from_secs(10),
        )
        .unwrap();
    let Reply::Ran(o) = reply else {
        panic!("{reply:?}")
    };
    assert_eq!(o.unchanged_outputs, vec!["x".to_string()]);
    w.shutdown();
}

#[test]
fn constants_travel_with_the_upload_and_an_unreadable_constant_file_is_refused_by_name() {
    use crate::model::args::{ArraySource, Distribution, KernelTest};
    use crate::model::constants::ConstantArg;
    let dir = tempfile::tempdir().unwrap();
    let filter = dir.path().join("filter.npy");
    std::fs::write(&filter, b"not read by the fake").unwrap();
    let constant = |name: &str, source| ConstantArg {
        name: name.into(),
        dtype: kt_record::DType::Float32,
        elements: Some(9),
        source,
    };
    let mut test = KernelTest {
        id: "t".into(),
        args: vec![],
        tolerances: Default::default(),
        constants: vec![
            constant(
                "d_filter",
                ArraySource::Npy {
                    path: filter,
                    offset: 128,
                },
            ),
            constant(
                "bias",
                ArraySource::Generate {
                    dist: Distribution::Randn,
                    seed: 1,
                },
            ),
        ],
    };
    let mut w = fake_bare("ok");
    let (reply, _) = w
        .request(
            &Request::Upload { test: test.clone() },
            &[],
            Duration::from_secs(10),
        )
        .unwrap();
    assert!(matches!(reply, Reply::Done { .. }), "{reply:?}");
    let (ran, _) = w
        .request(&run_request(64), &[], Duration::from_secs(10))
        .unwrap();
    assert!(matches!(ran, Reply::Ran(_)), "{ran:?}");
    test.constants[0].source = ArraySource::Npy {
        path: dir.path().join("gone.npy"),
        offset: 128,
    };
    let (reply, _) = w
        .request(&Request::Upload { test }, &[], Duration::from_secs(10))
        .unwrap();
    match reply {
        Reply::Error { message, fatal } => {
            assert!(!fatal);
            assert!(
                message.starts_with("constant `d_filter`: ") && message.contains("gone.npy"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
}
