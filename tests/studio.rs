//! End-to-end tests of `kt studio`: the real binary serving a runs directory on a loopback port. Without a
//! browser: what it serves and what it refuses (tokens, read-only, foreign hosts). In headless Chromium
//! (ignored; scripts/test.sh runs them where chromium is installed): the run list, a run's graph, a
//! checkpoint diff and a fork with an edited field checked in the run's store; and a scripted transform
//! watched live, each checkpoint on the page within a second of being written.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kt_pipeline::job::recorded_run::{fixture_backend, record_matmul_run, record_matmul_run_with};
use kt_pipeline::stage3::{
    BackendError, Outcome, PairTimes, ProfileRun, Reference, TunableCode, TuningBackend,
    TuningProgress,
};
use serde_json::{Value, json};

mod support;
use support::kt_command;
#[path = "support/browser.rs"]
mod browser;
use browser::Browser;

/// A `kt studio` serving `home/runs` on a free loopback port; killed when dropped.
struct Studio {
    child: Child,
    url: String,
}

impl Studio {
    fn start(home: &Path, extra: &[&str]) -> Studio {
        let mut child = kt_command(home)
            .args(["studio", "--port", "0", "--runs-dir"])
            .arg(home.join("runs"))
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("kt studio: ")
            .unwrap_or_else(|| panic!("kt studio printed no URL: {line:?}"))
            .to_string();
        Studio { child, url }
    }

    fn addr(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string()
    }

    /// One HTTP/1.1 request; returns the status and the body.
    fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String) {
        let mut stream = TcpStream::connect(self.addr()).unwrap();
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
            self.addr(),
            body.len()
        );
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        req.push_str(body);
        stream.write_all(req.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let status = answer[9..12].parse().unwrap();
        let body = answer
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        (status, body)
    }

    /// The session token embedded in the page.
    fn session_token(&self) -> String {
        let (_, page) = self.request("GET", "/", &[], "");
        let after = page
            .split(r#"name="kt-studio-token" content=""#)
            .nth(1)
            .unwrap();
        after.split('"').next().unwrap().to_string()
    }
}

impl Drop for Studio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn record_run(home: &Path) -> String {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(record_matmul_run(&home.join("runs"))).run_id()
}

fn history(home: &Path, id: &str) -> Value {
    let out = kt_command(home)
        .env("KT_RUNS_DIR", home.join("runs"))
        .args(["debug", "history", id, "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_studio_serves_runs_and_refuses_changes_without_its_session_token() {
    let home = tempfile::tempdir().unwrap();
    let id = record_run(home.path());
    let studio = Studio::start(home.path(), &[]);
    assert!(
        studio.url.starts_with("http://127.0.0.1:"),
        "{}",
        studio.url
    );
    let (status, runs) = studio.request("GET", "/api/runs", &[], "");
    assert_eq!(status, 200);
    let runs: Value = serde_json::from_str(&runs).unwrap();
    assert_eq!(runs["runs"][0]["id"], id.as_str());
    let (status, run) = studio.request("GET", &format!("/api/runs/{id}"), &[], "");
    assert_eq!(status, 200, "{run}");
    let run: Value = serde_json::from_str(&run).unwrap();
    assert!(run["graph_svg"].as_str().unwrap().contains("graph-svg"));

    let fork = json!({"at": "input", "sets": [{"field": "plan", "value": "[]"}]}).to_string();
    let path = format!("/api/runs/{id}/fork");
    let (status, _) = studio.request("POST", &path, &[], &fork);
    assert_eq!(status, 403, "a change without the session token is refused");
    let (status, _) = studio.request("POST", &path, &[("x-kt-studio-token", "guessed")], &fork);
    assert_eq!(status, 403);
    let before = history(home.path(), &id)["checkpoints"]
        .as_array()
        .unwrap()
        .len();
    let token = studio.session_token();
    let (status, body) = studio.request("POST", &path, &[("x-kt-studio-token", &token)], &fork);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        history(home.path(), &id)["checkpoints"]
            .as_array()
            .unwrap()
            .len(),
        before + 1
    );

    let (status, _) = studio.request("GET", "/api/runs/..%2F..%2Fetc", &[], "");
    assert_eq!(status, 400, "a run id is never a path");
    let mut rebound = TcpStream::connect(studio.addr()).unwrap();
    rebound
        .write_all(b"GET /api/runs HTTP/1.1\r\nHost: attacker.example\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    rebound.read_to_string(&mut answer).unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 403"),
        "a foreign Host is refused: {answer}"
    );
}

