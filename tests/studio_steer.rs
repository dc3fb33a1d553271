//! kt studio as a new user meets it, in headless Chromium (ignored; scripts/test.sh runs them where chromium
//! is installed): a `manual:` run answered from the page prompt by prompt — the question shown in full, each
//! answer for exactly that prompt's id, never a stale one — until it stops for want of a GPU, where the page
//! says why and what to run and draws only the path it took (Stages 1 and 2: without a GPU, Stage 2 asks for its
//! generator program and checks it, then stops); the studio behind its access token,
//! remote mode included; the run list's empty and odd states.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

mod support;
use support::{
    kt_command, only_entry, read_json, require_no_gpu, start_manual_vector_add, text,
    vector_add_answer,
};
#[path = "support/browser.rs"]
mod browser;
use browser::Browser;
#[path = "support/studio_server.rs"]
mod studio_server;
use studio_server::{Studio, record_run};

const LONG: Duration = Duration::from_secs(60);

/// Saves a screenshot as `name` where `KT_STUDIO_SCREENSHOTS` points, when it does.
fn shot(b: &mut Browser, name: &str) {
    if let Some(dir) = std::env::var_os("KT_STUDIO_SCREENSHOTS") {
        b.screenshot(&Path::new(&dir).join(name));
    }
}

/// A `manual:` run of vectorAdd under `home`, stopped at its first prompt; its directory.
fn start_manual_run(home: &Path) -> std::path::PathBuf {
    let (out, _) = start_manual_vector_add(home);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    only_entry(&home.join("runs"))
}

/// The id of the prompt the page's answer box is for, or "" when it shows none.
fn shown_prompt(b: &mut Browser) -> String {
    b.eval("document.querySelector('#answer-section')?.dataset.promptId || ''")
        .as_str()
        .unwrap()
        .to_string()
}

/// Sends `body` as an answer from the page itself (as a second press of the button would), returning the
/// studio's refusal or "sent".
fn answer_from_page(b: &mut Browser, run: &str, body: &str) -> String {
    b.eval(&format!(
        "api('/api/runs/{run}/answer', {body}).then(() => 'sent', (e) => e.message)"
    ))
    .as_str()
    .unwrap()
    .to_string()
}

