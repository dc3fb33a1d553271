//! End-to-end tests of `kt studio`: the real binary serving a runs directory on a loopback port. Without a
//! browser: what it serves and what it refuses (tokens, read-only, foreign hosts). In headless Chromium
//! (ignored; scripts/test.sh runs them where chromium is installed): the run list, a run's graph, a
//! checkpoint diff and a fork with an edited field checked in the run's store; and a scripted transform
//! watched live, each checkpoint on the page within a second of being written.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kt_pipeline::job::recorded_run::{fixture_backend, record_matmul_run_with};
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
#[path = "support/studio_server.rs"]
mod studio_server;
use studio_server::{Studio, history, record_run};

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

    // the access token on every request, loopback included: by header, or by the printed URL, which sets
    // an HttpOnly cookie the page's script, stylesheet and requests then carry
    let (status, body) = studio.request_as("GET", "/api/runs", &[], "");
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("access token"), "{body}");
    let (status, _) = studio.request_as("GET", "/assets/studio.js", &[], "");
    assert_eq!(status, 403);
    let (status, head) = studio.request_head(&format!("/?access={}", studio.access_token()));
    assert_eq!(status, 303, "{head}");
    let cookie = head
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .unwrap_or_else(|| panic!("no cookie set: {head}"));
    assert!(
        cookie.contains("httponly") && cookie.contains("samesite=strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap();
    let (status, _) = studio.request_as("GET", "/assets/studio.js", &[("cookie", pair)], "");
    assert_eq!(status, 200, "the script loads with the cookie");
    // a change from another site is refused, even with both tokens
    let (status, body) = studio.request(
        "POST",
        &path,
        &[
            ("x-kt-studio-token", &token),
            ("origin", "http://evil.example"),
        ],
        &fork,
    );
    assert_eq!(status, 403, "{body}");

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
    // the LLM calls come with the page's sections, fetched once the graph and steps are drawn
    b.wait_for(
        "document.querySelector('#tab').dataset.sections === 'loaded'",
        long,
        "the run page's sections",
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
    // the fork box offers the fields of checkpoint A's state, with their types, once A is picked
    b.eval(&format!(
        "document.querySelector('#timeline circle.cp[data-cp=\"{first}\"]').dispatchEvent(new MouseEvent('click', {{bubbles: true}}))"
    ));
    b.wait_for(
        "[...document.querySelectorAll('#fork-field option')].some((o) => o.value === 'plan' && o.textContent.includes('(list)'))",
        long,
        "the fork box's fields",
    );
    b.eval("{ const f = document.querySelector('#fork-field'); f.value = 'plan'; f.dispatchEvent(new Event('change')); }");
    assert_eq!(
        b.eval("document.querySelector('#fork-value').value.trim().startsWith('[')"),
        true,
        "picking a field puts its value in the box"
    );
    b.eval("document.querySelector('#fork-value').value = '[]'; document.querySelector('#fork-btn').click()");
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
    let store = Arc::new(SqliteStore::open(run.sqlite()).unwrap());
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

/// The recorded long run: under `KT_STUDIO_BENCH_HOME` when set (kept there and reused by the next run of the
/// benchmark with as many steps), else in a temporary directory. Returns the home and the run's id.
fn bench_run(steps: u64) -> (PathBuf, String, Option<tempfile::TempDir>) {
    let (home, tmp) = match std::env::var_os("KT_STUDIO_BENCH_HOME") {
        Some(h) => (PathBuf::from(h), None),
        None => {
            let t = tempfile::tempdir().unwrap();
            (t.path().to_path_buf(), Some(t))
        }
    };
    let kept = home.join(format!("bench-run-{steps}"));
    if let Ok(id) = std::fs::read_to_string(&kept) {
        eprintln!("recorded {steps} steps earlier ({})", home.display());
        return (home, id, tmp);
    }
    let t0 = Instant::now();
    let id = record_long_run(&home.join("runs"), steps);
    std::fs::write(&kept, &id).unwrap();
    eprintln!(
        "recorded {steps} steps in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    (home, id, tmp)
}

/// Opens run `id`'s page from a blank one; returns the ms until it is interactive (summary, graph and the
/// recent steps drawn: the first paint) and until its other sections (LLM calls, tuning, kernels) are in.
fn load_run_page(b: &mut Browser, url: &str, id: &str) -> (f64, f64) {
    b.goto("about:blank");
    let t = Instant::now();
    b.goto(&format!("{url}#/run/{id}/live"));
    run_page_drawn(b, t)
}

/// Opens the studio's run list and, once it is drawn, clicks run `id`: the way a person gets to a run. Returns
/// the ms from the click, as [`load_run_page`] does (no new document: the browser's own start is not in it).
fn click_run_page(b: &mut Browser, url: &str, id: &str) -> (f64, f64) {
    b.goto("about:blank");
    b.goto(url);
    b.wait_for(
        &format!("document.querySelector('#runs .run-row[data-run=\"{id}\"] a')"),
        Duration::from_secs(60),
        "the run list",
    );
    let t = Instant::now();
    b.eval(&format!(
        "document.querySelector('#runs .run-row[data-run=\"{id}\"] a').click()"
    ));
    run_page_drawn(b, t)
}

/// Waits for the run page's first paint and then its sections; the ms since `t` of each.
fn run_page_drawn(b: &mut Browser, t: Instant) -> (f64, f64) {
    b.wait_for(
        "document.querySelector('#run-summary .facts') && document.querySelector('#graph svg') && document.querySelector('#steps tbody tr')",
        Duration::from_secs(60),
        "the run page",
    );
    let interactive = t.elapsed().as_secs_f64() * 1e3;
    // (the LLM calls' table is drawn with the other sections; a studio that sends them with the page, as
    // before the page was split, draws it at once)
    b.wait_for(
        "document.querySelector('#llm')",
        Duration::from_secs(60),
        "the run page's other sections",
    );
    (interactive, t.elapsed().as_secs_f64() * 1e3)
}

/// Clicks the timeline tab; returns the ms until its newest page of checkpoints is drawn.
fn load_timeline(b: &mut Browser, checkpoints: u64) -> f64 {
    let t = Instant::now();
    b.eval("document.querySelector('#tab-timeline').click()");
    // the newest page of checkpoints, the rest behind "load earlier"
    b.wait_for(
        &format!(
            "document.querySelector('#timeline')?.dataset.total === '{checkpoints}' && document.querySelectorAll('#timeline circle.cp').length === Number(document.querySelector('#timeline').dataset.checkpoints)"
        ),
        Duration::from_secs(60),
        "the timeline",
    );
    t.elapsed().as_secs_f64() * 1e3
}

/// Clicks the centre of `selector` with real mouse events (CDP), shift held when `shift`.
fn mouse_click(b: &mut Browser, selector: &str, shift: bool) {
    let at = b.eval(&format!(
        "(() => {{ const r = document.querySelector('{selector}').getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
    ));
    let (x, y) = (at[0].as_f64().unwrap(), at[1].as_f64().unwrap());
    for kind in ["mousePressed", "mouseReleased"] {
        b.page_call(
            "Input.dispatchMouseEvent",
            json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1, "modifiers": if shift { 8 } else { 0 }}),
        );
    }
}

#[test]
#[ignore = "needs chromium; scripts/test.sh runs it where chromium is installed"]
fn studio_in_chromium_a_long_run_jumps_picks_ranges_and_diffs_a_screen_at_a_time() {
    let home = tempfile::tempdir().unwrap();
    let id = record_long_run(&home.path().join("runs"), 10_000);
    let studio = Studio::start(home.path(), &[]);
    let mut b = Browser::start(1400, 1000);
    b.goto(&format!("{}#/run/{id}/timeline", studio.url));
    let long = Duration::from_secs(60);
    b.wait_for(
        "document.querySelectorAll('#timeline circle.cp').length > 0 && document.querySelector('#run-summary').dataset.head",
        long,
        "the timeline and the run's head",
    );
    let head = b.eval("document.querySelector('#run-summary').dataset.head");
    let head: u64 = head.as_str().unwrap().parse().unwrap();

    // "jump to #1": one action, not twenty "load earlier" clicks; #1 is A, its state shown
    b.eval("document.querySelector('#jump-to').value = '1'; document.querySelector('#jump-btn').click()");
    b.wait_for(
        "document.querySelector('#timeline circle.cp.picked[data-cp=\"1\"]') && document.querySelector('#state-view h2')",
        long,
        "checkpoint #1 picked",
    );
    // a range
    b.eval("document.querySelector('#range-from').value = '100'; document.querySelector('#range-to').value = '149'; document.querySelector('#range-btn').click()");
    b.wait_for(
        "document.querySelectorAll('#timeline circle.cp').length === 50 && document.querySelector('#timeline-count').textContent.includes('#100 to #149')",
        long,
        "the range #100 to #149",
    );
    // zoomed in: checkpoints 24 px apart
    b.eval("{ const z = document.querySelector('#timeline-zoom'); z.value = '24'; z.dispatchEvent(new Event('input')); }");
    let gap = b.eval("Number(document.querySelector('circle[data-cp=\"101\"]').getAttribute('cx')) - Number(document.querySelector('circle[data-cp=\"100\"]').getAttribute('cx'))");
    assert_eq!(gap.as_f64(), Some(24.0));
    // a click picks A, a shift-click B, and no text is selected on the way
    mouse_click(&mut b, "circle[data-cp=\"100\"]", false);
    mouse_click(&mut b, "circle[data-cp=\"120\"]", true);
    b.wait_for(
        "document.querySelector('#cp-b').value === '120' && document.querySelector('#diff-view h2')",
        long,
        "the diff #100 → #120",
    );
    assert_eq!(
        b.eval("String(getSelection())"),
        "",
        "shift-click selects no text"
    );

    // the diff of the whole run: the server's time apart, then the page's first screen under a second
    let t = Instant::now();
    let (status, _) = studio.request("GET", &format!("/api/runs/{id}/diff?a=1&b={head}"), &[], "");
    assert_eq!(status, 200);
    let server_ms = t.elapsed().as_secs_f64() * 1e3;
    b.eval(&format!("document.querySelector('#diff-view').innerHTML = ''; document.querySelector('#cp-a').value = '1'; document.querySelector('#cp-b').value = '{head}'"));
    let t = Instant::now();
    b.eval("document.querySelector('#show-diff').click()");
    b.wait_for(
        "document.querySelector('#diff-view .field-change .leaf')",
        long,
        "the diff's first screen",
    );
    let page_ms = t.elapsed().as_secs_f64() * 1e3;
    eprintln!("diff #1 → #{head}: server {server_ms:.0} ms, first screen {page_ms:.0} ms");
    assert!(
        page_ms - server_ms < 1000.0,
        "the first screen took {page_ms:.0} ms, {server_ms:.0} ms of it the server's"
    );
    let rows = b.eval("document.querySelectorAll('#diff-view tr, #diff-view .leaf').length");
    assert!(rows.as_u64().unwrap() < 3000, "{rows} rows drawn at once");
    // the rest, a page at a time
    let before = b
        .eval("document.querySelectorAll('#diff-view .leaf').length")
        .as_u64()
        .unwrap();
    b.eval("document.querySelector('#diff-view button.more').click()");
    let after = b
        .eval("document.querySelectorAll('#diff-view .leaf').length")
        .as_u64()
        .unwrap();
    assert!(after > before, "show more drew more ({before} → {after})");
}

/// The median of `v`, and `v` rounded to whole ms in load order.
fn median_and_samples(v: &[f64]) -> String {
    let mut sorted = v.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rounded: Vec<f64> = v.iter().map(|m| m.round()).collect();
    format!(
        "{:.0} (median of {}, in load order: {rounded:?})",
        sorted[sorted.len() / 2],
        v.len()
    )
}

/// experiments/studio-bench/run.sh: a run of KT_STUDIO_BENCH_STEPS checkpoints (default 10,000); how long the
/// run page and its timeline take to become interactive in Chromium, on a first load (a fresh `kt studio`
/// for each sample: nothing of the run kept) and on a load served from what the studio keeps; where the
/// server's time goes on a first build (its debug log); and the studio's peak memory.
#[test]
#[ignore = "needs chromium; a benchmark (experiments/studio-bench/run.sh)"]
fn studio_bench_a_run_of_many_checkpoints() {
    let steps: u64 = std::env::var("KT_STUDIO_BENCH_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let samples: usize = std::env::var("KT_STUDIO_BENCH_SAMPLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let (home, id, _tmp) = bench_run(steps);
    let home = home.as_path();
    let mut b = Browser::start(1400, 1000);
    // first loads: a fresh studio each time, so nothing of the run is kept (the OS may still cache the file)
    let (mut first, mut first_full, mut first_timeline) = (Vec::new(), Vec::new(), Vec::new());
    let (mut clicked, mut clicked_full) = (Vec::new(), Vec::new());
    let mut first_rss = 0.0_f64;
    for i in 0..samples {
        let studio = Studio::start(home, &[]);
        let (page, full) = click_run_page(&mut b, &studio.url, &id);
        clicked.push(page);
        clicked_full.push(full);
        drop(studio);
        let log = home.join(format!("studio-first-load-{i}.log"));
        let studio = Studio::start_logged(home, &[], Some(&log));
        let (page, full) = load_run_page(&mut b, &studio.url, &id);
        first.push(page);
        first_full.push(full);
        first_timeline.push(load_timeline(&mut b, steps + 1));
        first_rss = first_rss.max(peak_rss_mb(studio.child.id()));
        drop(studio);
        if i == 0 {
            // where the server's time went, part by part
            for line in std::fs::read_to_string(&log).unwrap().lines() {
                if let Some(at) = line.find("DEBUG") {
                    println!("first_build: {}", line[at + 5..].trim());
                }
            }
        }
    }
    // kept: one studio; its first load builds, the next ones are served from what it keeps
    let studio = Studio::start(home, &[]);
    load_run_page(&mut b, &studio.url, &id);
    load_timeline(&mut b, steps + 1);
    let (mut kept, mut kept_full, mut kept_timeline) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..samples {
        let (page, full) = load_run_page(&mut b, &studio.url, &id);
        kept.push(page);
        kept_full.push(full);
        kept_timeline.push(load_timeline(&mut b, steps + 1));
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
    let run_json = home.join("runs").join(&id).join("run.json");
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
    let sections_api_ms = [
        timed(format!("/api/runs/{id}/sections")),
        timed(format!("/api/runs/{id}/sections")),
    ];
    touch();
    let history_api_ms = [
        timed(format!("/api/runs/{id}/history")),
        timed(format!("/api/runs/{id}/history")),
    ];
    let diff_ms = timed(format!("/api/runs/{id}/diff?a=1&b={steps}"));
    let state_ms = timed(format!("/api/runs/{id}/state?at={steps}"));
    let rss = peak_rss_mb(studio.child.id());
    println!("checkpoints: {}", steps + 1);
    println!(
        "run_page_interactive_first_load_ms: {}",
        median_and_samples(&first)
    );
    println!(
        "run_page_all_sections_first_load_ms: {}",
        median_and_samples(&first_full)
    );
    println!(
        "run_page_interactive_first_load_from_the_run_list_ms: {}",
        median_and_samples(&clicked)
    );
    println!(
        "run_page_all_sections_first_load_from_the_run_list_ms: {}",
        median_and_samples(&clicked_full)
    );
    println!(
        "timeline_interactive_first_load_ms: {}",
        median_and_samples(&first_timeline)
    );
    println!(
        "run_page_interactive_kept_ms: {}",
        median_and_samples(&kept)
    );
    println!(
        "run_page_all_sections_kept_ms: {}",
        median_and_samples(&kept_full)
    );
    println!(
        "timeline_interactive_kept_ms: {}",
        median_and_samples(&kept_timeline)
    );
    println!("timeline_checkpoints_drawn: {shown} (the newest page; earlier ones on demand)");
    println!(
        "run_api_ms: {:.0} built, {:.0} kept",
        run_api_ms[0], run_api_ms[1]
    );
    println!(
        "sections_api_ms: {:.0} built, {:.0} kept",
        sections_api_ms[0], sections_api_ms[1]
    );
    println!(
        "history_api_ms: {:.0} built, {:.0} kept",
        history_api_ms[0], history_api_ms[1]
    );
    println!("diff_1_to_last_ms: {diff_ms:.0}");
    println!("state_at_last_ms: {state_ms:.0}");
    println!(
        "studio_peak_rss_mb: {rss:.1} (after the pages alone: {rss_pages:.1}; a fresh studio after one first load: {first_rss:.1})"
    );
}

/// Copies the files of run directory `from` over those of `to`, each written beside its target and renamed
/// into place, as a run writing its store would leave them; the store's WAL and shared memory from readers
/// of the copy before go first (the new store is whole in its main file).
fn swap_run_files(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if src.is_dir() {
            swap_run_files(&src, &dst);
            continue;
        }
        if entry.file_name() == "run.sqlite" {
            for extra in ["run.sqlite-wal", "run.sqlite-shm"] {
                let _ = std::fs::remove_file(to.join(extra));
            }
        }
        let tmp = to.join(format!(".swap-{}", entry.file_name().to_string_lossy()));
        std::fs::copy(&src, &tmp).unwrap();
        std::fs::rename(&tmp, &dst).unwrap();
    }
}

/// Waits until the page has drawn what it shows (every pending frame painted), so a screenshot is of the
/// page and not of a frame before it.
fn settle(b: &mut Browser) {
    b.eval("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(() => r(true), 100))))");
}

/// The real demo run watched live (docs/studio-demo-live.png): copies of its run directory taken while it
/// ran (KT_STUDIO_LIVE_SNAPSHOTS: a folder of snap-NN/ runs dirs, oldest first, each with the one run, and
/// final/, the finished run, if there is one) are
/// swapped in turn into the runs directory a studio serves, as the run wrote them. The open page must follow
/// each copy (its head, its node running, its sections) on its own, through its event stream; a screenshot of
/// each is saved under KT_STUDIO_SCREENSHOTS (KT_STUDIO_LIVE_PICK: the snap-NN names to use, comma-separated).
#[test]
#[ignore = "needs chromium and copies of a live run (KT_STUDIO_LIVE_SNAPSHOTS)"]
fn demo_copies_watched_live_in_chromium() {
    let snaps_dir = PathBuf::from(
        std::env::var_os("KT_STUDIO_LIVE_SNAPSHOTS")
            .expect("set KT_STUDIO_LIVE_SNAPSHOTS to a folder of snap-NN/ runs dirs"),
    );
    let pick = std::env::var("KT_STUDIO_LIVE_PICK").ok();
    let mut snaps: Vec<PathBuf> = std::fs::read_dir(&snaps_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            (name.starts_with("snap-") || name == "final")
                && pick
                    .as_ref()
                    .is_none_or(|pick| pick.split(',').any(|n| n.trim() == name))
        })
        .collect();
    // oldest first: the copies in their order, the finished run (final/) last
    snaps.sort_by_key(|p| (p.ends_with("final"), p.clone()));
    assert!(!snaps.is_empty(), "no snap-NN/ in {}", snaps_dir.display());
    let id = std::fs::read_dir(&snaps[0])
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .file_name()
        .to_string_lossy()
        .to_string();
    let home = tempfile::tempdir().unwrap();
    let served = home.path().join("runs").join(&id);
    swap_run_files(&snaps[0].join(&id), &served);
    let studio = Studio::start(home.path(), &["--read-only"]);
    // tall enough for the graph, the steps, the LLM calls and the tuning progress on one screen
    let mut b = Browser::start(1400, 1300);
    b.goto(&format!("{}#/run/{id}/live", studio.url));
    for snap in &snaps {
        let t = Instant::now();
        swap_run_files(&snap.join(&id), &served);
        let (status, body) = studio.request("GET", &format!("/api/runs/{id}"), &[], "");
        assert_eq!(status, 200, "{body}");
        let data: Value = serde_json::from_str(&body).unwrap();
        // the page follows by itself: no reload, no click
        b.wait_for(
            &format!(
                "document.querySelector('#run-summary')?.dataset.head === '{}' && document.querySelector('#graph svg') && document.querySelector('#tab').dataset.sections === 'loaded'",
                data["head"]
            ),
            Duration::from_secs(20),
            "the page showing the copy",
        );
        let name = snap.file_name().unwrap().to_string_lossy().to_string();
        println!(
            "{name}: head #{} ({}), running {}, on the page {:.0} ms after the copy landed",
            data["head"],
            data["summary"]["status"],
            data["running"],
            t.elapsed().as_secs_f64() * 1e3
        );
        if data["summary"]["status"] == "running"
            && data["running"].as_array().is_some_and(|r| !r.is_empty())
        {
            assert_eq!(
                b.eval("!!document.querySelector('#graph g.running')"),
                true,
                "{name}: the node running now is marked on the graph"
            );
        }
        settle(&mut b);
        if let Some(dir) = screenshot_dir() {
            let png = dir.join(format!("studio-live-{name}.png"));
            b.screenshot(&png);
            let bytes = std::fs::metadata(&png).unwrap().len();
            // a blank page compresses to a few KB; the run page is tens of KB at least
            assert!(
                bytes > 20_000,
                "{}: {bytes} bytes, a blank page?",
                png.display()
            );
        }
    }
    // the last copy's other tabs: its kernel versions with verdicts and tuning, and its timeline
    b.eval("document.querySelector('#tab-kernels').click()");
    b.wait_for(
        "document.querySelectorAll('#kernels details.kernel').length > 0",
        Duration::from_secs(20),
        "the kernel versions",
    );
    if let Some(dir) = screenshot_dir() {
        settle(&mut b);
        b.screenshot(&dir.join("studio-live-kernels.png"));
    }
    b.eval("document.querySelector('#tab-timeline').click()");
    b.wait_for(
        "document.querySelectorAll('#timeline circle.cp').length > 0",
        Duration::from_secs(20),
        "the timeline",
    );
    // a click on a checkpoint shows its state; a shift-click on another the diff to it
    b.eval("document.querySelectorAll('#timeline circle.cp')[3].dispatchEvent(new MouseEvent('click', {bubbles: true}))");
    b.wait_for(
        "document.querySelector('#state-view h2')?.textContent.startsWith('state at #')",
        Duration::from_secs(20),
        "the state at a clicked checkpoint",
    );
    b.eval("document.querySelectorAll('#timeline circle.cp')[5].dispatchEvent(new MouseEvent('click', {bubbles: true, shiftKey: true}))");
    b.wait_for(
        "document.querySelector('#diff-view').textContent.length > 0",
        Duration::from_secs(20),
        "the diff to a shift-clicked checkpoint",
    );
    if let Some(dir) = screenshot_dir() {
        settle(&mut b);
        b.screenshot(&dir.join("studio-live-timeline.png"));
    }
}
