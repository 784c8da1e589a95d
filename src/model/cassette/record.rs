//! [`RecordingChatModel`]: any model, with every exchange written to a
//! cassette.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::Mutex;

use super::exchange::{Exchange, Mode, RecordedRequest, CASSETTE_FORMAT};
use super::redact::Redactor;
use crate::error::{CassetteError, ModelError};
use crate::model::{ChatModel, ChatRequest, ChatResponse, DeltaSink, StreamDelta};

/// Wraps any [`ChatModel`] and appends each request and what the model did
/// with it — the streamed deltas in order, the answer or the error — to a
/// cassette, one JSON line per exchange (the format is described on
/// [`ReplayChatModel`](crate::ReplayChatModel)). It plays
/// the cassette back offline.
///
/// Answers pass through unchanged. A line is written (and flushed) when
/// its answer has finished, so concurrent requests are written in the
/// order they finish and a killed process keeps every finished exchange;
/// a request whose caller gave up before the answer ended is not written.
/// A line that cannot be written fails the request with
/// [`CassetteError::Write`]: a recording never silently misses an answer.
///
/// **Secrets** are erased from every string of a line before it is
/// written (`***`): the values of `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`,
/// `LC_AGENT_TOKEN` and of every environment variable ending in
/// `_API_KEY`, `_TOKEN`, `_SECRET` or `_PASSWORD` (8 characters or more),
/// the secrets given to [`redact`](Self::redact), `Authorization`,
/// `x-api-key` and `api_key` values, `Bearer` tokens and `sk-…` keys. The
/// API key never reaches a request (it is a header), but a server's error
/// can quote it, and a person can paste one into a message.
///
/// ```
/// use std::sync::Arc;
/// use lc_agent::{ChatModel, ChatRequest, History, Message, RecordingChatModel, ScriptedChatModel};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// let cassette = dir.path().join("run.jsonl");
/// let model = RecordingChatModel::create(Arc::new(ScriptedChatModel::new(["Hello!"])), &cassette)
///     .unwrap()
///     .named("scripted");
/// let request = ChatRequest::new(History::from_messages([Message::human("Hi")]));
/// assert_eq!(model.complete(&request).await.unwrap().content, "Hello!");
/// assert_eq!(model.recorded(), 1);
/// let line = std::fs::read_to_string(&cassette).unwrap();
/// assert!(line.starts_with(r#"{"format":"lc-agent-cassette/1","model_name":"scripted""#));
/// # });
/// ```
pub struct RecordingChatModel {
    inner: Arc<dyn ChatModel>,
    path: PathBuf,
    file: Mutex<std::fs::File>,
    model_name: Option<String>,
    redactor: Redactor,
    recorded: AtomicUsize,
}

impl std::fmt::Debug for RecordingChatModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingChatModel")
            .field("path", &self.path)
            .field("model_name", &self.model_name)
            .field("recorded", &self.recorded())
            .finish_non_exhaustive()
    }
}

impl RecordingChatModel {
    /// Records `inner` to a new cassette at `path` (an existing file is
    /// replaced).
    pub fn create(
        inner: Arc<dyn ChatModel>,
        path: impl AsRef<Path>,
    ) -> Result<Self, CassetteError> {
        let path = path.as_ref();
        let file = std::fs::File::create(path).map_err(|e| write_error(path, e))?;
        Ok(Self::with_file(inner, path, file))
    }

