//! # Traces: a deep agent's run as OpenTelemetry GenAI spans
//!
//! Shows: the spans one run makes (feature `otel`): `invoke_agent`, a
//! `chat {model}` per model call with its token counts, an `execute_tool
//! {name}` per tool call, and the sub-agent's own `invoke_agent` nested in
//! the `task` call that started it. Offline it prints the tree with each
//! span's duration (a small `tracing` layer of its own); with
//! `OTEL_EXPORTER_OTLP_ENDPOINT` set it also sends them to that receiver
//! through `lc_agent::otel` (e.g. Arize Phoenix: `phoenix serve`, then
//! `OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:6006`). Prompts and
//! answers go in only with
//! `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`.
//!
//! Needs: nothing (scripted models stand in for real ones, and say so).
//!
//! Run: `cargo run --example traces --features otel`

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lc_agent::{HumanNode, ScriptedChatModel, Turn};
use lc_agent_deepagent::DeepAgent;
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// One span as the tree shows it.
struct Row {
    depth: usize,
    name: String,
    tokens: String,
    started: Instant,
    elapsed: Option<Duration>,
}

/// Collects the `gen_ai` spans in the order they start.
#[derive(Clone, Default)]
struct Tree(Arc<Mutex<Vec<Row>>>);

/// The row of a span, kept in its extensions.
struct RowIndex(usize);

#[derive(Default)]
struct Fields {
    name: Option<String>,
    tokens: Vec<String>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "otel.name" {
            self.name = Some(value.to_string());
        }
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        match field.name() {
            "gen_ai.usage.input_tokens" => self.tokens.push(format!("{value} in")),
            "gen_ai.usage.output_tokens" => self.tokens.push(format!("{value} out")),
            _ => {}
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "otel.name" {
            self.name = Some(format!("{value:?}"));
        }
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Tree {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let depth = span
            .parent()
            .and_then(|p| {
                let ext = p.extensions();
                let rows = self.0.lock().ok()?;
                ext.get::<RowIndex>().map(|i| rows[i.0].depth + 1)
            })
            .unwrap_or(0);
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let mut rows = self.0.lock().unwrap();
        rows.push(Row {
            depth,
            name: fields.name.unwrap_or_else(|| span.name().to_string()),
            tokens: String::new(),
            started: Instant::now(),
            elapsed: None,
        });
        span.extensions_mut().insert(RowIndex(rows.len() - 1));
    }

    fn on_record(&self, id: &Id, values: &tracing::span::Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut fields = Fields::default();
        values.record(&mut fields);
        let index = span.extensions().get::<RowIndex>().map(|i| i.0);
        if let Some(i) = index {
            let mut rows = self.0.lock().unwrap();
            for t in fields.tokens {
                let row = &mut rows[i];
                row.tokens = if row.tokens.is_empty() {
                    t
                } else {
                    format!("{} · {t}", row.tokens)
                };
            }
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let index = span.extensions().get::<RowIndex>().map(|i| i.0);
        if let Some(i) = index {
            let mut rows = self.0.lock().unwrap();
            rows[i].elapsed = Some(rows[i].started.elapsed());
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("(offline: scripted models stand in for real ones)");
    let tree = Tree::default();
    let otel = lc_agent::otel::layer_from_env()?;
    let (exporter, guard) = match otel {
        Some((layer, guard)) => (Some(layer), Some(guard)),
        None => (None, None),
    };
    tracing_subscriber::registry()
        .with(exporter)
        .with(
            tree.clone().with_filter(
                tracing_subscriber::filter::Targets::new()
                    .with_target(lc_agent::telemetry::TARGET, tracing::Level::TRACE),
            ),
        )
        .init();

    // The main agent delegates to a sub-agent that writes a file, then
    // reads it and answers.
    let model = ScriptedChatModel::new([
        Turn::call(
            "t1",
            "task",
            json!({"description": "Write /notes.md", "subagent_type": "general-purpose"}),
        ),
        Turn::call(
            "w1",
            "write_file",
            json!({"file_path": "/notes.md", "content": "# Notes\n"}),
        ),
        Turn::text("Wrote /notes.md."),
        Turn::call("r1", "read_file", json!({"file_path": "/notes.md"})),
        Turn::text("The notes are written."),
    ]);
    let agent = DeepAgent::builder().model(model).build()?;
    {
        let _scope = agent.enter();
        HumanNode::new("Have a sub-agent write the notes.");
    }
    let answer = agent.invoke().await?;
    println!("answer: {}\n", answer.text());

    println!("spans (name, duration, tokens):");
    for row in tree.0.lock().unwrap().iter() {
        let ms = row.elapsed.unwrap_or_default().as_secs_f64() * 1000.0;
        println!(
            "{}{}  {ms:.1} ms  {}",
            "  ".repeat(row.depth),
            row.name,
            row.tokens
        );
    }
    if let Some(guard) = guard {
        guard.flush();
        println!(
            "\nsent to {}",
            lc_agent::otel::endpoint_from_env().unwrap_or_default()
        );
    }
    Ok(())
}
