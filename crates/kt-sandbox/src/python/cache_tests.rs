//! The cache answers a repeated lookup without starting Python, and probes again when anything the answer
//! depends on changed or the entry cannot be used. A fake interpreter (a shell script that prints a probe
//! report and counts its runs) proves which lookups ran it.

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, SystemTime};

use super::*;
use crate::python::{RuntimeSource, find_or_provision_in, probe_in};

/// A fake interpreter in `dir/bin/python3` that prints a probe report and appends a line to `dir/runs` each
/// time it runs. With `numpy`, numpy lives in `dir/site`; else `dir/site` is an import directory without it.
/// `reports_itself`: false makes it a wrapper that says another binary ran.
fn fake_python(dir: &Path, numpy: bool, reports_itself: bool) -> PathBuf {
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::fs::create_dir_all(dir.join("site")).unwrap();
    let python = dir.join("bin/python3");
    let executable = if reports_itself {
        python.clone()
    } else {
        std::fs::write(dir.join("bin/real"), "").unwrap();
        dir.join("bin/real")
    };
    let (version, numpy_dir, error) = if numpy {
        let numpy = dir.join("site/numpy");
        std::fs::create_dir(&numpy).unwrap();
        std::fs::write(numpy.join("__init__.py"), "").unwrap();
        std::fs::write(numpy.join("version.py"), "").unwrap();
        (Some("9.9.9"), Some(dir.join("site")), None)
    } else {
        (
            None,
            None,
            Some("ModuleNotFoundError: No module named 'numpy'"),
        )
    };
    let report = serde_json::json!({
        "executable": executable, "version": "3.99.0", "prefix": dir, "base_prefix": dir,
        "real_dir": dir.join("bin"), "numpy": version, "numpy_dir": numpy_dir, "numpy_error": error,
        "watch": [dir.join("site"), dir.join("user-site")],
    });
    let script = format!(
        "#!/bin/sh\necho run >> '{}'\ncat <<'EOF'\n{report}\nEOF\n",
        dir.join("runs").display()
    );
    std::fs::write(&python, script).unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    python
}

fn runs(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("runs")).map_or(0, |s| s.lines().count())
}

/// A fake interpreter with numpy given as KT_PYTHON.
struct Fake {
    root: tempfile::TempDir,
    python: PathBuf,
}

impl Fake {
    fn new(reports_itself: bool) -> Fake {
        let root = tempfile::tempdir().unwrap();
        let python = fake_python(root.path(), true, reports_itself);
        Fake { root, python }
    }

    fn runs(&self) -> usize {
        runs(self.root.path())
    }

