//! The attack corpus: hostile generator programs, each run through kt's real harness in the real sandbox, each
//! trying one way out. A generator that gets out raises `ESCAPED: …`; the host-side check looks for what it
//! would have left (a file, a socket connection, shared memory, a process). After every case nothing may be left
//! behind: no sandbox process, no work directory of this process, no new System V shared memory.
//!
//! `corpus_holds_here` runs the corpus as this process's user; when that is root, `corpus_holds_for_an_ordinary_user`
//! runs this same test binary again as an ordinary user with a home directory and files to steal in it
//! (`$KT_CORPUS_USER`, which scripts/test.sh creates). A case whose protection this machine lacks is listed as such
//! (and must then not be claimed contained); every other case must be contained. The attacks on the user's own
//! files live in `attacks/home.rs`; the others in `attacks/reach_out.rs`, `attacks/processes.rs` and
//! `attacks/plants.rs`, with the host side in `attacks/host.rs` and the checks in `attacks/checks.rs`.

#![allow(clippy::unwrap_used)] // tests may unwrap (COMMON rules)

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[path = "attacks/checks.rs"]
mod checks;
#[path = "attacks/home.rs"]
mod home;
#[path = "attacks/host.rs"]
mod host;
#[path = "attacks/plants.rs"]
mod plants;
#[path = "attacks/processes.rs"]
mod processes;
#[path = "attacks/reach_out.rs"]
mod reach_out;

use host::{Host, leftovers, policy, prepare_host, script, shm_segments, spec};
use kt_sandbox::{GeneratorError, Protections, PythonRuntime, Sandbox, run_generator};

type Check = fn(&Host, &Result<kt_sandbox::GeneratedTest, GeneratorError>) -> Result<(), String>;

struct Case {
    name: &'static str,
    /// Python statements inside `generate(seed)`; they set `escaped` to a text when the attack worked.
    attack: &'static str,
    /// The protection the containment rests on (`None`: anything kt runs with).
    needs: Option<fn(&Protections) -> bool>,
    check: Check,
}

fn corpus() -> Vec<Case> {
    let mut cases = reach_out::cases();
    cases.extend(processes::cases());
    cases.extend(plants::cases());
    cases.extend(home::cases());
    cases
}

fn run_corpus() {
    let python = PythonRuntime::probe().unwrap_or_else(|e| {
        panic!("the attack corpus needs python3 with numpy: {e}. Run scripts/test.sh")
    });
    let root = tempfile::tempdir().unwrap();
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // outside /tmp (whose private copy would hide anything there anyway), as homes and scratch spaces are
    let outside_root = std::env::var_os("KT_ATTACK_OUTSIDE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    let outside = tempfile::Builder::new()
        .prefix("attacks")
        .tempdir_in(&outside_root)
        .unwrap();
    std::fs::set_permissions(outside.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let host = prepare_host(root.path(), outside.path());
    let sandbox = Sandbox::new(policy(&host.home));
    let protections = sandbox.protections();
    let user = if protections.running_as_root {
        "root"
    } else {
        "an ordinary user"
    };
    println!(
        "attack corpus as {user} (home {}: {}); protections: {}",
        host.home.dir.display(),
        if host.home.real {
            "the real one"
        } else {
            "a scratch one"
        },
        protections.summary()
    );
    let mut failures = Vec::new();
    let cases = corpus();
    assert!(cases.len() >= 30, "the corpus has {} cases", cases.len());
    for (i, case) in cases.iter().enumerate() {
        let available = case.needs.is_none_or(|needs| needs(&protections));
        if !available {
            // Some of these would hit this very process (kill(-1) as the same user): not run, and listed.
            println!(
                "| {:>2} | {} | not run: its protection is unavailable here | - | - |",
                i + 1,
                case.name
            );
            continue;
        }
        let dest = tempfile::tempdir().unwrap();
        let shm_before = shm_segments();
        let start = Instant::now();
        let result = run_generator(
            &sandbox,
            &python,
            &script(&host, case.attack),
            &spec(),
            1,
            dest.path(),
        );
        let took = start.elapsed();
        let text = match &result {
            Ok(_) => "test written".to_string(),
            Err(e) => e.to_string(),
        };
        let mut problems = Vec::new();
        if text.contains("ESCAPED") {
            problems.push(
                text.lines()
                    .find(|l| l.contains("ESCAPED"))
                    .unwrap_or("")
                    .to_string(),
            );
        }
        if let Err(e) = (case.check)(&host, &result) {
            problems.push(e);
        }
        // Give the kernel a moment to reap a torn-down namespace before looking for leftovers.
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut left = leftovers(shm_before, &host.sleep);
        while !left.is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            left = leftovers(shm_before, &host.sleep);
        }
        problems.extend(left);
        let verdict = if problems.is_empty() {
            "contained"
        } else {
            "ESCAPED"
        };
        let first_line = text
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(110)
            .collect::<String>();
        println!(
            "| {:>2} | {} | {verdict} | {:.1} s | {first_line} |",
            i + 1,
            case.name,
            took.as_secs_f64()
        );
        if !problems.is_empty() {
            failures.push(format!("{}: {}", case.name, problems.join("; ")));
        }
    }
    assert!(
        failures.is_empty(),
        "attacks not contained as {user}:\n{}",
        failures.join("\n")
    );
}

#[test]
fn corpus_holds_here() {
    run_corpus();
}

#[path = "attacks/as_user.rs"]
mod as_user;