#[test]
fn read_only_mode_refuses_every_change_and_remote_binding_needs_a_token() {
    let home = tempfile::tempdir().unwrap();
    let id = record_run(home.path());
    let studio = Studio::start(home.path(), &["--read-only"]);
    let token = studio.session_token();
    let bp = json!({"before": ["apply"], "after": []}).to_string();
    let (status, body) = studio.request(
        "POST",
        &format!("/api/runs/{id}/breakpoints"),
        &[("x-kt-studio-token", &token)],
        &bp,
    );
    assert_eq!(status, 405, "{body}");
    assert!(body.contains("--read-only"), "{body}");
    let (status, _) = studio.request("GET", &format!("/api/runs/{id}/history"), &[], "");
    assert_eq!(status, 200, "reading still works");

    let refused = kt_command(home.path())
        .args(["studio", "--port", "0", "--bind", "0.0.0.0"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("--allow-remote") && err.contains("--token"),
        "{err}"
    );
}

/// The fixture's fake GPU, slowed down so that a run takes a few seconds and its checkpoints come apart.
struct PacedBackend {
    inner: kt_pipeline::stage3::FakeBackend,
    pause: Duration,
}

#[async_trait::async_trait]
impl TuningBackend for PacedBackend {
    async fn reference(&self, original: &TunableCode) -> Result<Reference, BackendError> {
        tokio::time::sleep(self.pause).await;
        self.inner.reference(original).await
    }
    async fn evaluate(
        &self,
        label: &str,
        kernel: &TunableCode,
        progress: &dyn TuningProgress,
    ) -> Result<Outcome, BackendError> {
        tokio::time::sleep(self.pause).await;
        self.inner.evaluate(label, kernel, progress).await
    }
    async fn time_pair(
        &self,
        first: (&TunableCode, &BTreeMap<String, i64>),
        second: (&TunableCode, &BTreeMap<String, i64>),
        launches: u32,
    ) -> Result<PairTimes, BackendError> {
        self.inner.time_pair(first, second, launches).await
    }
    async fn profile(
        &self,
        label: &str,
        kernel: &TunableCode,
        params: &BTreeMap<String, i64>,
    ) -> Result<ProfileRun, BackendError> {
        self.inner.profile(label, kernel, params).await
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Where `KT_STUDIO_SCREENSHOTS` points: screenshots for docs/ are kept there.
fn screenshot_dir() -> Option<PathBuf> {
    std::env::var_os("KT_STUDIO_SCREENSHOTS").map(PathBuf::from)
}

#[test]
#[ignore = "needs chromium; scripts/test.sh runs it where chromium is installed"]
fn studio_in_chromium_lists_runs_draws_the_graph_diffs_checkpoints_and_forks() {
    let home = tempfile::tempdir().unwrap();
    let id = record_run(home.path());
    let studio = Studio::start(home.path(), &[]);
    let mut b = Browser::start(1400, 1000);
    let long = Duration::from_secs(20);
    b.goto(&studio.url);

    // The run list, its search box and status filter.
    b.wait_for(
        "document.querySelectorAll('#runs .run-row').length === 1",
        long,
        "the run list",
    );
    assert_eq!(
        b.eval("document.querySelector('#runs .run-row').dataset.status"),
        "finished"
    );
    b.eval("{ const f = document.querySelector('#run-filter'); f.value = 'no-such-kernel'; f.dispatchEvent(new Event('input')); }");
    assert_eq!(
        b.eval("document.querySelectorAll('#runs .run-row:not([hidden])').length"),
        0
    );
    b.eval("{ const f = document.querySelector('#run-filter'); f.value = 'matrixMul'; f.dispatchEvent(new Event('input')); }");
    assert_eq!(
        b.eval("document.querySelectorAll('#runs .run-row:not([hidden])').length"),
        1
    );

    // A run: its graph with the path taken and route labels.
    b.eval("document.querySelector('#runs .run-row a').click()");
    b.wait_for(
        "document.querySelector('#graph svg')",
        long,
        "the run's graph",
    );
    assert_eq!(
        b.eval("document.querySelector('#run-summary').dataset.status"),
        "finished"
    );
    assert_eq!(
        b.eval("!!document.querySelector('#graph g.node.visited[data-node=\"apply\"]')"),
        true
    );
    assert!(
        b.eval("document.querySelectorAll('#graph path.edge.taken').length")
            .as_u64()
            .unwrap()
            > 3
    );
    // routes are labelled with the outcome the strategy graph declares for them, where the user sees it
    let labels = b.eval(
        "[...document.querySelectorAll('#graph text.edge-label')].filter((t) => t.getBBox().width > 0).map((t) => t.textContent).join('|')",
    );
    let labels = labels.as_str().unwrap();
    assert!(
        labels.split('|').any(|l| l == "planned")
            && labels
                .split('|')
                .any(|l| l == "valid: apply" || l == "valid: break down"),
        "{labels}"
    );
    assert_eq!(
        b.eval("document.querySelectorAll('#llm .llm-row').length"),
        8
    );
    b.eval("document.querySelector('#llm .llm-row').click()");
    b.wait_for(
        "document.querySelector('#llm-detail pre.prompt')",
        long,
        "a prompt and its raw answer",
    );
    if let Some(dir) = screenshot_dir() {
        b.screenshot(&dir.join("studio-run.png"));
    }

    // Time travel: every checkpoint on the timeline, and the diff from the input to the head.
    let h = history(home.path(), &id);
    let checkpoints = h["checkpoints"].as_array().unwrap();
    let (first, last) = (
        checkpoints[0]["checkpoint"].as_u64().unwrap(),
        checkpoints.last().unwrap()["checkpoint"].as_u64().unwrap(),
    );
    b.eval("document.querySelector('#tab-timeline').click()");
    b.wait_for(
        &format!(
            "document.querySelectorAll('#timeline circle.cp').length === {}",
            checkpoints.len()
        ),
        long,
        "every checkpoint on the timeline",
    );
    b.eval(&format!("document.querySelector('#cp-a').value = '{first}'; document.querySelector('#cp-b').value = '{last}'; document.querySelector('#show-diff').click()"));
    b.wait_for(
        "document.querySelectorAll('#diff-view .field-change').length > 0",
        long,
        "the diff",
    );
    assert!(
        b.eval("document.querySelectorAll('#diff-view .side-by-side td.new').length")
            .as_u64()
            .unwrap()
            > 0,
        "code is diffed side by side"
    );
    if let Some(dir) = screenshot_dir() {
        b.screenshot(&dir.join("studio-diff.png"));
    }

    // A fork from the input with an edited field, and the new branch in the run's store.
    b.eval(&format!("document.querySelector('#cp-a').value = '{first}'; document.querySelector('#fork-field').value = 'plan'; document.querySelector('#fork-value').value = '[]'; document.querySelector('#fork-btn').click()"));
    b.wait_for(
        "document.querySelector('#fork-done')",
        long,
        "the fork's answer",
    );
    let forked = b
        .eval("document.querySelector('#fork-done').dataset.checkpoint")
        .as_str()
        .unwrap()
        .parse::<u64>()
        .unwrap();
    let branch = b
        .eval("document.querySelector('#fork-done').dataset.branch")
        .as_str()
        .unwrap()
        .parse::<u64>()
        .unwrap();
    let after = history(home.path(), &id);
    let entry = after["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["checkpoint"] == forked)
        .unwrap_or_else(|| panic!("checkpoint #{forked} is not in the store: {after}"));
    assert_eq!(entry["branch"], branch);
    assert_eq!(entry["source"], "fork");
    assert_eq!(entry["parent"], first);
    assert!(
        after["branches"]
            .as_array()
            .unwrap()
            .iter()
            .any(|br| br["branch"] == branch)
    );
    b.wait_for(
        "document.querySelector('#timeline').dataset.branches === '2'",
        long,
        "the new branch on the timeline",
    );
}

#[test]
#[ignore = "needs chromium; scripts/test.sh runs it where chromium is installed"]
fn studio_in_chromium_shows_a_running_transform_within_a_second_of_each_checkpoint() {
    let home = tempfile::tempdir().unwrap();
    let runs = home.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    let studio = Studio::start(home.path(), &[]);
    let mut b = Browser::start(1400, 1000);
    b.goto(&studio.url);
    b.wait_for(
        "document.querySelector('#runs tbody')",
        Duration::from_secs(20),
        "the empty run list",
    );

    // The transform runs in another thread, as it would in another terminal: scripted answers, a fake GPU
    // slowed to 600 ms per tuning.
    let transform = std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(record_matmul_run_with(
            &runs,
            Arc::new(|_| {
                Arc::new(PacedBackend {
                    inner: fixture_backend(),
                    pause: Duration::from_millis(600),
                }) as Arc<dyn TuningBackend>
            }),
        ))
        .run_id()
    });
    b.wait_for(
        "document.querySelectorAll('#runs .run-row').length === 1",
        Duration::from_secs(20),
        "the new run in the list",
    );
    b.eval("window.__errors = []; window.addEventListener('error', (e) => __errors.push(e.message)); window.addEventListener('unhandledrejection', (e) => __errors.push(String(e.reason)))");
    b.eval("document.querySelector('#runs .run-row a').click()");
    // When the page first showed each head checkpoint.
    let mut first_seen: Vec<(u64, u64)> = Vec::new();
    let mut saw_running = false;
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut shot = false;
    let mut finished_at: Option<Instant> = None;
    loop {
        let head = b.eval("document.querySelector('#run-summary')?.dataset.head || ''");
        let status = b.eval("document.querySelector('#run-summary')?.dataset.status || ''");
        if let Some(h) = head.as_str().and_then(|h| h.parse::<u64>().ok())
            && first_seen.last().is_none_or(|(seen, _)| *seen != h)
        {
            first_seen.push((h, now_ms()));
        }
        if status == "running"
            && b.eval("!!document.querySelector('#graph g.running')") == Value::Bool(true)
        {
            saw_running = true;
            if !shot && let Some(dir) = screenshot_dir() {
                b.screenshot(&dir.join("studio-live.png"));
                shot = true;
            }
        }
        // the status may reach the page a moment before the last head: keep watching for 1.5 s after
        if transform.is_finished() && status == "finished" {
            let since = *finished_at.get_or_insert_with(Instant::now);
            if since.elapsed() > Duration::from_millis(1500) {
                break;
            }
        }
        if Instant::now() >= deadline {
            let page = b.eval("document.body.innerText.slice(0, 600) + ' | view: ' + JSON.stringify({kind: view?.kind, id: view?.id, drawn: !!view?.dataText, live: document.querySelector('#live')?.className}) + ' | errors: ' + JSON.stringify(window.__errors)");
            panic!(
                "the run did not finish on the page in 120 s (page: head {head}, status {status}; transform \
                 finished: {}; heads seen: {first_seen:?}; the page says: {page})",
                transform.is_finished()
            );
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let id = transform.join().unwrap();
    assert!(saw_running, "the page showed the node running now");
    let h = history(home.path(), &id);
    let written: Vec<(u64, u64)> = h["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["checkpoint"].as_u64().unwrap(),
                c["created_ms"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(written.len() > 5, "{h}");
    // Each checkpoint is on the page (as the head, or passed by a later head) within a second of its write.
    for (cp, created) in &written {
        let seen = first_seen
            .iter()
            .find(|(head, _)| head >= cp)
            .unwrap_or_else(|| panic!("checkpoint #{cp} never reached the page: {first_seen:?}"))
            .1;
        assert!(
            seen <= created + 1000,
            "checkpoint #{cp} written at {created} reached the page at {seen} ({} ms later)",
            seen.saturating_sub(*created)
        );
    }
}

kt_graph::state! {
    #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
    struct LongRun => LongRunUpdate {
        #[overwrite] counter: u64,
        #[overwrite] note: String,
        #[append] history: Vec<Value>,
    }
}

/// A finished run of `steps` checkpoints (a loop graph, each step overwriting a counter and a note and
/// appending one history item), recorded in a real run directory under `runs`. Returns its id.
fn record_long_run(runs: &Path, steps: u64) -> String {
    use kt_graph::{
        END, Executor, GraphBuilder, NoError, NodeContext, RunId, RunOptions, START, SqliteStore,
        node_fn,
    };
    let root = support::root();
    let run = kt_pipeline::RunDir::create(
        runs,
        kt_pipeline::NewRun {
            kernel_file: &root.join("naive-kernels/matmul.cu"),
            kernel: "matrixMultiply",
            strategy: "autonomous",
            settings: kt_pipeline::RunSettings::default(),
            llm: kt_pipeline::RunLlm {
                provider: "scripted".into(),
                model: String::new(),
                ..kt_pipeline::RunLlm::default()
            },
        },
    )
    .unwrap();
    let mut g = GraphBuilder::<LongRun>::new();
    g.node(
        "tick",
        node_fn(|s: Arc<LongRun>, _ctx: NodeContext| async move {
            Ok::<_, NoError>(
                LongRunUpdate::default()
                    .counter(s.counter + 1)
                    .note(format!("step {} of a long run", s.counter + 1))
                    .history(vec![json!({"step": format!("tick {}", s.counter), "status": "rejected", "reason": "benchmark"})]),
            )
        }),
    )
    .writes(&["counter", "note", "history"]);
    g.edge(START, "tick");
    g.route("tick", &["tick", END], move |s: &LongRun| {
        if s.counter < steps { "tick" } else { END }
    });
    let graph = g.compile().unwrap();
    let store = Arc::new(SqliteStore::open(&run.sqlite()).unwrap());
    let exec = Executor::new(graph, store);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let opts = RunOptions {
        step_limit: steps + 10,
        ..RunOptions::default()
    };
    rt.block_on(exec.start(
        RunId::new(format!("{}/stage3", run.run_id())),
        LongRun::default(),
        opts,
    ))
    .unwrap();
    run.set_status(kt_pipeline::RunStatus::Finished).unwrap();
    run.run_id()
}

/// The studio's peak resident memory (VmHWM), in MB.
fn peak_rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .unwrap()
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kb / 1024.0
}

/// experiments/studio-bench/run.sh: a run of KT_STUDIO_BENCH_STEPS checkpoints (default 10,000); how long the
/// run page and its timeline take to become interactive in Chromium, and the studio's peak memory.
#[test]
#[ignore = "needs chromium; a benchmark (experiments/studio-bench/run.sh)"]
fn studio_bench_a_run_of_many_checkpoints() {
    let steps: u64 = std::env::var("KT_STUDIO_BENCH_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let home = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let id = record_long_run(&home.path().join("runs"), steps);
    eprintln!(
        "recorded {steps} steps in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    let studio = Studio::start(home.path(), &[]);
    let mut b = Browser::start(1400, 1000);
    let mut page_ms = Vec::new();
    let mut timeline_ms = Vec::new();
    for _ in 0..3 {
        b.goto("about:blank");
        let t = Instant::now();
        b.goto(&format!("{}#/run/{id}/live", studio.url));
        b.wait_for(
            "document.querySelector('#graph svg') && document.querySelector('#steps tbody tr')",
            Duration::from_secs(60),
            "the run page",
        );
        page_ms.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        b.eval("document.querySelector('#tab-timeline').click()");
        // the newest page of checkpoints, the rest behind "load earlier"
        b.wait_for(
            &format!(
                "document.querySelector('#timeline')?.dataset.total === '{}' && document.querySelectorAll('#timeline circle.cp').length === Number(document.querySelector('#timeline').dataset.checkpoints)",
                steps + 1
            ),
            Duration::from_secs(60),
            "the timeline",
        );
        timeline_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let shown = b
        .eval("document.querySelectorAll('#timeline circle.cp').length")
        .as_u64()
        .unwrap();
    if shown < steps + 1 {
        assert_eq!(
            b.eval("document.querySelector('#timeline-earlier').hidden"),
            false,
            "older checkpoints are a click away"
        );
        b.eval("document.querySelector('#timeline-earlier').click()");
        b.wait_for(
            &format!(
                "document.querySelectorAll('#timeline circle.cp').length === {}",
                (2 * shown).min(steps + 1)
            ),
            Duration::from_secs(60),
            "the page before the newest",
        );
    }
    // the two questions a user asks of a long run: the diff of two checkpoints and the state at one
    let timed = |path: String| {
        let t = Instant::now();
        let (status, body) = studio.request("GET", &path, &[], "");
        assert_eq!(status, 200, "{path}: {body}");
        t.elapsed().as_secs_f64() * 1e3
    };
    let rss_pages = peak_rss_mb(studio.child.id());
    // the server's share of the pages, one request at a time: built (the run's files moved, as touching
    // run.json makes them), then kept
    let run_json = home.path().join("runs").join(&id).join("run.json");
    let touch = || {
        std::fs::File::options()
            .append(true)
            .open(&run_json)
            .and_then(|f| f.set_modified(SystemTime::now()))
            .unwrap()
    };
    touch();
    let run_api_ms = [
        timed(format!("/api/runs/{id}")),
        timed(format!("/api/runs/{id}")),
    ];
    touch();
    let history_api_ms = [
        timed(format!("/api/runs/{id}/history")),
        timed(format!("/api/runs/{id}/history")),
    ];
    let diff_ms = timed(format!("/api/runs/{id}/diff?a=1&b={steps}"));
    let state_ms = timed(format!("/api/runs/{id}/state?at={steps}"));
    // in load order: the first load of each builds what the studio then keeps for the run as it is
    let median = |v: &[f64]| {
        let mut sorted = v.to_vec();
        sorted.sort_by(f64::total_cmp);
        sorted[sorted.len() / 2]
    };
    let rounded = |v: &[f64]| v.iter().map(|m| m.round()).collect::<Vec<_>>();
    let rss = peak_rss_mb(studio.child.id());
    println!("checkpoints: {}", steps + 1);
    println!(
        "run_page_interactive_ms: {:.0} (median of 3, in load order: {:?})",
        median(&page_ms),
        rounded(&page_ms)
    );
    println!(
        "timeline_interactive_ms: {:.0} (median of 3, in load order: {:?})",
        median(&timeline_ms),
        rounded(&timeline_ms)
    );
    println!("timeline_checkpoints_drawn: {shown} (the newest page; earlier ones on demand)");
    println!(
        "run_api_ms: {:.0} built, {:.0} kept",
        run_api_ms[0], run_api_ms[1]
    );
    println!(
        "history_api_ms: {:.0} built, {:.0} kept",
        history_api_ms[0], history_api_ms[1]
    );
    println!("diff_1_to_last_ms: {diff_ms:.0}");
    println!("state_at_last_ms: {state_ms:.0}");
    println!("studio_peak_rss_mb: {rss:.1} (after the pages alone: {rss_pages:.1})");
}
