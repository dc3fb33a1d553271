//! Bad-input tests: every way an LLM-written generator can misbehave ends within its limit, with a typed error that
//! names the cause, and leaves nothing behind. Small limits keep each test within a few seconds.

use std::path::Path;
use std::time::{Duration, Instant};

use super::*;
use crate::outcome::Limit;
use crate::policy::Policy;
use crate::protections::detect_protections;

pub(super) fn python() -> PythonRuntime {
    PythonRuntime::probe()
        .unwrap_or_else(|e| panic!("these tests need python3 with numpy: {e}. Run scripts/test.sh"))
}

/// The generator policy with small limits; these tests are about limits, not the network (the test that is
/// asserts the namespace itself), so they also run where only rlimits work.
pub(super) fn small_policy() -> Policy {
    let mut p = Policy::for_generator().allow_unsandboxed(true);
    p.wall_timeout = Some(Duration::from_secs(20));
    p.cpu_seconds = Some(5);
    p.address_space = Some(2 << 30);
    p.file_size = Some(64 << 20);
    p.processes = Some(24);
    p.open_files = Some(64);
    p.output_cap = 256 * 1024;
    p
}

/// vector_add(const float* a, float3* pos, float* out, int n, float dt): three arrays sized by n.
fn spec() -> GeneratorSpec {
    GeneratorSpec {
        kernel: "vector_add".into(),
        params: vec![
            ArgSpec::array("a", "float", Some("n")),
            ArgSpec::array("pos", "float3", Some("n")),
            ArgSpec::array("out", "float", Some("n")),
            ArgSpec::scalar("n", "int"),
            ArgSpec::scalar("dt", "float"),
        ],
        constants: Vec::new(),
        outputs: vec!["out".into()],
        problem_size: Some(vec!["n".into()]),
        max_total_bytes: 16 << 20,
    }
}

const GOOD: &str = r#"
import numpy as np

def generate(seed: int) -> list:
    rng = np.random.default_rng(seed)
    n = 1000 + seed
    a = rng.standard_normal(n).astype(np.float32)
    pos = rng.standard_normal((n, 3)).astype(np.float32)
    out = np.zeros(n, dtype=np.float32)
    return [a, pos, out, n, 0.01]
"#;

fn run(
    script: &str,
    policy: Policy,
    dest: &Path,
) -> (Result<GeneratedTest, GeneratorError>, Duration) {
    let start = Instant::now();
    let result = run_generator(&Sandbox::new(policy), &python(), script, &spec(), 1, dest);
    (result, start.elapsed())
}

fn run_small(
    script: &str,
) -> (
    Result<GeneratedTest, GeneratorError>,
    Duration,
    tempfile::TempDir,
) {
    let dest = tempfile::tempdir().unwrap();
    let (result, elapsed) = run(script, small_policy(), dest.path());
    (result, elapsed, dest)
}

fn assert_nothing_written(dest: &Path) {
    let left: Vec<_> = std::fs::read_dir(dest).unwrap().collect();
    assert!(
        left.is_empty(),
        "a failed generator must not leave a test behind: {left:?}"
    );
}

#[test]
fn valid_generator_writes_a_content_addressed_test_in_the_tests_format() {
    let dest = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new(small_policy());
    let test = run_generator(&sandbox, &python(), GOOD, &spec(), 1, dest.path()).unwrap();
    assert_eq!(test.id.len(), 16);
    assert!(
        test.id.chars().all(|c| c.is_ascii_hexdigit()),
        "{}",
        test.id
    );
    assert_eq!(test.dir, dest.path().join(&test.id));
    assert!(!test.reused);

    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(test.dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["format"], 1);
    assert_eq!(manifest["kernel"], "vector_add");
    assert_eq!(manifest["seed"], 1);
    assert_eq!(manifest["outputs"], serde_json::json!(["out"]));
    assert_eq!(manifest["problem_size"], serde_json::json!([1001, 1, 1]));
    assert!(manifest.get("expected").is_none(), "expected/ comes later");
    let args = manifest["args"].as_array().unwrap();
    assert_eq!(
        args[0],
        serde_json::json!({"name": "a", "kind": "array", "dtype": "float32", "shape": [1001], "file": "args/a.npy"})
    );
    assert_eq!(
        args[1],
        serde_json::json!({"name": "pos", "kind": "array", "dtype": "float32", "shape": [1001, 3], "file": "args/pos.npy", "struct": "float3"})
    );
    assert_eq!(
        args[3],
        serde_json::json!({"name": "n", "kind": "scalar", "dtype": "int32", "value": 1001})
    );
    assert_eq!(args[4]["dtype"], "float32");
    assert!((args[4]["value"].as_f64().unwrap() - 0.01).abs() < 1e-6);
    let npy = std::fs::read(test.dir.join("args/pos.npy")).unwrap();
    assert!(
        npy.starts_with(b"\x93NUMPY\x01\x00"),
        "numpy format version 1.0"
    );
    assert_eq!(
        npy.len() % 64,
        (1001 * 3 * 4) % 64,
        "header padded to 64 bytes, then the raw data"
    );

    // Same seed, same content: the same id, reused. Another seed: another test.
    let again = run_generator(&sandbox, &python(), GOOD, &spec(), 1, dest.path()).unwrap();
    assert_eq!((again.id.as_str(), again.reused), (test.id.as_str(), true));
    let other = run_generator(&sandbox, &python(), GOOD, &spec(), 2, dest.path()).unwrap();
    assert_ne!(other.id, test.id);
    assert_eq!(
        std::fs::read_dir(dest.path()).unwrap().count(),
        2,
        "no staging directories left behind"
    );
}

