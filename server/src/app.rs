//! The router: every route, and the layers that guard them (access log,
//! security headers, one error shape, CORS when configured, the request
//! checks of `guard.rs`, body limit and timeouts).
//!
//! ```text
//!  /                         the web page (handlers/web.rs)   /assets/*  its files, /favicon.ico
//!  /v1/models[/{id}], /v1/chat/completions              handlers/openai.rs
//!  /api/usage                                           handlers/usage.rs
//!  /metrics  (Prometheus text; the bearer token when tokens are on)  handlers/metrics.rs
//!  /v1/tools, /v1/tools/execute                         handlers/tools.rs
//!  /api/sessions[/{id}[/messages|/approvals|/continue|/stop|/nodes/{node}]]  handlers/sessions.rs
//!  /api/sessions/{id}/runs, /api/runs/{id}[/cancel|/events]                handlers/runs.rs
//!
//!  outermost ─▶ access::log (request id, span, one line per request)
//!            ─▶ guard::security_headers (CSP, X-Frame-Options, nosniff, no referrer)
//!            ─▶ error::json_errors (every error answer in the OpenAI shape)
//!            ─▶ CORS (off unless origins are named)
//!            ─▶ guard::check (Host, Origin, JSON content type, URL and header sizes)
//!            ─▶ RequestBodyTimeout ─▶ Timeout (408) ─▶ RequestBodyLimit (413) ─▶ handler
//! ```

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware;
use axum::routing::{get, post};
use axum::Router;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::TimeoutLayer;

use crate::slots::Slots;

use crate::access::{self, SESSION_HEADER};
use crate::error::{self, ApiError};
use crate::guard::{self, Guard};
use crate::handlers::{branches, input, metrics, openai, runs, sessions, tools, usage, web};
use crate::state::AppState;

/// The server's routes over `state` (the `Host` check knows only the
/// `--allow-host` names: [`serve`](crate::serve()) adds the bound address).
pub fn router(state: Arc<AppState>) -> Router {
    app(state, None)
}

/// The routes, with the `Host` check for a server bound at `local`.
pub(crate) fn app(state: Arc<AppState>, local: Option<SocketAddr>) -> Router {
    let config = &state.config;
    let guard = Arc::new(Guard {
        local,
        allow_hosts: config.allow_hosts.clone(),
        tokens: !config.tokens.is_empty(),
        cors_origins: config.cors_origins.clone(),
    });
    let mut app = Router::new()
        .route("/", get(web::index))
        .route("/assets/:name", get(web::asset))
        .route("/favicon.ico", get(web::favicon))
        .route("/v1/models", get(openai::models))
        .route("/v1/models/:id", get(openai::model))
        .route("/v1/chat/completions", post(openai::completions))
        .route("/v1/tools", get(tools::list))
        .route("/v1/tools/execute", post(tools::execute))
        .route("/api/sessions", get(sessions::list).post(sessions::create))
        .route(
            "/api/sessions/:id",
            get(sessions::show)
                .patch(sessions::rename)
                .delete(sessions::delete),
        )
        .route("/api/sessions/:id/nodes/:node_id", get(sessions::node))
        .route(
            "/api/sessions/:id/continue",
            post(sessions::continue_cut_off),
        )
        .route("/api/sessions/:id/stop", post(sessions::stop))
        .route("/api/sessions/:id/fork", post(branches::fork))
        .route("/api/sessions/:id/rewind", post(branches::rewind))
        .route("/api/sessions/:id/redo", post(branches::redo))
        .route("/api/sessions/:id/diff/:other", get(branches::diff))
        .route("/api/sessions/:id/messages", post(sessions::message))
        .route("/api/sessions/:id/approvals", post(sessions::approvals))
        .route("/api/sessions/:id/input/:input", post(input::answer))
        .route(
            "/api/sessions/:id/runs",
            get(runs::of_session).post(runs::create),
        )
        .route("/api/runs/:id", get(runs::show))
        .route("/api/runs/:id/cancel", post(runs::cancel))
        .route("/api/runs/:id/events", get(runs::events))
        .route("/api/usage", get(usage::usage))
        .route("/metrics", get(metrics::metrics))
        .fallback(|| async { ApiError::NotFound("no such endpoint".to_string()) })
        .layer(DefaultBodyLimit::max(config.body_limit))
        .layer(RequestBodyLimitLayer::new(config.body_limit))
        .layer(middleware::from_fn_with_state(
            Slots::new(
                config.slots.clone(),
                config.tokens.clone(),
                config.body_limit,
            ),
            crate::slots::admit,
        ))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            config.request_timeout,
        ))
        .layer(middleware::from_fn_with_state(guard, guard::check))
        .route_layer(middleware::from_fn(crate::metrics::track));
    if !config.cors_origins.is_empty() {
        let origins: Vec<HeaderValue> = config
            .cors_origins
            .iter()
            .filter_map(|o| HeaderValue::from_str(o).ok())
            .collect();
        app = app.layer(
            CorsLayer::new()
                .allow_origin(AllowOrigin::list(origins))
                .allow_methods([Method::GET, Method::POST, Method::PATCH, Method::DELETE])
                // The named origins may send any header: the browser OpenAI
                // SDK adds its own (`x-stainless-*`), and names them in the
                // preflight.
                .allow_headers(tower_http::cors::AllowHeaders::mirror_request())
                .expose_headers([HeaderName::from_static(SESSION_HEADER)]),
        );
    }
    app.layer(middleware::from_fn(error::json_errors))
        .layer(middleware::from_fn(guard::security_headers))
        .layer(middleware::from_fn(access::log))
        .with_state(state)
}
