//! Running this test binary again as another local user, from root: the tests that must hold for an ordinary
//! user with a home directory (not only for root), and a second user acting on the first one's runs. The user
//! is `$KT_CORPUS_USER` (scripts/test.sh creates it with `useradd -m`, as for the sandbox's attack corpus).
//!
//! The checkout may lie where that user cannot enter (under /root), so kt, the test binary and the workspace's
//! data (kernels, prompts, scripted answers) are copied to a directory it can read; `KT_TEST_BIN` and
//! `KT_TEST_ROOT` point the tests there, and `KT_EXPECT_UID` makes every kt the tests start check that they
//! really run as that user.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../../crates/kt-sandbox/tests/attacks/user_python.rs"]
mod user_python;

/// The other user, as root sees it.
pub struct OtherUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub home: PathBuf,
}

/// What that user runs: copies it can read, removed when dropped.
pub struct Staged {
    dir: tempfile::TempDir,
    pub test_binary: PathBuf,
    pub kt: PathBuf,
    pub root: PathBuf,
    python: Option<(PathBuf, Option<PathBuf>)>,
}

/// What a run of test functions as the other user printed, and whether all of them passed.
pub struct Ran {
    pub passed: bool,
    pub text: String,
}

impl OtherUser {
    /// `$KT_CORPUS_USER`; panics saying what is missing (the test is meant to run as root from scripts/test.sh).
    pub fn from_env() -> OtherUser {
        assert!(
            std::fs::metadata("/proc/self")
                .is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0),
            "run as root: this test runs kt as $KT_CORPUS_USER (scripts/test.sh does)"
        );
        let name = std::env::var("KT_CORPUS_USER").expect(
            "KT_CORPUS_USER names an ordinary user with a home directory (scripts/test.sh: useradd -m kt-corpus)",
        );
        let (uid, gid, home) = user_python::user(&name).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            uid != 0 && home.is_dir(),
            "{name} needs a uid of its own and a home: {home:?}"
        );
        OtherUser {
            name,
            uid,
            gid,
            home,
        }
    }

    /// Copies of kt, this test binary and the workspace's data, readable by the user; with `python`, a python3
    /// with numpy that the user can run (for tests whose runs make test data).
    pub fn stage(&self, python: bool) -> Staged {
        let dir = tempfile::Builder::new()
            .prefix("kt-other-user")
            .tempdir()
            .unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let copy = |from: &Path, to: &Path| {
            let status = Command::new("cp")
                .arg("-a")
                .arg(from)
                .arg(to)
                .status()
                .unwrap();
            assert!(status.success(), "copying {} failed", from.display());
        };
        let test_binary = dir.path().join("tests");
        let kt = dir.path().join("kt");
        copy(&std::env::current_exe().unwrap(), &test_binary);
        copy(Path::new(env!("CARGO_BIN_EXE_kt")), &kt);
        let root = dir.path().join("workspace");
        std::fs::create_dir(&root).unwrap();
        for entry in std::fs::read_dir(super::root()).unwrap().flatten() {
            let name = entry.file_name();
            if name != "target" && name != ".git" {
                copy(&entry.path(), &root.join(&name));
            }
        }
        let status = Command::new("chmod")
            .args(["-R", "a+rX"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(status.success());
        let python = python.then(|| {
            let interpreter = std::env::var_os("KT_PYTHON")
                .map_or_else(|| PathBuf::from("python3"), PathBuf::from);
            user_python::python_for(self.uid, self.gid, &interpreter, dir.path()).unwrap_or_else(
                |why| {
                    panic!(
                        "no python3 with numpy that {} can run here: {why}",
                        self.name
                    )
                },
            )
        });
        Staged {
            dir,
            test_binary,
            kt,
            root,
            python,
        }
    }

    /// Runs the test functions `tests` (exact names, ignored ones included) of the staged test binary as the
    /// user, with its home as `$HOME`, from `cwd`, with `env` added.
    pub fn run_tests(
        &self,
        staged: &Staged,
        tests: &[&str],
        cwd: &Path,
        env: &[(&str, &Path)],
    ) -> Ran {
        let mut command = Command::new("setpriv");
        command
            .args(user_python::as_user(self.uid, self.gid))
            .arg(&staged.test_binary)
            .args([
                "--exact",
                "--include-ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .args(tests)
            .current_dir(cwd)
            .env_remove("KT_RUNS_DIR")
            .env_remove("XDG_DATA_HOME")
            .env("HOME", &self.home)
            .env("USER", &self.name)
            .env("TMPDIR", "/tmp")
            .env("KT_TEST_BIN", &staged.kt)
            .env("KT_TEST_ROOT", &staged.root)
            .env("KT_EXPECT_UID", self.uid.to_string());
        if let Some((interpreter, pythonpath)) = &staged.python {
            command.env("KT_PYTHON", interpreter);
            if let Some(path) = pythonpath {
                command.env("PYTHONPATH", path);
            }
        }
        for (key, value) in env {
            command.env(key, value);
        }
        let out = command.output().expect("setpriv runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // every test named must have run and passed: a renamed test must not make this pass empty-handed
        let all = format!("test result: ok. {} passed", tests.len());
        Ran {
            passed: out.status.success() && text.contains(&all),
            text,
        }
    }
}

impl Staged {
    /// A directory inside the staging area, owned by the user (its project, say).
    pub fn owned_dir(&self, user: &OtherUser, name: &str) -> PathBuf {
        let dir = self.dir.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let status = Command::new("chown")
            .arg(format!("{}:{}", user.uid, user.gid))
            .arg(&dir)
            .status()
            .unwrap();
        assert!(status.success());
        dir
    }
}