#[test]
fn generator_that_loops_forever_is_stopped_by_the_cpu_limit() {
    let mut policy = small_policy();
    policy.cpu_seconds = Some(1);
    let dest = tempfile::tempdir().unwrap();
    let (result, elapsed) = run(
        "def generate(seed):\n    while True:\n        pass\n",
        policy,
        dest.path(),
    );
    match result {
        Err(GeneratorError::LimitExceeded {
            which: Limit::Cpu, ..
        }) => {}
        other => panic!("expected the CPU limit, got {other:?}"),
    }
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    assert_nothing_written(dest.path());
}

#[test]
fn generator_that_sleeps_forever_is_killed_at_the_wall_timeout() {
    let mut policy = small_policy();
    policy.wall_timeout = Some(Duration::from_millis(1500));
    let dest = tempfile::tempdir().unwrap();
    let script = "import os, time\ndef generate(seed):\n    os.fork()\n    time.sleep(1000)\n";
    let (result, elapsed) = run(script, policy, dest.path());
    assert!(
        matches!(result, Err(GeneratorError::TimedOut { .. })),
        "{result:?}"
    );
    assert!(
        elapsed < Duration::from_secs(5),
        "the sleeping child must not keep kt waiting: {elapsed:?}"
    );
}

#[test]
#[ignore = "needs the process limit (root, or a user namespace on Linux >= 5.14); scripts/test.sh runs it where available"]
fn generator_that_forks_is_stopped_by_the_process_limit() {
    let p = detect_protections();
    assert!(
        p.pids_limit,
        "the process limit is not enforceable here ({}); a fork bomb would hit the machine",
        p.summary()
    );
    let script = "import os\ndef generate(seed):\n    while True:\n        os.fork()\n";
    let (result, elapsed, dest) = run_small(script);
    match result {
        Err(GeneratorError::LimitExceeded {
            which: Limit::Processes,
            detail,
        }) => {
            assert!(
                detail.contains("fork"),
                "the traceback names the failing call: {detail}"
            )
        }
        other => panic!("expected the process limit, got {other:?}"),
    }
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    assert_nothing_written(dest.path());
}

#[test]
fn generator_that_allocates_tens_of_gigabytes_is_stopped_by_the_memory_limit() {
    let script = "import numpy as np\ndef generate(seed):\n    big = np.ones(40 * 2**30 // 8)\n    return [big]\n";
    let (result, elapsed, dest) = run_small(script);
    match result {
        Err(GeneratorError::LimitExceeded {
            which: Limit::Memory,
            detail,
        }) => assert!(detail.contains("MemoryError"), "{detail}"),
        other => panic!("expected the memory limit, got {other:?}"),
    }
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    assert_nothing_written(dest.path());
}

#[test]
#[ignore = "needs network namespaces (root or unprivileged user namespaces); scripts/test.sh runs it where available"]
fn generator_that_connects_to_a_listening_port_gets_no_network() {
    let p = detect_protections();
    assert!(
        p.network_namespace,
        "network namespaces are unavailable here ({})",
        p.summary()
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "import socket\ndef generate(seed):\n    s = socket.create_connection(('127.0.0.1', {port}), timeout=3)\n    s.sendall(b'leak')\n    return []\n"
    );
    let (result, _, dest) = run_small(&script);
    match result {
        Err(GeneratorError::NetworkDenied { traceback }) => {
            assert!(traceback.contains("create_connection"), "{traceback}")
        }
        other => panic!("expected no network, got {other:?}"),
    }
    assert!(
        listener.accept().is_err(),
        "the listener on the host must not have seen a connection"
    );
    assert_nothing_written(dest.path());
}