#[test]
#[ignore = "needs chromium; scripts/test.sh runs it where chromium is installed"]
fn studio_in_chromium_answers_each_prompt_by_its_id_then_says_the_run_needs_a_gpu() {
    require_no_gpu();
    let home = tempfile::tempdir().unwrap();
    let run = start_manual_run(home.path());
    let id = run.file_name().unwrap().to_str().unwrap().to_string();
    let studio = Studio::start(home.path(), &[]);
    let mut b = Browser::start(1400, 1000);
    b.goto(&format!("{}#/run/{id}/live", studio.url));
    b.wait_for(
        "document.querySelector('#run-state')",
        LONG,
        "the run's state",
    );
    let state = b.eval("document.querySelector('#run-state').innerText");
    assert!(
        state
            .as_str()
            .unwrap()
            .contains("waits for an answer to stage1.describe (prompt 001-stage1.describe)"),
        "{state}"
    );

    b.eval("document.querySelector('#tab-steer').click()");
    let mut answered: Vec<(String, String)> = Vec::new();
    // four Stage 1 questions, then Stage 2's program, asked where the LLM is before the run stops for a GPU
    for round in 0..5 {
        b.wait_for(
            "document.querySelector('#answer-section textarea')",
            LONG,
            "a prompt to answer",
        );
        let prompt = shown_prompt(&mut b);
        let waiting = read_json(&run.join("result.json"))["waiting_for"].clone();
        let node = waiting["node"].as_str().unwrap().to_string();
        assert!(
            waiting["prompt_file"]
                .as_str()
                .unwrap()
                .ends_with(&format!("{prompt}.prompt.md")),
            "the page answers the prompt the run waits for: {prompt} vs {waiting}"
        );
        // the question in full, as the manual provider wrote it, and an empty box (never the last answer)
        let question = b.eval("document.querySelector('#prompt-text').textContent");
        let file = std::fs::read_to_string(waiting["prompt_file"].as_str().unwrap()).unwrap();
        assert_eq!(
            question.as_str().unwrap(),
            file.split_once('\n').unwrap().1.trim_start()
        );
        assert_eq!(
            b.eval("document.querySelector('#answer-text').value"),
            "",
            "round {round}: the box starts empty"
        );
        if round == 1 {
            shot(&mut b, "studio-answer.png");
        }
        let answer = vector_add_answer(&node);
        b.eval(&format!(
            "document.querySelector('#answer-text').value = {}; document.querySelector('#answer-btn').click()",
            Value::String(answer.into())
        ));
        b.wait_for(
            &format!("document.querySelector('#answer-sent')?.dataset.promptId === '{prompt}'"),
            LONG,
            "the answer sent",
        );
        assert_eq!(
            b.eval("!!document.querySelector('#answer-text')"),
            false,
            "the box is cleared once sent"
        );
        // a second press with the same prompt's id: refused, the first answer stays
        let again = answer_from_page(
            &mut b,
            &id,
            &format!("{{id: '{prompt}', text: 'a stale answer'}}"),
        );
        assert!(
            again.contains("already has an answer")
                || again.contains("now waits for")
                || again.contains("not waiting for an answer"),
            "{again}"
        );
        answered.push((prompt, answer.to_string()));
        if round < 4 {
            b.wait_for(
                &format!(
                    "document.querySelector('#answer-section textarea') && document.querySelector('#answer-section').dataset.promptId !== '{}'",
                    answered.last().unwrap().0
                ),
                LONG,
                "the next prompt",
            );
            // the old prompt's id, sent now, is refused: the run waits for another
            let stale = answer_from_page(
                &mut b,
                &id,
                &format!("{{id: '{}', text: 'late'}}", answered.last().unwrap().0),
            );
            assert!(stale.contains("now waits for"), "{stale}");
        }
    }
    // each answer file holds the answer typed for its own prompt
    for (prompt, answer) in &answered {
        let file = home
            .path()
            .join("prompts")
            .join(format!("{prompt}.answer.md"));
        assert_eq!(&std::fs::read_to_string(&file).unwrap(), answer, "{prompt}");
    }

    // Stopped for want of a GPU: the page says so, with the command the CLI prints.
    b.eval("document.querySelector('#tab-live').click()");
    b.wait_for(
        "document.querySelector('#run-summary')?.dataset.status === 'interrupted' && document.querySelector('#run-state')?.innerText.includes('CUDA GPU')",
        LONG,
        "the stopped run's state",
    );
    let state = b.eval("document.querySelector('#run-state').innerText");
    let state = state.as_str().unwrap();
    assert!(
        state.contains("needs a CUDA GPU")
            && state.contains("On a machine with an NVIDIA GPU, continue with"),
        "{state}"
    );
    assert_eq!(
        b.eval("document.querySelector('#next-command').textContent"),
        Value::String(format!("kt resume {id}"))
    );
    // Only the path it took (Stages 1-2): no Stage 3 node, END not reached.
    b.wait_for("document.querySelector('#graph svg')", LONG, "the graph");
    shot(&mut b, "studio-needs-gpu.png");
    assert_eq!(b.eval("!!document.querySelector('#graph-stage')"), true);
    let nodes = b.eval(
        "[...document.querySelectorAll('#graph g.node')].map((g) => g.dataset.node).join(',')",
    );
    let nodes = nodes.as_str().unwrap();
    // the graph of the stage it stopped in (Stage 2, whose one node stopped before its first checkpoint)
    assert!(
        ["describe", "make_test", "__start__"]
            .iter()
            .any(|n| nodes.split(',').any(|m| m == *n)),
        "{nodes}"
    );
    for stage3 in ["plan", "apply", "validate"] {
        assert!(
            !nodes.split(',').any(|n| n == stage3),
            "no Stage 3 node: {nodes}"
        );
    }
    assert_eq!(
        b.eval("!!document.querySelector('#graph g.node.visited[data-node=\"__end__\"]')"),
        false,
        "END is not drawn as reached"
    );
    b.eval("document.querySelector('#tab-kernels').click()");
    b.wait_for(
        "document.querySelector('#no-stage3')",
        LONG,
        "the kernels tab saying there is no Stage 3",
    );
    b.eval("document.querySelector('#tab-timeline').click()");
    b.wait_for(
        "document.querySelector('#fork-none')",
        LONG,
        "the fork box saying there is nothing to fork",
    );
}

