//! The web page, served from files embedded in the binary (no build step):
//! `index.html`, `app.js`, `style.css`, and a pinned `mermaid` build with
//! its license (`assets/`).

use axum::extract::Path;
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};

use crate::error::ApiError;

/// The page.
pub(crate) async fn index() -> Html<&'static str> {
    Html(include_str!("../assets/index.html"))
}

/// The embedded files: name, content type, bytes.
const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/app.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_bytes!("../assets/style.css"),
    ),
    (
        "mermaid-11.12.1.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/vendor/mermaid-11.12.1.min.js"),
    ),
    (
        "mermaid-LICENSE",
        "text/plain; charset=utf-8",
        include_bytes!("../assets/vendor/mermaid-LICENSE"),
    ),
];

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