    /// Records `inner` at the end of the cassette at `path` (created when
    /// missing), after the exchanges it holds.
    pub fn append(
        inner: Arc<dyn ChatModel>,
        path: impl AsRef<Path>,
    ) -> Result<Self, CassetteError> {
        let path = path.as_ref();
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| write_error(path, e))?;
        Ok(Self::with_file(inner, path, file))
    }

    fn with_file(inner: Arc<dyn ChatModel>, path: &Path, file: std::fs::File) -> Self {
        Self {
            inner,
            path: path.to_path_buf(),
            file: Mutex::new(file),
            model_name: None,
            redactor: Redactor::from_env(),
            recorded: AtomicUsize::new(0),
        }
    }

    /// Writes `name` on every line: the model's name as the caller knows
    /// it (a replay can name its model the same, see
    /// [`ReplayChatModel::model_name`](crate::ReplayChatModel::model_name)).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.model_name = Some(name.into());
        self
    }

    /// Also erases `secret` from the cassette (secrets shorter than 8
    /// characters are ignored: they would erase common words).
    pub fn redact(mut self, secret: impl AsRef<str>) -> Self {
        self.redactor.add(secret.as_ref());
        self
    }

    /// How many exchanges were written.
    pub fn recorded(&self) -> usize {
        self.recorded.load(Ordering::SeqCst)
    }

    /// Writes one exchange, redacted, as a line.
    fn write(
        &self,
        context_window: Option<usize>,
        mode: Mode,
        request: &ChatRequest,
        deltas: &[StreamDelta],
        result: &Result<ChatResponse, ModelError>,
    ) -> Result<(), ModelError> {
        let exchange = Exchange {
            format: CASSETTE_FORMAT.to_string(),
            model_name: self.model_name.clone(),
            context_window,
            mode,
            request: RecordedRequest::of(request),
            deltas: deltas.iter().map(Into::into).collect(),
            response: result.as_ref().ok().map(Into::into),
            error: result.as_ref().err().map(Into::into),
        };
        let mut value = serde_json::to_value(&exchange).map_err(|e| {
            write_error(
                &self.path,
                std::io::Error::new(std::io::ErrorKind::InvalidData, e),
            )
        })?;
        self.redactor.value(&mut value);
        let mut line = value.to_string();
        line.push('\n');
        let mut file = self.file.lock();
        file.write_all(line.as_bytes())
            .and_then(|()| file.flush())
            .map_err(|e| write_error(&self.path, e))?;
        self.recorded.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

fn write_error(path: &Path, error: std::io::Error) -> CassetteError {
    CassetteError::Write {
        path: path.to_path_buf(),
        source: Arc::new(error),
    }
}

#[async_trait]
impl ChatModel for RecordingChatModel {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let window = self.inner.context_window().await;
        let result = self.inner.complete(request).await;
        self.write(window, Mode::Complete, request, &[], &result)?;
        result
    }

    async fn stream(
        &self,
        request: &ChatRequest,
        on_delta: DeltaSink<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let window = self.inner.context_window().await;
        let mut deltas = Vec::new();
        let result = {
            let mut sink = |delta: StreamDelta| {
                deltas.push(delta.clone());
                on_delta(delta);
            };
            self.inner.stream(request, &mut sink).await
        };
        self.write(window, Mode::Stream, request, &deltas, &result)?;
        result
    }

    async fn context_window(&self) -> Option<usize> {
        self.inner.context_window().await
    }

    async fn count_tokens(&self, text: &str) -> Option<usize> {
        self.inner.count_tokens(text).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;
    use crate::message::Message;
    use crate::model::scripted::{ScriptedChatModel, Turn};
    use crate::ReplayChatModel;
    use serde_json::{json, Value};

    /// Fails with an error that quotes a key, after one delta.
    struct Failing;

    #[async_trait]
    impl ChatModel for Failing {
        async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, ModelError> {
            Err(ModelError::Http {
                status: 401,
                body: "bad key sk-live-0123456789abcdefghij; header Authorization: Bearer tok-0123456789".into(),
            })
        }

        async fn stream(
            &self,
            request: &ChatRequest,
            on_delta: DeltaSink<'_>,
        ) -> Result<ChatResponse, ModelError> {
            on_delta(StreamDelta::Text("par".into()));
            self.complete(request).await
        }

        async fn context_window(&self) -> Option<usize> {
            Some(4096)
        }
    }

    fn ask(text: &str) -> ChatRequest {
        ChatRequest::new(History::from_messages([Message::human(text)]))
    }

    fn lines(path: &Path) -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[tokio::test]
    async fn deltas_answers_and_errors_are_written_in_order_and_replayed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let scripted = ScriptedChatModel::new([
            Turn::text("Hello you"),
            Turn::call("call-7", "ls", json!({"path": "/"})),
        ]);
        let recorder = RecordingChatModel::create(Arc::new(scripted), &path)
            .unwrap()
            .named("scripted")
            .redact("my-pasted-secret");
        let mut seen = Vec::new();
        let first = recorder
            .stream(&ask("hi my-pasted-secret"), &mut |d| seen.push(d))
            .await
            .unwrap();
        let second = recorder.complete(&ask("list")).await.unwrap();
        let failing = RecordingChatModel::append(Arc::new(Failing), &path).unwrap();
        let mut partial = Vec::new();
        let error = failing
            .stream(&ask("fail"), &mut |d| partial.push(d))
            .await
            .unwrap_err();
        assert_eq!(recorder.recorded() + failing.recorded(), 3);

        let written = lines(&path);
        assert_eq!(
            written[0],
            json!({"format": "lc-agent-cassette/1", "model_name": "scripted", "mode": "stream",
                   "request": {"messages": [{"role": "human", "content": "hi ***"}]},
                   "deltas": [{"text": "Hello "}, {"text": "you"}],
                   "response": {"content": "Hello you",
                                "usage": {"prompt_tokens": 9, "completion_tokens": 3,
                                          "total_tokens": 12, "estimated": true},
                                "finish_reason": "stop", "model": "scripted"}})
        );
        assert_eq!(written[1]["mode"], "complete");
        assert_eq!(
            written[1]["response"]["tool_calls"],
            json!([{"id": "call-7", "name": "ls", "arguments": "{\"path\":\"/\"}"}])
        );
        assert_eq!(
            written[2],
            json!({"format": "lc-agent-cassette/1", "context_window": 4096, "mode": "stream",
                   "request": {"messages": [{"role": "human", "content": "fail"}]},
                   "deltas": [{"text": "par"}],
                   "error": {"kind": "http", "status": 401,
                             "body": "bad key sk-***; header Authorization: ***"}})
        );

        // The replay gives back the same pieces, answers and error.
        let replay = ReplayChatModel::open(&path)
            .unwrap()
            .redact("my-pasted-secret");
        assert_eq!(replay.model_name(), Some("scripted"));
        let mut again = Vec::new();
        let replayed = replay
            .stream(&ask("hi my-pasted-secret"), &mut |d| again.push(d))
            .await
            .unwrap();
        assert_eq!((replayed, again), (first, seen));
        assert_eq!(replay.complete(&ask("list")).await.unwrap(), second);
        assert_eq!(replay.context_window().await, Some(4096));
        let mut again = Vec::new();
        let replayed_error = replay
            .stream(&ask("fail"), &mut |d| again.push(d))
            .await
            .unwrap_err();
        assert_eq!(again, partial);
        assert!(matches!(
            replayed_error,
            ModelError::Http { status: 401, .. }
        ));
        assert_ne!(replayed_error.to_string(), error.to_string(), "redacted");
        assert!(
            replayed_error.to_string().contains("sk-***"),
            "{replayed_error}"
        );
    }

    #[test]
    fn an_unwritable_cassette_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no-such-dir").join("c.jsonl");
        let error = RecordingChatModel::create(Arc::new(ScriptedChatModel::new(["x"])), &path)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with(&format!("cannot write the cassette {}", path.display())),
            "{error}"
        );
    }
}
