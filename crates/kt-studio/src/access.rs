//! Who may use the studio, and for what. Safe by default, loopback included (another local user can reach a
//! loopback port too):
//! - every request carries the access token: made at start (or `--token` off loopback) and printed in the URL
//!   (`/?access=TOKEN`); the first request with it in the URL gets it back as an HttpOnly, SameSite=Strict
//!   cookie and is sent on to the same page without it, as Jupyter does, so the script, stylesheet and event
//!   streams the page loads carry it without the page ever seeing it;
//! - it binds a loopback address unless told `allow_remote` with a token of its own;
//! - on loopback, a request whose `Host` is not a loopback name is refused, so a web page elsewhere cannot
//!   reach the studio through DNS rebinding;
//! - every state-changing request (any method but GET/HEAD) comes from the studio's own page: an `Origin`
//!   or `Sec-Fetch-Site` that says otherwise is refused, and it carries the per-session token embedded in the
//!   page (header `x-kt-studio-token`), which a cross-site form cannot set;
//! - `read_only` refuses every state-changing request.

use std::net::SocketAddr;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::StudioError;

/// Header carrying the per-session token on state-changing requests.
pub const SESSION_HEADER: &str = "x-kt-studio-token";
/// Header carrying the access token (scripts; the page uses the cookie).
pub const ACCESS_HEADER: &str = "x-kt-studio-access";
/// The URL parameter carrying the access token (the printed URL).
pub const ACCESS_PARAM: &str = "access";

/// The studio's access rules for one session.
#[derive(Debug, Clone)]
pub struct Access {
    session_token: String,
    access_token: String,
    /// Cookies are shared by every port of a host: each studio names its own after its port.
    cookie: String,
    read_only: bool,
    loopback: bool,
}

/// A request's standing once its access token is checked.
#[derive(Debug, PartialEq, Eq)]
enum Admitted {
    /// By the cookie or the header.
    Plain,
    /// By the token in the URL: the answer sets the cookie.
    FromUrl,
}

impl Access {
    /// Checks the address against the rules and makes the tokens. `access_token` is required off loopback;
    /// on loopback one is made when none is given.
    pub fn new(
        addr: SocketAddr,
        allow_remote: bool,
        access_token: Option<String>,
        read_only: bool,
    ) -> Result<Self, StudioError> {
        let loopback = addr.ip().is_loopback();
        if !loopback && (!allow_remote || access_token.is_none()) {
            return Err(StudioError::RemoteWithoutToken { addr });
        }
        let access_token = access_token.unwrap_or_else(new_token);
        let usable = |c: char| c.is_ascii_alphanumeric() || "-_.~".contains(c);
        if access_token.len() < 16 || !access_token.chars().all(usable) {
            return Err(StudioError::BadToken);
        }
        Ok(Self {
            session_token: new_token(),
            access_token,
            cookie: format!("kt_studio_{}", addr.port()),
            read_only,
            loopback,
        })
    }

    pub fn session_token(&self) -> &str {
        &self.session_token
    }

    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// The URL to open: the studio at `addr` with the access token. An address that names every interface
    /// (`0.0.0.0`) is not one a browser can open: the machine's host name stands for it.
    pub fn url(&self, addr: SocketAddr) -> String {
        let host = if addr.ip().is_unspecified() {
            format!("{}:{}", host_name(), addr.port())
        } else {
            addr.to_string()
        };
        format!("http://{host}/?{ACCESS_PARAM}={}", self.access_token)
    }

    /// The rules a request must pass before any handler sees it.
    fn check(
        &self,
        method: &Method,
        headers: &HeaderMap,
        query: Option<&str>,
    ) -> Result<Admitted, StudioError> {
        let host = header(headers, header::HOST.as_str()).unwrap_or_default();
        if self.loopback && !is_loopback_host(&host) {
            return Err(StudioError::Forbidden);
        }
        let admitted = if cookie(headers, &self.cookie).as_deref() == Some(&self.access_token)
            || header(headers, ACCESS_HEADER).as_deref() == Some(&self.access_token)
        {
            Admitted::Plain
        } else if query_param(query, ACCESS_PARAM).as_deref() == Some(&self.access_token) {
            Admitted::FromUrl
        } else {
            return Err(StudioError::NoAccess);
        };
        if method != Method::GET && method != Method::HEAD {
            if self.read_only {
                return Err(StudioError::ReadOnly("changing a run"));
            }
            if !same_origin(headers, &host) {
                return Err(StudioError::CrossOrigin);
            }
            if header(headers, SESSION_HEADER).as_deref() != Some(self.session_token.as_str()) {
                return Err(StudioError::Forbidden);
            }
        }
        Ok(admitted)
    }

    /// `Set-Cookie` for the access token: sent back on every request to this host and port's studio, never
    /// readable by a script, never sent from another site.
    fn set_cookie(&self) -> Option<HeaderValue> {
        HeaderValue::from_str(&format!(
            "{}={}; HttpOnly; SameSite=Strict; Path=/",
            self.cookie, self.access_token
        ))
        .ok()
    }
}

/// This machine's host name (`localhost` when it cannot be read).
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

fn new_token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// The middleware that applies [`Access`] to every request.
pub async fn guard(
    State(access): State<std::sync::Arc<Access>>,
    request: Request,
    next: Next,
) -> Response {
    match access.check(request.method(), request.headers(), request.uri().query()) {
        Ok(Admitted::Plain) => next.run(request).await,
        Ok(Admitted::FromUrl) => {
            // The page itself is sent on without the token in its URL (out of the history and of what a
            // screenshot shows); anything else (a script fetching with `?access=`) is answered as asked.
            let mut response = if request.method() == Method::GET && request.uri().path() == "/" {
                (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response()
            } else {
                next.run(request).await
            };
            if let Some(c) = access.set_cookie() {
                response.headers_mut().append(header::SET_COOKIE, c);
            }
            response
        }
        Err(e) => e.into_response(),
    }
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// The value of cookie `name` among the request's `Cookie` headers.
fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (k, v) = pair.trim().split_once('=')?;
            (k == name).then(|| v.to_string())
        })
}

/// A change comes from the studio's own page: its `Origin` (when the browser sends one) is this host, and
/// the browser does not call it cross-site.
fn same_origin(headers: &HeaderMap, host: &str) -> bool {
    let origin_ok = header(headers, header::ORIGIN.as_str())
        .is_none_or(|o| o == format!("http://{host}") || o == format!("https://{host}"));
    let site_ok =
        header(headers, "sec-fetch-site").is_none_or(|s| s == "same-origin" || s == "none");
    origin_ok && site_ok
}

fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    query?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == name).then(|| v.to_string())
    })
}

/// `127.0.0.1[:port]`, `localhost[:port]`, `[::1][:port]`.
fn is_loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host, |(h, _)| h)
    };
    name == "localhost"
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
#[path = "access_tests.rs"]
mod tests;
