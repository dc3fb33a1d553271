//! The crate's one error type, and how each kind reaches the browser (an HTTP status with the message).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// Everything the studio can refuse or fail at.
#[derive(Debug, thiserror::Error)]
pub enum StudioError {
    #[error(
        "kt studio binds {addr}, which is not a loopback address: anyone who can reach it could read and steer runs. \
         Pass --allow-remote and --token TOKEN (at least 16 characters) to serve it there, or bind 127.0.0.1"
    )]
    RemoteWithoutToken { addr: std::net::SocketAddr },
    #[error(
        "could not listen on {addr}: {source} (is another kt studio running there? try --port 0 for any free port)"
    )]
    Bind {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the web server stopped: {0}")]
    Serve(#[source] std::io::Error),
    #[error(
        "the studio's --token must be at least 16 characters of letters, digits, `-`, `_`, `.` or `~` \
         (try `openssl rand -hex 16`)"
    )]
    BadToken,
    #[error(
        "this request needs the studio's session token (header x-kt-studio-token); reload the page"
    )]
    Forbidden,
    #[error(
        "this request needs the studio's access token: open the URL `kt studio` printed (it ends in \
         `/?access=TOKEN`), or send header x-kt-studio-access"
    )]
    NoAccess,
    #[error(
        "a change must come from the studio's own page (this request's Origin is another site)"
    )]
    CrossOrigin,
    #[error("kt studio runs with --read-only: {0} is refused")]
    ReadOnly(&'static str),
    #[error("{0}")]
    BadRequest(String),
    #[error(transparent)]
    Runs(#[from] kt_runs::RunsError),
    #[error("could not start `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("a background task failed: {0}")]
    Task(String),
}

impl StudioError {
    fn status(&self) -> StatusCode {
        match self {
            StudioError::Forbidden | StudioError::NoAccess | StudioError::CrossOrigin => {
                StatusCode::FORBIDDEN
            }
            StudioError::ReadOnly(_) => StatusCode::METHOD_NOT_ALLOWED,
            StudioError::BadRequest(_) => StatusCode::BAD_REQUEST,
            StudioError::Runs(e) => match e {
                kt_runs::RunsError::RunNotFound { .. }
                | kt_runs::RunsError::NoCheckpoint { .. } => StatusCode::NOT_FOUND,
                kt_runs::RunsError::BadCheckpoint { .. }
                | kt_runs::RunsError::UnknownField { .. }
                | kt_runs::RunsError::UnknownNode { .. }
                | kt_runs::RunsError::BadSetting { .. }
                | kt_runs::RunsError::Usage(_) => StatusCode::BAD_REQUEST,
                kt_runs::RunsError::StaleAnswer(_) => StatusCode::CONFLICT,
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            },
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl IntoResponse for StudioError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::warn!(error = %self, "request failed");
        }
        let body = serde_json::json!({ "error": self.to_string() });
        (status, axum::Json(body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_map_to_client_errors_and_say_what_to_do() {
        assert_eq!(StudioError::Forbidden.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            StudioError::ReadOnly("fork").status(),
            StatusCode::METHOD_NOT_ALLOWED
        );
        let missing = StudioError::Runs(kt_runs::RunsError::NoCheckpoint {
            run: "r".into(),
            checkpoint: 9,
        });
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
        let remote = StudioError::RemoteWithoutToken {
            addr: "0.0.0.0:8080".parse().unwrap(),
        };
        assert!(remote.to_string().contains("--allow-remote"));
    }
}
