//! A headless Chromium driven over the DevTools protocol through a pipe (`--remote-debugging-pipe`: the
//! browser reads commands on fd 3 and writes answers on fd 4, each message ended by a NUL byte). No
//! websocket, no driver binary, no crate beyond libc: robust on a small CI machine. (Included by several test files, each using part of it.)

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

/// Chromium's name on this machine (Debian: `chromium`; Ubuntu: `chromium-browser`).
pub fn find_chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser"].iter().find_map(|name| {
        let ok = Command::new(name)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        ok.then(|| PathBuf::from(name))
    })
}

/// The flags Chromium needs headless on a machine with no network and no GPU.
pub fn headless_flags(profile: &Path) -> Vec<String> {
    [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("--user-data-dir={}", profile.display())])
    .collect()
}

/// A running browser and one page in it.
pub struct Browser {
    child: Child,
    to_browser: std::fs::File,
    from_browser: Receiver<Value>,
    next_id: u64,
    session: String,
    _profile: tempfile::TempDir,
}

fn pipe() -> (RawFd, RawFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2 failed");
    (fds[0], fds[1])
}

impl Browser {
    /// Starts Chromium and opens a blank page of `width`×`height` CSS pixels.
    pub fn start(width: u32, height: u32) -> Browser {
        let chromium = find_chromium().expect(
            "chromium is not installed (Debian: apt-get install chromium; scripts/test.sh does it as root)",
        );
        let profile = tempfile::tempdir().unwrap();
        let (cmd_read, cmd_write) = pipe();
        let (answer_read, answer_write) = pipe();
        let mut command = Command::new(chromium);
        command
            .args(headless_flags(profile.path()))
            .arg("--remote-debugging-pipe")
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: only async-signal-safe calls between fork and exec. Both ends are first moved above fd 10
        // so that placing them on 3 and 4 cannot overwrite one with the other; dup2 clears close-on-exec.
        unsafe {
            command.pre_exec(move || {
                let high_cmd = libc::fcntl(cmd_read, libc::F_DUPFD, 10);
                let high_answer = libc::fcntl(answer_write, libc::F_DUPFD, 10);
                if high_cmd < 0
                    || high_answer < 0
                    || libc::dup2(high_cmd, 3) < 0
                    || libc::dup2(high_answer, 4) < 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("chromium starts");
        // SAFETY: these descriptors came from pipe2 above and are owned here from now on.
        unsafe {
            libc::close(cmd_read);
            libc::close(answer_write);
        }
        let to_browser = unsafe { std::fs::File::from_raw_fd(cmd_write) };
        let answers = unsafe { std::fs::File::from_raw_fd(answer_read) };
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(answers);
            loop {
                let mut message = Vec::new();
                match reader.read_until(0, &mut message) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        message.pop();
                        if let Ok(v) = serde_json::from_slice::<Value>(&message)
                            && tx.send(v).is_err()
                        {
                            return;
                        }
                    }
                }
            }
        });
        let mut browser = Browser {
            child,
            to_browser,
            from_browser: rx,
            next_id: 0,
            session: String::new(),
            _profile: profile,
        };
        let target = browser.call("Target.createTarget", json!({"url": "about:blank"}));
        let attached = browser.call(
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        );
        browser.session = attached["sessionId"].as_str().unwrap().to_string();
        browser.page_call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        );
        browser
    }

    fn send(
        &mut self,
        method: &str,
        params: Value,
        session: Option<String>,
    ) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            message["sessionId"] = Value::String(s);
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        self.to_browser.write_all(&bytes).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.from_browser.recv_timeout(left) {
                Ok(v) if v["id"] == id => {
                    if let Some(e) = v.get("error") {
                        return Err(format!("{method} failed: {e}"));
                    }
                    return Ok(v["result"].clone());
                }
                Ok(_) => continue, // an event
                Err(RecvTimeoutError::Timeout) => {
                    panic!("{method}: chromium did not answer in 30 s")
                }
                Err(RecvTimeoutError::Disconnected) => panic!("{method}: chromium exited"),
            }
        }
    }

    /// A browser-level command.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, None).unwrap()
    }

    /// A command to the page.
    pub fn page_call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.send(method, params, Some(session)).unwrap()
    }

    pub fn goto(&mut self, url: &str) {
        self.page_call("Page.navigate", json!({"url": url}));
    }

    /// Evaluates `expression` in the page (promises awaited) and returns its value.
    pub fn eval(&mut self, expression: &str) -> Value {
        self.try_eval(expression).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Browser::eval`], or why it failed (it threw; the page was between two documents).
    pub fn try_eval(&mut self, expression: &str) -> Result<Value, String> {
        let session = self.session.clone();
        let r = self.send(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            Some(session),
        )?;
        if let Some(e) = r.get("exceptionDetails") {
            return Err(format!("`{expression}` threw: {e}"));
        }
        Ok(r["result"]["value"].clone())
    }

    /// Waits until `expression` is true in the page; panics with `what` after `timeout`.
    pub fn wait_for(&mut self, expression: &str, timeout: Duration, what: &str) {
        let deadline = Instant::now() + timeout;
        loop {
            // Errors while a page loads are waited out like a false.
            if self.try_eval(&format!("!!({expression})")) == Ok(Value::Bool(true)) {
                return;
            }
            if Instant::now() > deadline {
                let body = self.try_eval("document.body.innerText.slice(0, 2000)");
                panic!("timed out waiting for {what} (`{expression}`); the page shows:\n{body:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Saves a PNG of the page's viewport.
    pub fn screenshot(&mut self, path: &Path) {
        let r = self.page_call("Page.captureScreenshot", json!({"format": "png"}));
        let png = base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().unwrap())
            .unwrap();
        std::fs::write(path, png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
