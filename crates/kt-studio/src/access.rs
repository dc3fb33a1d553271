//! Who may use the studio, and for what. Safe by default:
//! - it binds a loopback address; any other needs `allow_remote` and an access token, which every request
//!   then carries (header `x-kt-studio-access` or `?access=`);
//! - on loopback, a request whose `Host` is not a loopback name is refused, so a web page elsewhere cannot
//!   reach the studio through DNS rebinding;
//! - every state-changing request (any method but GET/HEAD) carries the per-session token, made at start and
//!   embedded in the page (header `x-kt-studio-token`): a cross-site form cannot set that header, and a
//!   browser will not send it cross-origin without a CORS answer the studio never gives;
//! - `read_only` refuses every state-changing request.

use std::net::SocketAddr;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::StudioError;

/// Header carrying the per-session token on state-changing requests.
pub const SESSION_HEADER: &str = "x-kt-studio-token";
/// Header carrying the access token when the studio is served on a non-loopback address.
pub const ACCESS_HEADER: &str = "x-kt-studio-access";

/// The studio's access rules for one session.
#[derive(Debug, Clone)]
pub struct Access {
    session_token: String,
    access_token: Option<String>,
    read_only: bool,
    loopback: bool,
}

impl Access {
    /// Checks the address against the rules and makes the session token. `access_token` is required (and
    /// used) only off loopback.
    pub fn new(
        addr: SocketAddr,
        allow_remote: bool,
        access_token: Option<String>,
        read_only: bool,
    ) -> Result<Self, StudioError> {
        let loopback = addr.ip().is_loopback();
        let access_token = if loopback {
            None
        } else {
            match access_token {
                Some(t) if allow_remote && t.len() >= 16 => Some(t),
                _ => return Err(StudioError::RemoteWithoutToken { addr }),
            }
        };
        Ok(Self {
            session_token: uuid::Uuid::new_v4().simple().to_string(),
            access_token,
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

    /// The rules a request must pass before any handler sees it.
    fn check(
        &self,
        method: &Method,
        headers: &HeaderMap,
        query: Option<&str>,
    ) -> Result<(), StudioError> {
        if self.loopback {
            let host = headers
                .get(axum::http::header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("");
            if !is_loopback_host(host) {
                return Err(StudioError::Forbidden);
            }
        }
        if let Some(expected) = &self.access_token {
            let given = header(headers, ACCESS_HEADER).or_else(|| query_param(query, "access"));
            if given.as_deref() != Some(expected.as_str()) {
                return Err(StudioError::Forbidden);
            }
        }
        if method != Method::GET && method != Method::HEAD {
            if self.read_only {
                return Err(StudioError::ReadOnly("changing a run"));
            }
            if header(headers, SESSION_HEADER).as_deref() != Some(self.session_token.as_str()) {
                return Err(StudioError::Forbidden);
            }
        }
        Ok(())
    }
}

/// The middleware that applies [`Access`] to every request.
pub async fn guard(
    State(access): State<std::sync::Arc<Access>>,
    request: Request,
    next: Next,
) -> Response {
    match access.check(request.method(), request.headers(), request.uri().query()) {
        Ok(()) => next.run(request).await,
        Err(e) => e.into_response(),
    }
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
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
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn a_remote_address_needs_the_flag_and_a_long_token() {
        let remote: SocketAddr = "0.0.0.0:7000".parse().unwrap();
        assert!(Access::new(remote, false, Some("a".repeat(20)), false).is_err());
        assert!(Access::new(remote, true, None, false).is_err());
        assert!(Access::new(remote, true, Some("short".into()), false).is_err());
        let ok = Access::new(remote, true, Some("a".repeat(20)), false).unwrap();
        let host = headers(&[("host", "example.org:7000")]);
        assert!(
            ok.check(&Method::GET, &host, None).is_err(),
            "no access token"
        );
        let with = format!("access={}", "a".repeat(20));
        ok.check(&Method::GET, &host, Some(&with)).unwrap();
    }

    #[test]
    fn changes_need_the_session_token_and_are_refused_read_only() {
        let local: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let access = Access::new(local, false, None, false).unwrap();
        let plain = headers(&[("host", "127.0.0.1:4000")]);
        access.check(&Method::GET, &plain, None).unwrap();
        assert!(matches!(
            access.check(&Method::POST, &plain, None),
            Err(StudioError::Forbidden)
        ));
        let token = access.session_token().to_string();
        let signed = headers(&[("host", "127.0.0.1:4000"), (SESSION_HEADER, &token)]);
        access.check(&Method::POST, &signed, None).unwrap();
        let read_only = Access::new(local, false, None, true).unwrap();
        let theirs = read_only.session_token().to_string();
        let signed = headers(&[("host", "localhost:4000"), (SESSION_HEADER, &theirs)]);
        assert!(matches!(
            read_only.check(&Method::POST, &signed, None),
            Err(StudioError::ReadOnly(_))
        ));
    }

    #[test]
    fn a_foreign_host_name_on_loopback_is_refused() {
        let access = Access::new("127.0.0.1:0".parse().unwrap(), false, None, false).unwrap();
        let rebound = headers(&[("host", "attacker.example:4000")]);
        assert!(access.check(&Method::GET, &rebound, None).is_err());
        for ok in ["localhost", "127.0.0.1:80", "[::1]:8080"] {
            assert!(is_loopback_host(ok), "{ok}");
        }
    }
}
