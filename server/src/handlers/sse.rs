//! A run's events as server-sent events: `id:` is the event's number (a
//! client reattaches with `Last-Event-ID`), `event:` its name, `data:` its
//! JSON (see [`RunEvent`](crate::runs::RunEvent)).

use std::convert::Infallible;
use std::sync::Arc;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures::{Stream, StreamExt as _};
use uuid::Uuid;

use crate::runs::Runs;

/// The events of run `id` after `after` as SSE, until the run ends or waits.
pub(crate) fn run_sse(
    runs: Arc<Runs>,
    id: Uuid,
    after: u64,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let stream = runs.events(id, after).map(|e| {
        Ok(Event::default()
            .id(e.seq.to_string())
            .event(e.event.name())
            .data(e.event.data().to_string()))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}