#[test]
#[ignore = "needs root (the uid switch); scripts/test.sh runs it where available"]
fn generator_that_writes_outside_its_directory_is_denied_and_leaves_no_file() {
    let p = detect_protections();
    assert!(
        p.unprivileged_user,
        "kt does not run as root here, so the generator keeps the user's write permissions ({})",
        p.summary()
    );
    // A directory other users may read and enter but not write (the usual state of a user's directories).
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    let outside = if base.is_dir() {
        tempfile::tempdir_in(&base).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(outside.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let target = outside.path().join("escaped.txt");
    let nonce = format!(
        "kt-escape-{}-{}",
        std::process::id(),
        outside.path().file_name().unwrap().to_string_lossy()
    );
    // World-writable /tmp is only private with a mount namespace; without one, the uid alone cannot stop it.
    let private_tmp = p.mount_namespace;
    let tmp_write = if private_tmp {
        format!("open('/tmp/{nonce}', 'w').write('x')")
    } else {
        println!(
            "/tmp is not private here ({}): not checking it",
            p.summary()
        );
        "pass".to_string()
    };
    let script = format!(
        "def generate(seed):\n    {tmp_write}\n    open({target:?}, 'w').write('x')\n    return []\n",
        target = target.to_string_lossy()
    );
    let (result, _, dest) = run_small(&script);
    // A checkout under /tmp (CI clones may live there) is not even visible inside the sandbox's private
    // /tmp: the write then fails with "not found" — just as safe as "permission denied".
    let hidden_by_private_tmp = private_tmp && target.starts_with("/tmp");
    match result {
        Err(GeneratorError::PermissionDenied { path, .. }) => assert_eq!(Path::new(&path), target),
        Err(GeneratorError::GeneratorRaised { exception, .. })
            if hidden_by_private_tmp && exception == "FileNotFoundError" => {}
        other => panic!("expected permission denied, got {other:?}"),
    }
    assert!(
        !target.exists(),
        "the file must not appear outside the sandbox"
    );
    assert!(
        !private_tmp || !Path::new("/tmp").join(&nonce).exists(),
        "the sandbox's /tmp is private"
    );
    assert_nothing_written(dest.path());
}

#[test]
fn generator_that_prints_gigabytes_is_stopped_by_the_output_cap() {
    let script = "import sys\ndef generate(seed):\n    line = 'x' * 65536\n    for _ in range(16384):\n        sys.stdout.write(line)\n    return []\n";
    let (result, elapsed, dest) = run_small(script);
    assert!(
        matches!(
            result,
            Err(GeneratorError::OutputTooLarge { limit: 262144 })
        ),
        "{result:?}"
    );
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    assert_nothing_written(dest.path());
}

#[test]
fn generator_returning_too_few_arguments_gets_wrong_arg_count() {
    let script =
        "import numpy as np\ndef generate(seed):\n    return [np.zeros(4, np.float32), 4]\n";
    let (result, _, dest) = run_small(script);
    match result {
        Err(GeneratorError::WrongArgCount {
            expected: 5,
            got: 2,
            names,
        }) => assert_eq!(names, ["a", "pos", "out", "n", "dt"]),
        other => panic!("{other:?}"),
    }
    assert_nothing_written(dest.path());
}

#[test]
fn generator_returning_float64_for_a_float_pointer_gets_wrong_dtype() {
    let script = "import numpy as np\ndef generate(seed):\n    n = 8\n    return [np.zeros(n), np.zeros((n, 3), np.float32), np.zeros(n, np.float32), n, 0.5]\n";
    let (result, _, _dest) = run_small(script);
    match result {
        Err(GeneratorError::WrongDtype {
            param,
            expected,
            got,
        }) => assert_eq!(
            (param.as_str(), expected.as_str(), got.as_str()),
            ("a", "float32", "float64")
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn generator_returning_an_array_of_the_wrong_size_gets_wrong_size() {
    let script = "import numpy as np\ndef generate(seed):\n    n = 8\n    return [np.zeros(n, np.float32), np.zeros((n, 3), np.float32), np.zeros(n - 1, np.float32), n, 0.5]\n";
    let (result, _, _dest) = run_small(script);
    match result {
        Err(GeneratorError::WrongSize {
            param, expected, ..
        }) => assert_eq!(
            (param.as_str(), expected.as_str()),
            ("out", "8 elements (n)")
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn generator_returning_a_float_for_an_int_parameter_gets_wrong_dtype() {
    let script = "import numpy as np\ndef generate(seed):\n    n = 8\n    return [np.zeros(n, np.float32), np.zeros((n, 3), np.float32), np.zeros(n, np.float32), 8.5, 0.5]\n";
    let (result, _, _dest) = run_small(script);
    assert!(
        matches!(&result, Err(GeneratorError::WrongDtype { param, .. }) if param == "n"),
        "{result:?}"
    );
}

#[test]
fn generator_importing_a_missing_module_gets_import_missing() {
    let script =
        "import numpy as np\nimport kt_no_such_module_xyz\ndef generate(seed):\n    return []\n";
    let (result, _, _dest) = run_small(script);
    match result {
        Err(GeneratorError::ImportMissing { module, traceback }) => {
            assert_eq!(module, "kt_no_such_module_xyz");
            assert!(
                traceback.contains("kt_generator.py\", line 2"),
                "{traceback}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn generator_that_raises_reports_its_verbatim_traceback() {
    let script = "def helper(x):\n    raise ValueError('n must be positive, got %d' % x)\n\ndef generate(seed):\n    return helper(-seed)\n";
    let (result, _, _dest) = run_small(script);
    match result {
        Err(GeneratorError::GeneratorRaised {
            exception,
            traceback,
        }) => {
            assert_eq!(exception, "ValueError");
            assert!(traceback.contains("line 2, in helper"), "{traceback}");
            assert!(
                traceback.contains("ValueError: n must be positive, got -1"),
                "{traceback}"
            );
            assert!(
                !traceback.contains("kt_harness.py"),
                "kt's own frames are not the LLM's business: {traceback}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn arguments_over_the_byte_limit_are_refused_before_anything_is_written() {
    let mut spec = spec();
    spec.max_total_bytes = 4096;
    let dest = tempfile::tempdir().unwrap();
    let result = run_generator(
        &Sandbox::new(small_policy()),
        &python(),
        GOOD,
        &spec,
        1,
        dest.path(),
    );
    match result {
        Err(GeneratorError::TooLarge { bytes, limit: 4096 }) => assert_eq!(bytes, 1001 * 4 * 5),
        other => panic!("{other:?}"),
    }
    assert_nothing_written(dest.path());
}

#[test]
fn each_attempt_starts_in_a_new_empty_directory() {
    let script = format!(
        "import os\n{GOOD}\n_orig = generate\ndef generate(seed):\n    if os.path.exists('marker') or os.path.exists('out'):\n        raise RuntimeError('not clean: ' + repr(os.listdir('.')))\n    open('marker', 'w').write('x')\n    return _orig(seed)\n"
    );
    let dest = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new(small_policy());
    for seed in [1, 1, 2] {
        run_generator(&sandbox, &python(), &script, &spec(), seed, dest.path()).unwrap();
    }
}

#[test]
fn half_built_tests_of_a_killed_run_are_removed_and_finished_ones_kept() {
    let dest = tempfile::tempdir().unwrap();
    let staging = dest.path().join(".0123456789abcdef-Xy12Zq");
    let finished = dest.path().join("0123456789abcdef");
    let unrelated = dest.path().join(".git");
    for d in [&staging, &finished, &unrelated] {
        std::fs::create_dir_all(d.join("args")).unwrap();
    }
    assert_eq!(super::remove_stale_staging(dest.path()), 1);
    assert!(!staging.exists() && finished.exists() && unrelated.exists());
}

/// numpy installed but broken (here a package that raises on import, found before the real one): the harness
/// says so before it touches the generator, and kt reports an environment error the LLM is not asked to fix.
#[test]
fn a_numpy_that_does_not_import_is_the_environments_fault_not_the_generators() {
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path();
    std::fs::create_dir(w.join("numpy")).unwrap();
    std::fs::write(
        w.join("numpy/__init__.py"),
        "raise ImportError('libopenblas.so.0: cannot open shared object file')\n",
    )
    .unwrap();
    std::fs::write(w.join("kt_generator.py"), GOOD).unwrap();
    std::fs::write(w.join("kt_harness.py"), HARNESS).unwrap();
    std::fs::write(
        w.join("kt_spec.json"),
        r#"{"kernel": "k", "seed": 1, "max_total_bytes": 1024, "problem_size": null, "params": []}"#,
    )
    .unwrap();
    let status = std::process::Command::new(&python().interpreter)
        .args(["-B", "kt_harness.py", "kt_spec.json"])
        .current_dir(w)
        .status()
        .unwrap();
    assert!(!status.success());
    let text = std::fs::read_to_string(w.join("out/result.json")).unwrap();
    let Ok(HarnessResult::Error(err)) = serde_json::from_str::<HarnessResult>(&text) else {
        panic!("not an error result: {text}");
    };
    let e = map_harness_error(err, &python());
    assert!(!e.is_generator_fault(), "{e}");
    let message = e.to_string();
    assert!(
        message.contains("does not import")
            && message.contains("libopenblas")
            && message.contains("KT_PYTHON"),
        "{message}"
    );
}