#[test]
#[ignore = "needs chromium; scripts/test.sh runs it where chromium is installed"]
fn studio_in_chromium_needs_its_token_and_works_remote_with_the_token_alone() {
    let home = tempfile::tempdir().unwrap();
    record_run(home.path());
    let studio = Studio::start(home.path(), &[]);
    let mut b = Browser::start(1200, 800);
    // without the printed URL's token: the page says what to open, and no data is served
    b.goto(&studio.bare_url());
    b.wait_for(
        "document.body.innerText.includes('access token')",
        LONG,
        "the refusal",
    );
    assert_eq!(
        b.eval("fetch('/api/runs').then((r) => r.status)"),
        403,
        "no cookie yet"
    );
    // with it: the token leaves the address bar, the cookie carries it, and script and data load
    b.goto(&studio.url);
    b.wait_for(
        "document.querySelectorAll('#runs .run-row').length === 1",
        LONG,
        "the run list",
    );
    assert_eq!(b.eval("location.search"), "");
    assert_eq!(
        b.eval("document.cookie"),
        "",
        "the cookie is HttpOnly: no script reads it"
    );
    drop(studio);

    // remote mode: bound off loopback, every request (script and stylesheet too) needs the token
    let token = "0123456789abcdef0123";
    let remote = Studio::start(
        home.path(),
        &["--bind", "0.0.0.0", "--allow-remote", "--token", token],
    );
    assert!(
        remote.url.ends_with(&format!("?access={token}")),
        "{}",
        remote.url
    );
    let port = remote.addr().rsplit(':').next().unwrap().to_string();
    let url = format!("http://localhost:{port}/?access={token}");
    let mut b = Browser::start(1200, 800);
    b.goto(&url);
    b.wait_for(
        "document.querySelectorAll('#runs .run-row').length === 1",
        LONG,
        "the run list in remote mode",
    );
    assert_eq!(
        b.eval("getComputedStyle(document.querySelector('header')).display"),
        "flex",
        "the stylesheet loaded"
    );
}

#[test]
#[ignore = "needs chromium; scripts/test.sh runs it where chromium is installed"]
fn studio_in_chromium_names_an_empty_runs_directory_and_lists_a_copy_by_its_directory() {
    let home = tempfile::tempdir().unwrap();
    let mut b = Browser::start(1200, 800);
    {
        // a mistyped --runs-dir: the page names it and says it does not exist
        let studio = Studio::start(home.path(), &[]);
        b.goto(&studio.url);
        b.wait_for(
            "document.querySelector('#no-runs')",
            LONG,
            "the empty list's line",
        );
        let line = b.eval("document.querySelector('#no-runs').innerText");
        let line = line.as_str().unwrap();
        let dir = home.path().join("runs");
        assert!(
            line.contains(&dir.display().to_string()) && line.contains("does not exist"),
            "{line}"
        );
    }
    let id = record_run(home.path());
    let runs = home.path().join("runs");
    let copy = runs.join("handed-over");
    let cp = std::process::Command::new("cp")
        .arg("-a")
        .arg(runs.join(&id))
        .arg(&copy)
        .status()
        .unwrap();
    assert!(cp.success());
    let studio = Studio::start(home.path(), &[]);
    b.goto(&studio.url);
    b.wait_for(
        "document.querySelectorAll('#runs .run-row').length === 2",
        LONG,
        "both runs",
    );
    let row = b.eval(
        "document.querySelector('#runs .run-row[data-run=\"handed-over\"]')?.innerText || ''",
    );
    assert!(
        row.as_str().unwrap().contains(&format!("a copy of {id}")),
        "{row}"
    );
    b.eval("document.querySelector('#runs .run-row[data-run=\"handed-over\"] a').click()");
    b.wait_for(
        "document.querySelector('#crumb')?.innerText.includes('handed-over') && document.querySelector('#graph svg')",
        LONG,
        "the copy's own page",
    );
    let runs_cmd = kt_command(home.path())
        .args(["runs", "list", "--runs-dir"])
        .arg(&runs)
        .output()
        .unwrap();
    assert!(
        text(&runs_cmd.stdout).contains("handed-over"),
        "{}",
        text(&runs_cmd.stdout)
    );
}
