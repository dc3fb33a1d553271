//! The page: one HTML shell, hand-written scripts (the time travel and the steer tab apart from the rest) and
//! one stylesheet, built into the binary (no CDN, no build step). The session token and the read-only flag reach the script through `<meta>` tags, so the
//! Content-Security-Policy can forbid inline scripts altogether.

use axum::http::header;
use axum::response::IntoResponse;

const INDEX: &str = include_str!("../assets/index.html");
const SCRIPT: &str = include_str!("../assets/studio.js");
const TIMELINE: &str = include_str!("../assets/timeline.js");
const STEER: &str = include_str!("../assets/steer.js");
const STYLE: &str = include_str!("../assets/studio.css");

/// Scripts and styles from the studio itself only; SVG drawn inline; nothing fetched from elsewhere.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// The page with this session's token and mode.
pub fn index_html(session_token: &str, read_only: bool) -> String {
    INDEX
        .replace("__KT_STUDIO_TOKEN__", session_token)
        .replace("__KT_READ_ONLY__", if read_only { "true" } else { "false" })
}

fn javascript(text: &'static str) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        text,
    )
}

pub async fn script() -> impl IntoResponse {
    javascript(SCRIPT)
}

pub async fn timeline_script() -> impl IntoResponse {
    javascript(TIMELINE)
}

pub async fn steer_script() -> impl IntoResponse {
    javascript(STEER)
}

pub async fn style() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_carries_the_token_and_loads_nothing_from_elsewhere() {
        let page = index_html("t0k3n", true);
        assert!(page.contains(r#"<meta name="kt-studio-token" content="t0k3n">"#));
        assert!(page.contains(r#"<meta name="kt-studio-read-only" content="true">"#));
        assert!(!page.contains("__KT_"));
        for text in [INDEX, SCRIPT, TIMELINE, STEER, STYLE] {
            // SVG's namespace is a name, not something fetched.
            let text = text.replace("http://www.w3.org/2000/svg", "");
            assert!(
                !text.contains("http://") && !text.contains("https://"),
                "no external resource"
            );
        }
        assert!(
            !INDEX.contains("<script>"),
            "no inline script (the CSP forbids it)"
        );
    }
}
