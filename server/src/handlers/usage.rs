//! `GET /api/usage?user=&from=&to=`: the caller's tokens and cost over a
//! time range — the caller's sessions: those saved inside the range count
//! their totals; those that overlap it are loaded and count the calls in it.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::Json;
use chrono::{DateTime, Utc};
use lc_agent::{ListQuery, UsageTotals, USAGE_KEY};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::auth::User;
use crate::error::ApiError;
use crate::state::AppState;
use crate::usage::{own_prices_in, with_own};

/// `GET /api/usage` query.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Range {
    /// Whose usage: only the caller's own (default).
    #[serde(default)]
    user: Option<String>,
    /// From this time on (RFC 3339, inclusive).
    #[serde(default)]
    from: Option<String>,
    /// Before this time (RFC 3339, exclusive).
    #[serde(default)]
    to: Option<String>,
}

fn time(name: &str, value: Option<&str>) -> Result<Option<DateTime<Utc>>, ApiError> {
    value
        .map(|v| {
            DateTime::parse_from_rfc3339(v)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|e| {
                    ApiError::BadRequest(format!(
                        "`{name}` must be an RFC 3339 time such as 2025-01-31T00:00:00Z: {e}"
                    ))
                })
        })
        .transpose()
}

/// Sessions read per store request.
const BATCH: usize = 500;

/// `GET /api/usage?user=&from=&to=`: the caller's tokens and cost over the
/// range, in all, by model and by session.
pub(crate) async fn usage(
    State(state): State<Arc<AppState>>,
    User(user): User,
    Query(range): Query<Range>,
) -> Result<Json<Value>, ApiError> {
    if let Some(asked) = range.user.as_deref().filter(|u| *u != user) {
        return Err(ApiError::Status(
            axum::http::StatusCode::FORBIDDEN,
            format!("usage of user `{asked}` is not yours to see"),
        ));
    }
    let from = time("from", range.from.as_deref())?;
    let to = time("to", range.to.as_deref())?;
    let list = state.hub.list(&user)?;
    let mut total_cost: Option<f64> = None;
    // Every session's prices together (for the costs by model).
    let mut all_prices = with_own(None);
    let mut unpriced: Vec<String> = Vec::new();
    let mut total = UsageTotals::default();
    let mut sessions = Vec::new();
    let mut offset = 0;
    loop {
        let page = list
            .list(&ListQuery {
                offset,
                limit: BATCH,
                ..ListQuery::default()
            })
            .await?;
        let read = page.sessions.len();
        for info in page.sessions {
            // Nothing of a session ran after its last save or before its first.
            if from.is_some_and(|f| info.updated_at < f) || to.is_some_and(|t| info.created_at >= t)
            {
                continue;
            }
            let inside =
                from.is_none_or(|f| info.created_at >= f) && to.is_none_or(|t| info.updated_at < t);
            let kept = info
                .metadata
                .get(USAGE_KEY)
                .and_then(|v| serde_json::from_value::<UsageTotals>(v.clone()).ok());
            let totals = match kept {
                Some(totals) if inside => totals,
                _ => match list.load(info.id).await {
                    Ok(net) => {
                        UsageTotals::between(&net, range.from.as_deref(), range.to.as_deref())
                    }
                    Err(e) => {
                        tracing::warn!(session = %info.id, error = %e, "usage: a session could not be read");
                        continue;
                    }
                },
            };
            if totals.is_empty() {
                continue;
            }
            total.merge(&totals);
            // Each session under its own prices (its blueprint's on top).
            let own = own_prices_in(&info.metadata);
            if let Some(own) = &own {
                all_prices.extend(own);
            }
            let prices = with_own(own.as_ref());
            let cost = prices.cost(&totals);
            if let Some(usd) = cost.usd {
                *total_cost.get_or_insert(0.0) += usd;
            }
            for model in cost.unpriced {
                if !unpriced.contains(&model) {
                    unpriced.push(model);
                }
            }
            let mut entry = totals.priced(&prices);
            entry["id"] = json!(info.id);
            entry["name"] = json!(info.name);
            sessions.push(entry);
        }
        offset += read;
        if read == 0 || offset >= page.total {
            break;
        }
    }
    // The total's cost is the sum of the sessions' (each at its prices).
    let mut body = total.priced(&all_prices);
    if let Some(map) = body.as_object_mut() {
        map.remove("cost_usd");
        map.remove("unpriced_models");
    }
    if let Some(usd) = total_cost {
        body["cost_usd"] = json!(usd);
    }
    if !unpriced.is_empty() {
        unpriced.sort();
        body["unpriced_models"] = json!(unpriced);
    }
    body["user"] = json!(user);
    body["from"] = json!(range.from);
    body["to"] = json!(range.to);
    body["sessions"] = json!(sessions);
    Ok(Json(body))
}
