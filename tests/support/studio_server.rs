//! A `kt studio` process for the end-to-end tests (tests/studio*.rs): started on a free loopback port over
//! `home/runs`, its URL (with the access token) read from its first line, plain HTTP requests that carry
//! the access token as a script would.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};

use kt_pipeline::job::recorded_run::record_matmul_run;
use serde_json::Value;

use super::support::kt_command;

/// A `kt studio` serving `home/runs` on a free loopback port; killed when dropped.
pub struct Studio {
    pub child: Child,
    /// The URL printed, with its access token.
    pub url: String,
}

impl Studio {
    pub fn start(home: &Path, extra: &[&str]) -> Studio {
        Studio::start_logged(home, extra, None)
    }

    /// [`Studio::start`], with the studio's debug log (the time each page took to build) in `log`.
    pub fn start_logged(home: &Path, extra: &[&str], log: Option<&Path>) -> Studio {
        let mut cmd = kt_command(home);
        cmd.args(["studio", "--port", "0", "--runs-dir"])
            .arg(home.join("runs"))
            .args(extra)
            .stdout(Stdio::piped());
        match log {
            Some(path) => cmd
                .env("KT_LOG", "warn,kt_studio=debug")
                .stderr(std::fs::File::create(path).unwrap()),
            None => cmd.stderr(Stdio::null()),
        };
        let mut child = cmd.spawn().unwrap();
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

    pub fn addr(&self) -> String {
        let rest = self.url.trim_start_matches("http://");
        rest.split('/').next().unwrap_or(rest).to_string()
    }

    /// The access token in the printed URL.
    pub fn access_token(&self) -> String {
        self.url
            .split_once("?access=")
            .map(|(_, t)| t.to_string())
            .unwrap_or_else(|| panic!("the studio's URL carries no access token: {}", self.url))
    }

    /// The studio's page address without the token (what a person who did not get the URL would open).
    pub fn bare_url(&self) -> String {
        format!("http://{}/", self.addr())
    }

    /// One HTTP/1.1 request carrying the access token, as a script would; returns the status and the body.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String) {
        let token = self.access_token();
        let mut with = vec![("x-kt-studio-access", token.as_str())];
        with.extend_from_slice(headers);
        self.request_as(method, path, &with, body)
    }

    /// A GET of `path` without the access token header; returns the status and the answer's head, lowercased.
    pub fn request_head(&self, path: &str) -> (u16, String) {
        let (status, head, _) = self.exchange("GET", path, &[], "");
        (status, head.to_lowercase())
    }

    /// One HTTP/1.1 request with exactly `headers` (no access token unless among them); returns the
    /// status and the body.
    pub fn request_as(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String) {
        let (status, _, body) = self.exchange(method, path, headers, body);
        (status, body)
    }

    /// Sends one request; returns the status, the answer's head and its body.
    fn exchange(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String, String) {
        http_exchange(&self.addr(), method, path, headers, body)
    }

    /// The session token embedded in the page.
    pub fn session_token(&self) -> String {
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

/// One HTTP/1.1 request to `addr` with exactly `headers`; returns the status, the answer's head and its body.
pub fn http_exchange(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
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
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    (status, head.to_string(), body.to_string())
}

pub fn record_run(home: &Path) -> String {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(record_matmul_run(&home.join("runs"))).run_id()
}

pub fn history(home: &Path, id: &str) -> Value {
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