    fn lookup(&self) -> Lookup {
        Lookup {
            kt_python: Some(self.python.clone().into_os_string()),
            path_var: None,
            venv_dir: self.root.path().join("venv"),
            python_env: vec![("PYTHONPATH", None)],
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }
}

fn find(cache: &ProbeCache, lookup: &Lookup) -> PythonRuntime {
    // Running a script this process has just written fails with ETXTBSY while another test thread's fork
    // still holds the descriptor it was written through (until that child execs): the fake interpreter did not
    // run, so trying again changes no count.
    for _ in 0..100 {
        match cache.find(lookup, |watched| find_or_provision_in(lookup, watched)) {
            Err(e) if format!("{e:?}").contains("ExecutableFileBusy") => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other.unwrap(),
        }
    }
    panic!("the fake interpreter stayed busy (ETXTBSY) for a second");
}

fn touch(path: &Path, secs: u64) {
    let file = std::fs::File::open(path).unwrap();
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
        .unwrap();
}

#[test]
fn a_repeated_lookup_is_answered_without_running_python() {
    let (fake, cache_dir) = (Fake::new(true), tempfile::tempdir().unwrap());
    let cache = ProbeCache::in_dir(cache_dir.path().join("python-probe"));
    let lookup = fake.lookup();
    let first = find(&cache, &lookup);
    assert_eq!(fake.runs(), 1);
    let second = find(&cache, &lookup);
    assert_eq!(fake.runs(), 1, "the second lookup ran the interpreter");
    let uncached = probe_in(
        &lookup,
        &mut Watched::off(),
        crate::python::probe::Depth::Quick,
    )
    .unwrap();
    assert_eq!((&first, &second), (&uncached, &uncached));
    assert_eq!(first.numpy_version, "9.9.9");
    assert_eq!(first.interpreter, fake.python);
}

#[test]
fn a_changed_interpreter_or_numpy_is_probed_again() {
    let (fake, cache_dir) = (Fake::new(true), tempfile::tempdir().unwrap());
    let cache = ProbeCache::in_dir(cache_dir.path().to_path_buf());
    let lookup = fake.lookup();
    find(&cache, &lookup);
    let changes: [&dyn Fn(); 5] = [
        &|| touch(&fake.python, 1_000_000),
        &|| touch(&fake.path("site/numpy/__init__.py"), 2_000_000),
        &|| touch(&fake.path("site/numpy/version.py"), 3_000_000),
        // a package installed next to numpy (or a numpy in front of it)
        &|| std::fs::create_dir(fake.path("site/other")).unwrap(),
        // a user site directory created where the interpreter would look
        &|| std::fs::create_dir(fake.path("user-site")).unwrap(),
    ];
    for (i, change) in changes.iter().enumerate() {
        change();
        find(&cache, &lookup);
        assert_eq!(fake.runs(), i + 2, "change {i} was not noticed");
        find(&cache, &lookup);
        assert_eq!(
            fake.runs(),
            i + 2,
            "after change {i} the new answer was not kept"
        );
    }
}

#[test]
fn an_unreadable_entry_is_probed_again_and_replaced() {
    let (fake, cache_dir) = (Fake::new(true), tempfile::tempdir().unwrap());
    let cache = ProbeCache::in_dir(cache_dir.path().to_path_buf());
    let lookup = fake.lookup();
    let good = find(&cache, &lookup);
    let entries: Vec<_> = std::fs::read_dir(cache_dir.path()).unwrap().collect();
    assert_eq!(entries.len(), 1);
    let entry = entries[0].as_ref().unwrap().path();
    for garbage in ["{not json", "", "{\"key\": 3}"] {
        std::fs::write(&entry, garbage).unwrap();
        assert_eq!(find(&cache, &lookup), good);
    }
    assert_eq!(fake.runs(), 4);
    assert_eq!(find(&cache, &lookup), good);
    assert_eq!(fake.runs(), 4, "the replaced entry is used");
}

#[test]
fn each_kt_python_has_its_own_entry() {
    let (a, b, cache_dir) = (
        Fake::new(true),
        Fake::new(true),
        tempfile::tempdir().unwrap(),
    );
    let cache = ProbeCache::in_dir(cache_dir.path().to_path_buf());
    for _ in 0..2 {
        assert_eq!(find(&cache, &a.lookup()).interpreter, a.python);
        assert_eq!(find(&cache, &b.lookup()).interpreter, b.python);
    }
    assert_eq!((a.runs(), b.runs()), (1, 1));
    assert_eq!(std::fs::read_dir(cache_dir.path()).unwrap().count(), 2);
    // another PYTHONPATH is another lookup
    let mut other_path = a.lookup();
    other_path.python_env = vec![("PYTHONPATH", Some("/elsewhere".into()))];
    find(&cache, &other_path);
    assert_eq!(a.runs(), 2);
}

#[test]
fn a_wrapper_or_an_unwritable_cache_costs_a_probe_each_time_and_no_error() {
    let wrapper = Fake::new(false);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = ProbeCache::in_dir(cache_dir.path().to_path_buf());
    find(&cache, &wrapper.lookup());
    find(&cache, &wrapper.lookup());
    assert_eq!(wrapper.runs(), 2);
    assert_eq!(std::fs::read_dir(cache_dir.path()).unwrap().count(), 0);

    let fake = Fake::new(true);
    let not_a_dir = cache_dir.path().join("file");
    std::fs::write(&not_a_dir, "").unwrap();
    let cache = ProbeCache::in_dir(not_a_dir.join("python-probe"));
    find(&cache, &fake.lookup());
    find(&cache, &fake.lookup());
    assert_eq!(fake.runs(), 2);
}

#[test]
fn the_real_interpreter_gives_the_same_runtime_from_the_cache() {
    let real = PythonRuntime::probe()
        .unwrap_or_else(|e| panic!("{e} (these tests need numpy: run scripts/test.sh)"));
    let lookup = Lookup {
        kt_python: Some(real.interpreter.clone().into_os_string()),
        ..Lookup::from_env()
    };
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = ProbeCache::in_dir(cache_dir.path().to_path_buf());
    let probed = find(&cache, &lookup);
    assert_eq!(
        std::fs::read_dir(cache_dir.path()).unwrap().count(),
        1,
        "no entry for {}",
        real.interpreter.display()
    );
    let cached = find(&cache, &lookup);
    assert_eq!(cached, probed);
    assert_eq!(
        (
            &probed.interpreter,
            &probed.numpy_version,
            &probed.readable_paths
        ),
        (&real.interpreter, &real.numpy_version, &real.readable_paths)
    );
}

/// python3 on PATH without numpy, kt's own environment with it: the answer also depends on python3's import
/// directories, where a numpy installed later would make python3 the answer.
#[test]
fn the_fallback_to_kts_environment_is_kept_until_python3_may_have_numpy() {
    let root = tempfile::tempdir().unwrap();
    let (system, venv) = (root.path().join("system"), root.path().join("venv"));
    fake_python(&system, false, true);
    fake_python(&venv, true, true);
    let lookup = Lookup {
        kt_python: None,
        // the fake needs `cat`
        path_var: Some(
            std::env::join_paths([system.join("bin"), "/usr/bin".into(), "/bin".into()]).unwrap(),
        ),
        venv_dir: venv.clone(),
        python_env: vec![],
    };
    let cache = ProbeCache::in_dir(root.path().join("cache"));
    for _ in 0..2 {
        let rt = find(&cache, &lookup);
        assert_eq!(rt.source, RuntimeSource::ManagedVenv);
        assert_eq!(rt.interpreter, venv.join("bin/python3"));
    }
    assert_eq!((runs(&system), runs(&venv)), (1, 1));
    std::fs::create_dir(system.join("site/numpy")).unwrap();
    find(&cache, &lookup);
    assert_eq!((runs(&system), runs(&venv)), (2, 2));
}
