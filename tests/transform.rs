//! End-to-end tests of `kt transform`, `kt resume` and `kt graph export` through the real binary, with no GPU
//! and no LLM service: scripted answers (the demo's), real generator programs in the sandbox (python3 + numpy,
//! scripts/test.sh provisions it). Without a GPU the run must get as far as Stage 3's first GPU step, stop
//! with a clear message and leave a resumable run.

#![allow(clippy::unwrap_used)]

mod support;
use support::{gpu_enabled, kt, kt_command, only_entry, output, read_json, require_no_gpu, text};

#[test]
fn transform_without_a_gpu_stops_at_stage_3_with_a_clear_message_and_a_resumable_run() {
    require_no_gpu();
    let home = tempfile::tempdir().unwrap();
    let out_dir = home.path().join("runs");
    let out = kt(
        home.path(),
        &[
            "transform",
            "naive-kernels/matmul.cu",
            "--strategy",
            "autonomous",
            "--replan",
            "3",
            "--tests",
            "1",
            "--llm",
            "scripted:experiments/cassettes/matmul-autonomous.toml",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "stdout: {}\nstderr: {stderr}",
        text(&out.stdout)
    );
    assert!(stderr.contains("a CUDA GPU is needed"), "{stderr}");
    assert!(stderr.contains("kt resume"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    let run = &only_entry(&out_dir);
    for file in [
        "run.json",
        "run.sqlite",
        "input.cu",
        "kernel_info.json",
        "llm.jsonl",
        "result.json",
        "report.md",
    ] {
        assert!(
            run.join(file).is_file(),
            "{file} missing in {}",
            run.display()
        );
    }
    // Tests are made where they are used: without a GPU the run keeps Stage 1 and makes no test data.
    assert!(!run.join("tests").exists());
    let meta = read_json(&run.join("run.json"));
    assert_eq!(meta["status"], "interrupted");
    assert_eq!(meta["strategy"], "autonomous");
    assert_eq!(meta["settings"]["replan"], 3);
    // The sandbox the generators ran under, and where the kernel's own headers are looked up (its directory).
    assert_eq!(meta["sandbox"]["rlimits"], true, "{meta}");
    assert!(
        meta["settings"]["include_dirs"][0]
            .as_str()
            .unwrap()
            .ends_with("naive-kernels"),
        "{meta}"
    );
    assert!(
        !run.join("unit.cu").exists(),
        "a file that is only the kernel is worked on as it is"
    );
    let result = read_json(&run.join("result.json"));
    assert_eq!(result["schema_version"], 2);
    assert_eq!(result["status"], "interrupted");
    assert!(
        result["error"].as_str().unwrap().contains("GPU"),
        "{result}"
    );
    // No Stage 3 LLM call was made before the GPU was needed (the baseline comes first).
    let llm = std::fs::read_to_string(run.join("llm.jsonl")).unwrap();
    assert!(
        llm.contains("stage1.describe") && !llm.contains("stage3."),
        "{llm}"
    );

    // Resuming on the same machine stops at the same point, with the same message.
    let again = kt(
        home.path(),
        &[
            "resume",
            run.to_str().unwrap(),
            "--llm",
            "scripted:experiments/cassettes/matmul-autonomous.toml",
        ],
    );
    assert_eq!(again.status.code(), Some(2), "{}", text(&again.stderr));
    assert!(text(&again.stderr).contains("a CUDA GPU is needed"));
}

#[test]
fn transform_without_an_llm_says_how_to_configure_one() {
    let home = tempfile::tempdir().unwrap();
    let out = kt(
        home.path(),
        &[
            "transform",
            "naive-kernels/matmul.cu",
            "--out",
            home.path().to_str().unwrap(),
        ],
    );
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("--llm PROVIDER:MODEL") && stderr.contains("kt.toml"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn transform_with_an_unknown_strategy_lists_the_known_ones() {
    let home = tempfile::tempdir().unwrap();
    let out = kt(
        home.path(),
        &[
            "transform",
            "naive-kernels/matmul.cu",
            "--strategy",
            "greedy",
        ],
    );
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("greedy") && stderr.contains("autonomous") && stderr.contains("explicit"),
        "{stderr}"
    );
}

#[test]
fn graph_export_prints_the_autonomous_graph_as_mermaid_and_dot() {
    let home = tempfile::tempdir().unwrap();
    let out = kt(
        home.path(),
        &["graph", "export", "autonomous", "--format", "mermaid"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mermaid = text(&out.stdout);
    assert!(mermaid.starts_with("flowchart"));
    for node in [
        "plan",
        "validate",
        "breakdown",
        "apply",
        "select",
        "replan",
        "finish",
    ] {
        assert!(
            mermaid.contains(&format!("[\"{node}\"]")),
            "{node} missing:\n{mermaid}"
        );
    }
    let out = kt(
        home.path(),
        &["graph", "export", "explicit", "--format", "dot"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("digraph"));
}

/// The demo on a real GPU (KT_GPU=1): the replayed autonomous run must finish with a verified kernel that is
/// faster than the naive one. Prints result.json for the record.
#[test]
#[ignore = "needs a GPU; experiments/gpu-check.sh runs it (KT_GPU=1, --include-ignored)"]
fn demo_replay_on_a_gpu_finishes_with_a_faster_verified_kernel() {
    let home = tempfile::tempdir().unwrap();
    let out_dir = home.path().join("runs");
    let out = kt(
        home.path(),
        &[
            "transform",
            "naive-kernels/matmul.cu",
            "--strategy",
            "autonomous",
            "--replan",
            "3",
            "--llm",
            "replay:experiments/cassettes/matmul-autonomous.jsonl",
            "--out",
            out_dir.to_str().unwrap(),
            "--json",
        ],
    );
    let stdout = text(&out.stdout);
    println!("{stdout}");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(result["status"], "finished");
    assert_eq!(result["correct"], true);
    assert_eq!(result["outcome"], "improved");
    assert_eq!(result["schema_version"], 2);
    let speedup = result["speedup"].as_f64().unwrap();
    assert!(speedup > 1.0, "{result}");
    let gain = result["gain"].as_f64().unwrap();
    assert!((gain - (1.0 - 1.0 / speedup)).abs() < 1e-9, "{result}");
    // The interval comes from at least 5 separate launches of each kernel, and lies above 1.
    let timing = &result["final_timing"];
    assert!(
        timing["naive_ms"].as_array().unwrap().len() >= 5,
        "{result}"
    );
    assert!(timing["best_ms"].as_array().unwrap().len() >= 5, "{result}");
    let ci = result["speedup_ci95"].as_array().unwrap();
    assert!(ci[0].as_f64().unwrap() > 1.0, "{result}");
    let run = only_entry(&out_dir);
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        report.contains("95% interval") && report.contains("the thesis's measure"),
        "{report}"
    );
}

#[test]
fn the_seed_from_kt_seed_is_recorded_and_seeds_the_tests() {
    require_no_gpu();
    let home = tempfile::tempdir().unwrap();
    let out_dir = home.path().join("runs");
    let out = output(kt_command(home.path()).env("KT_SEED", "41").args([
        "transform",
        "naive-kernels/matmul.cu",
        "--tests",
        "1",
        "--llm",
        "scripted:experiments/cassettes/matmul-autonomous.toml",
        "--out",
        out_dir.to_str().unwrap(),
    ]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let run = only_entry(&out_dir);
    assert_eq!(read_json(&run.join("run.json"))["settings"]["seed"], 41);
    assert_eq!(read_json(&run.join("result.json"))["settings"]["seed"], 41);
    // Without a GPU the tests are not made here: they are made where they are used, by `kt resume` on a GPU
    // machine, whose Stage 2 starts from the seed recorded above.
    assert!(!run.join("tests").exists());

    // `--seed` wins over KT_SEED.
    let out_dir = home.path().join("runs-flag");
    output(kt_command(home.path()).env("KT_SEED", "41").args([
        "transform",
        "naive-kernels/matmul.cu",
        "--tests",
        "1",
        "--seed",
        "5",
        "--llm",
        "scripted:experiments/cassettes/matmul-autonomous.toml",
        "--out",
        out_dir.to_str().unwrap(),
    ]));
    assert_eq!(
        read_json(&only_entry(&out_dir).join("run.json"))["settings"]["seed"],
        5
    );
}

/// An OpenAI-style server on 127.0.0.1 that accepts connections, reads each request and never answers, for
/// at most 60 s. Sends on `accepted` each time a request has come in.
fn hanging_llm_server(accepted: std::sync::mpsc::Sender<()>) -> u16 {
    llm_server(None, Some(accepted))
}

/// A server on 127.0.0.1 for at most 60 s that reads each request and then sends `reply` (raw HTTP), or holds
/// the connection open unanswered when there is none.
fn llm_server(reply: Option<String>, accepted: Option<std::sync::mpsc::Sender<()>>) -> u16 {
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let until = Instant::now() + Duration::from_secs(60);
        // Held open, unanswered, until the thread ends.
        let mut held = Vec::new();
        while Instant::now() < until {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    stream.set_nonblocking(false).unwrap();
                    stream
                        .set_read_timeout(Some(Duration::from_millis(500)))
                        .unwrap();
                    let mut buf = [0u8; 65536];
                    let _ = stream.read(&mut buf);
                    if let Some(tx) = &accepted {
                        let _ = tx.send(());
                    }
                    match &reply {
                        Some(r) => {
                            let _ = stream.write_all(r.as_bytes());
                        }
                        None => held.push(stream),
                    }
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    });
    port
}

#[test]
fn ctrl_c_during_a_hanging_llm_call_exits_at_once_with_a_resumable_interrupted_run() {
    let home = tempfile::tempdir().unwrap();
    let out_dir = home.path().join("runs");
    let child = transform_waiting_on_the_llm_with(home.path(), &out_dir, &["--seed", "3"]);
    let (status, stderr, took) = stop_with(child, libc::SIGINT);
    assert!(
        took < std::time::Duration::from_secs(3),
        "exited {took:?} after SIGINT\n{stderr}"
    );
    assert_eq!(status.code(), Some(130), "{stderr}");
    let run = only_entry(&out_dir);
    assert!(
        stderr.contains(&format!("`kt resume {}` continues", run.display())),
        "{stderr}"
    );
    assert_eq!(read_json(&run.join("run.json"))["status"], "interrupted");
    let result = read_json(&run.join("result.json"));
    assert_eq!(result["status"], "interrupted");
    assert!(!run.join("kernel_info.json").exists());

    // `kt resume` takes it from there: Stage 1 and 2 with scripted answers, then Stage 3 as far as this
    // machine allows (its first GPU step without a GPU).
    let again = kt(
        home.path(),
        &[
            "resume",
            run.to_str().unwrap(),
            "--llm",
            "scripted:experiments/cassettes/matmul-autonomous.toml",
        ],
    );
    let stderr = text(&again.stderr);
    assert!(run.join("kernel_info.json").is_file(), "{stderr}");
    let meta = read_json(&run.join("run.json"));
    if gpu_enabled() {
        assert!(again.status.success(), "{stderr}");
        assert_eq!(meta["status"], "finished");
    } else {
        assert_eq!(again.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("a CUDA GPU is needed"), "{stderr}");
        assert!(
            !run.join("tests").exists(),
            "without a GPU, Stage 2 makes no test data (tests are made where they are used)"
        );
    }
}

#[test]
fn a_manual_run_stops_at_each_prompt_and_resume_with_answer_reaches_the_first_gpu_step() {
    require_no_gpu();
    let home = tempfile::tempdir().unwrap();
    let out_dir = home.path().join("runs");
    let (out, manual) = support::start_manual_vector_add(home.path());
    let run = only_entry(&out_dir);
    // stopped before any kernel: no best.cu is named, none exists
    assert!(
        !text(&out.stdout).contains("best.cu") && !run.join("best.cu").exists(),
        "{}",
        text(&out.stdout)
    );
    let mut last = out;
    let mut answered = Vec::new();
    for _ in 0..12 {
        let stderr = text(&last.stderr);
        if last.status.code() != Some(3) {
            break;
        }
        let result = read_json(&run.join("result.json"));
        let waiting = &result["waiting_for"];
        let prompt = waiting["prompt_file"].as_str().unwrap();
        assert!(stderr.contains(prompt), "the prompt is named: {stderr}");
        assert!(std::path::Path::new(prompt).is_file(), "{prompt}");
        let show = kt(
            home.path(),
            &[
                "runs",
                "show",
                run.to_str().unwrap(),
                "--runs-dir",
                out_dir.to_str().unwrap(),
            ],
        );
        assert!(
            text(&show.stdout).contains(prompt),
            "kt runs show names the prompt: {}",
            text(&show.stdout)
        );
        let node = waiting["node"].as_str().unwrap().to_string();
        if answered.len() == 1 {
            // the answer to the first prompt, given again, is not taken for the second
            let again = kt(
                home.path(),
                &[
                    "resume",
                    run.to_str().unwrap(),
                    "--answer",
                    home.path().join("answer-0.md").to_str().unwrap(),
                ],
            );
            let err = text(&again.stderr);
            assert!(
                !again.status.success() && err.contains("--answer-for 002-stage1.dimensions"),
                "{err}"
            );
            let wrong = kt(
                home.path(),
                &[
                    "resume",
                    run.to_str().unwrap(),
                    "--answer",
                    home.path().join("answer-0.md").to_str().unwrap(),
                    "--answer-for",
                    "001-stage1.describe",
                ],
            );
            assert!(
                text(&wrong.stderr).contains("now waits for `002-stage1.dimensions`"),
                "{}",
                text(&wrong.stderr)
            );
        }
        let answer = home.path().join(format!("answer-{}.md", answered.len()));
        std::fs::write(&answer, support::vector_add_answer(&node)).unwrap();
        answered.push(node);
        last = kt(
            home.path(),
            &[
                "resume",
                run.to_str().unwrap(),
                "--answer",
                answer.to_str().unwrap(),
                "--llm",
                &manual,
            ],
        );
    }
    let stderr = text(&last.stderr);
    assert_eq!(
        last.status.code(),
        Some(2),
        "answered {answered:?}; stderr: {stderr}"
    );
    assert!(stderr.contains("a CUDA GPU is needed"), "{stderr}");
    assert_eq!(
        answered[..4],
        [
            "stage1.describe",
            "stage1.dimensions",
            "stage1.problem_size",
            "stage1.outputs"
        ]
    );
    // Without a GPU, Stage 2's program is asked for here, where the LLM is, and checked in the sandbox; the
    // run then stops with no test data kept: the tests are made on the GPU machine.
    assert_eq!(answered.len(), 5, "{answered:?}");
    assert_eq!(answered[4], "stage2.generator");
    assert!(!run.join("tests").exists());
    // Stopped in Stage 2: the history shows the newest graph the run has; what works on Stage 3 only says
    // the run has not reached it, and names the graph it has
    let history = kt(home.path(), &["debug", "history", run.to_str().unwrap()]);
    assert!(history.status.success(), "{}", text(&history.stderr));
    assert!(
        text(&history.stdout)
            .lines()
            .next()
            .is_some_and(|l| l.contains("stage2")),
        "{}",
        text(&history.stdout)
    );
    let fork = kt(
        home.path(),
        &[
            "fork",
            run.to_str().unwrap(),
            "--at",
            "0",
            "--set",
            "replans_used=1",
        ],
    );
    let err = text(&fork.stderr);
    assert!(
        !fork.status.success()
            && err.contains("has not reached `stage3`")
            && err.contains("--graph stage2")
            && !err.contains("Migration"),
        "{err}"
    );
}

/// An OpenAI-style server that answers every request with 503 (and `Retry-After: 0`, so the client's
/// retries take no time).
fn unavailable_llm_server() -> u16 {
    let body = r#"{"error": {"message": "overloaded"}}"#;
    llm_server(
        Some(format!(
            "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )),
        None,
    )
}

#[test]
fn an_llm_outage_ends_the_run_llm_unavailable_with_exit_75_and_a_resumable_run() {
    let home = tempfile::tempdir().unwrap();
    let out_dir = home.path().join("runs");
    let port = unavailable_llm_server();
    let out = output(
        kt_command(home.path())
            .args([
                "transform",
                "naive-kernels/matmul.cu",
                "--tests",
                "1",
                "--out",
                out_dir.to_str().unwrap(),
            ])
            .env("KT_LLM", "openai:gpt-4.1")
            .env("KT_LLM_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
            .env("OPENAI_API_KEY", "test-key"),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(75), "stderr: {stderr}");
    assert!(stderr.contains("kt resume"), "{stderr}");
    let run = only_entry(&out_dir);
    assert_eq!(
        read_json(&run.join("run.json"))["status"],
        "llm_unavailable"
    );
    let result = read_json(&run.join("result.json"));
    assert_eq!(result["status"], "llm_unavailable");
    assert!(result["outcome"].is_null(), "{result}");

    // The service is back (here: the demo's answers): the run continues from its checkpoint, to the first GPU
    // step on a machine without a GPU, to its end with one (KT_GPU=1).
    let resumed = kt(
        home.path(),
        &[
            "resume",
            run.to_str().unwrap(),
            "--llm",
            "scripted:experiments/cassettes/matmul-autonomous.toml",
        ],
    );
    let stderr = text(&resumed.stderr);
    assert!(run.join("kernel_info.json").is_file());
    // Without a GPU, Stage 2 makes no test data here (tests are made where they are used).
    assert_eq!(run.join("tests").is_dir(), gpu_enabled());
    if gpu_enabled() {
        // With a GPU the resumed run finishes.
        assert!(resumed.status.success(), "stderr: {stderr}");
        assert_eq!(read_json(&run.join("result.json"))["status"], "finished");
    } else {
        assert_eq!(resumed.status.code(), Some(2), "stderr: {stderr}");
        assert!(stderr.contains("a CUDA GPU is needed"), "{stderr}");
    }
}

/// Starts `kt transform` against a server that never answers and waits until its first LLM call is in flight.
fn transform_waiting_on_the_llm(
    home: &std::path::Path,
    out_dir: &std::path::Path,
) -> std::process::Child {
    transform_waiting_on_the_llm_with(home, out_dir, &[])
}

/// As [`transform_waiting_on_the_llm`], with `extra` arguments.
fn transform_waiting_on_the_llm_with(
    home: &std::path::Path,
    out_dir: &std::path::Path,
    extra: &[&str],
) -> std::process::Child {
    let (tx, rx) = std::sync::mpsc::channel();
    let port = hanging_llm_server(tx);
    let child = kt_command(home)
        .args([
            "transform",
            "naive-kernels/matmul.cu",
            "--tests",
            "1",
            "--out",
            out_dir.to_str().unwrap(),
        ])
        .args(extra)
        .env("KT_LLM", "openai:gpt-4.1")
        .env("KT_LLM_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
        .env("OPENAI_API_KEY", "test-key")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Its first question is in flight (and will never be answered) once the server has it.
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .expect("kt transform never called the LLM");
    std::thread::sleep(std::time::Duration::from_millis(200));
    child
}

/// Sends `signal` and waits (at most 10 s) for the exit: its status, stderr and how long it took.
fn stop_with(
    mut child: std::process::Child,
    signal: libc::c_int,
) -> (std::process::ExitStatus, String, std::time::Duration) {
    // SAFETY: sends a signal to the child we spawned; no memory is involved.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
    let sent = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if sent.elapsed() > std::time::Duration::from_secs(10) {
            child.kill().unwrap();
            panic!("kt still running 10 s after signal {signal}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let took = sent.elapsed();
    let out = child.wait_with_output().unwrap();
    (out.status, text(&out.stderr), took)
}

#[test]
fn sigterm_and_sighup_end_a_run_as_ctrl_c_does_with_their_own_exit_codes() {
    for (signal, code) in [(libc::SIGTERM, 143), (libc::SIGHUP, 129)] {
        let home = tempfile::tempdir().unwrap();
        let out_dir = home.path().join("runs");
        let child = transform_waiting_on_the_llm(home.path(), &out_dir);
        let (status, stderr, _) = stop_with(child, signal);
        assert_eq!(status.code(), Some(code), "signal {signal}: {stderr}");
        let run = only_entry(&out_dir);
        assert_eq!(
            read_json(&run.join("run.json"))["status"],
            "interrupted",
            "{stderr}"
        );
        assert_eq!(
            read_json(&run.join("result.json"))["status"],
            "interrupted",
            "{stderr}"
        );
        let leftovers: Vec<_> = std::fs::read_dir(&run)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("tmp-write") || n.starts_with(".kt-write-"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}

#[test]
fn a_second_resume_of_a_run_in_progress_is_refused_and_names_the_holder() {
    let home = tempfile::tempdir().unwrap();
    let out_dir = home.path().join("runs");
    let first = transform_waiting_on_the_llm(home.path(), &out_dir);
    let run = only_entry(&out_dir);
    let second = kt(
        home.path(),
        &[
            "resume",
            run.to_str().unwrap(),
            "--llm",
            "scripted:experiments/cassettes/matmul-autonomous.toml",
        ],
    );
    let stderr = text(&second.stderr);
    assert!(!second.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("pid {}", first.id())) && stderr.contains("--wait"),
        "{stderr}"
    );
    assert!(!stderr.contains("UNIQUE constraint"), "{stderr}");
    let (status, stderr, _) = stop_with(first, libc::SIGINT);
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert_eq!(read_json(&run.join("run.json"))["status"], "interrupted");
}

#[test]
fn a_run_made_with_a_strategy_file_resumes_after_that_file_is_deleted() {
    require_no_gpu();
    let home = tempfile::tempdir().unwrap();
    let out_dir = home.path().join("runs");
    let strategy = home.path().join("my-strategy.toml");
    std::fs::copy("strategies/autonomous.toml", &strategy).unwrap();
    let llm = "scripted:experiments/cassettes/matmul-autonomous.toml";
    let out = kt(
        home.path(),
        &[
            "transform",
            "naive-kernels/matmul.cu",
            "--strategy",
            strategy.to_str().unwrap(),
            "--tests",
            "1",
            "--llm",
            llm,
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let run = &only_entry(&out_dir);
    assert_eq!(
        std::fs::read_to_string(run.join("strategy.toml")).unwrap(),
        std::fs::read_to_string(&strategy).unwrap(),
        "the run keeps the strategy it was made with"
    );
    let meta = read_json(&run.join("run.json"));
    assert!(meta["prompt_hashes"]["stage3-plan"].is_string(), "{meta}");

    std::fs::remove_file(&strategy).unwrap();
    let again = kt(
        home.path(),
        &["resume", run.to_str().unwrap(), "--llm", llm],
    );
    let stderr = text(&again.stderr);
    assert_eq!(again.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("a CUDA GPU is needed"), "{stderr}");
    assert!(!stderr.contains("reading strategy"), "{stderr}");
}
