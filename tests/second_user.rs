//! End-to-end: a second local user can neither read a run nor act through a running studio (issue 45). Root
//! (user A) records a run and starts `kt studio` over it; this same test binary then runs as `$KT_CORPUS_USER`
//! (user B, scripts/test.sh creates it) and tries to read the run's files and to use the studio without its
//! access token. Both are refused; A, with the token, gets what B was refused (so the test can fail).

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

mod support;
use support::other_user::OtherUser;

#[path = "support/studio_server.rs"]
mod studio_server;
use studio_server::{Studio, http_exchange, record_run};

#[test]
#[ignore = "needs root and $KT_CORPUS_USER (scripts/test.sh creates it): user B is that user"]
fn a_second_user_can_neither_read_a_run_nor_act_through_a_running_studio() {
    let b = OtherUser::from_env();
    let staged = b.stage(false);
    // A's runs where B can reach the run directory itself: only the run's own mode stands in the way
    let home = tempfile::Builder::new()
        .prefix("kt-user-a")
        .tempdir_in("/var/tmp")
        .unwrap();
    let open = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap()
    };
    open(home.path());
    let id = record_run(home.path());
    open(&home.path().join("runs"));
    let run = home.path().join("runs").join(&id);
    let studio = Studio::start(home.path(), &[]);
    // A, with the token, reads the run and its list: what B must not get
    assert!(
        std::fs::read_to_string(run.join("run.json"))
            .unwrap()
            .contains(&id)
    );
    let (status, body) = studio.request("GET", "/api/runs", &[], "");
    assert!(status == 200 && body.contains(&id), "{status}: {body}");

    let addr = PathBuf::from(studio.addr());
    let ran = b.run_tests(
        &staged,
        &["as_the_second_user"],
        Path::new("/"),
        &[
            ("KT_USER_A_RUN", run.as_path()),
            ("KT_USER_A_STUDIO", addr.as_path()),
        ],
    );
    println!("{}", ran.text);
    assert!(ran.passed, "as {} ({}):\n{}", b.name, b.uid, ran.text);
    // nothing B tried changed the run: it is still A's, whole, and not resumed
    assert!(
        std::fs::read_to_string(run.join("run.json"))
            .unwrap()
            .contains(&id)
    );
}

/// User B's half: reads of A's run and requests to A's studio without the token, each refused.
#[test]
#[ignore = "user B's half of a_second_user_can_neither_read_a_run_nor_act_through_a_running_studio, run by it"]
fn as_the_second_user() {
    let (Some(run), Some(addr)) = (
        std::env::var_os("KT_USER_A_RUN").map(PathBuf::from),
        std::env::var("KT_USER_A_STUDIO").ok(),
    ) else {
        panic!(
            "run by a_second_user_can_neither_read_a_run_nor_act_through_a_running_studio as user B"
        );
    };
    let me = std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m));
    assert!(me.is_ok_and(|uid| uid != 0), "user B is not root");
    let id = run.file_name().unwrap().to_string_lossy().into_owned();
    for file in ["run.json", "result.json", "llm.jsonl", "run.sqlite"] {
        let read = std::fs::read(run.join(file));
        assert!(
            read.as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied),
            "user B read {file}: {:?}",
            read.map(|b| b.len())
        );
    }
    assert!(std::fs::read_dir(&run).is_err(), "user B listed A's run");
    for (method, path) in [
        ("GET", "/".to_string()),
        ("GET", "/api/runs".to_string()),
        ("GET", format!("/api/runs/{id}")),
        ("GET", format!("/api/runs/{id}/llm/0")),
        ("POST", format!("/api/runs/{id}/resume")),
        ("POST", format!("/api/runs/{id}/answer")),
    ] {
        let (status, _, body) = http_exchange(&addr, method, &path, &[], "{}");
        assert_eq!(status, 403, "{method} {path} without the token: {body}");
        assert!(
            !body.contains(&id),
            "{method} {path} showed the run: {body}"
        );
        assert!(
            !body.contains("kt-studio-token"),
            "{method} {path} showed the session token: {body}"
        );
    }
}
