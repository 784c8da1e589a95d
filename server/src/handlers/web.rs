//! The web page, served from files embedded in the binary (no build step):
//! `index.html`, `app.js`, `style.css`, `favicon.svg`, and pinned builds of
//! the libraries it uses, each with its license (`assets/vendor/`, see its
//! README): mermaid (the graph), marked (Markdown), DOMPurify (sanitizes
//! the HTML Markdown makes), highlight.js (code blocks).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};

use crate::error::ApiError;
use crate::state::AppState;

/// The page, told the server's body limit (`data-body-limit` on its
/// body): it checks a message with its images against it before sending.
pub(crate) async fn index(State(state): State<Arc<AppState>>) -> Html<String> {
    Html(
        include_str!("../../assets/index.html")
            .replace(BODY_LIMIT_SLOT, &state.config.body_limit.to_string()),
    )
}

/// Where index.html takes the body limit.
const BODY_LIMIT_SLOT: &str = "{{BODY_LIMIT}}";

/// The embedded files: name, content type, bytes.
const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "favicon.svg",
        SVG,
        include_bytes!("../../assets/favicon.svg"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/app.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_bytes!("../../assets/style.css"),
    ),
    (
        "mermaid-11.12.1.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/vendor/mermaid-11.12.1.min.js"),
    ),
    (
        "mermaid-LICENSE",
        "text/plain; charset=utf-8",
        include_bytes!("../../assets/vendor/mermaid-LICENSE"),
    ),
    (
        "marked-18.2.1.umd.js",
        JS,
        include_bytes!("../../assets/vendor/marked-18.2.1.umd.js"),
    ),
    (
        "marked-LICENSE",
        TEXT,
        include_bytes!("../../assets/vendor/marked-LICENSE"),
    ),
    (
        "purify-3.4.18.min.js",
        JS,
        include_bytes!("../../assets/vendor/purify-3.4.18.min.js"),
    ),
    (
        "dompurify-LICENSE",
        TEXT,
        include_bytes!("../../assets/vendor/dompurify-LICENSE"),
    ),
    (
        "highlight-11.12.0.min.js",
        JS,
        include_bytes!("../../assets/vendor/highlight-11.12.0.min.js"),
    ),
    (
        "highlight-github-11.12.0.min.css",
        CSS,
        include_bytes!("../../assets/vendor/highlight-github-11.12.0.min.css"),
    ),
    (
        "highlight-LICENSE",
        TEXT,
        include_bytes!("../../assets/vendor/highlight-LICENSE"),
    ),
];

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";
const SVG: &str = "image/svg+xml";

/// `/favicon.ico`: the page's icon (an SVG, which browsers take there too).
pub(crate) async fn favicon() -> Response {
    asset(Path("favicon.svg".to_string())).await
}

/// One embedded file.
pub(crate) async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, kind, bytes)) => (
            [
                (header::CONTENT_TYPE, *kind),
                (header::CACHE_CONTROL, "public, max-age=3600"),
            ],
            *bytes,
        )
            .into_response(),
        None => ApiError::NotFound(format!("no asset `{name}`")).into_response(),
    }
}
