//! A chat model that replays fixed turns: for tests and offline examples.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::{replay_as_deltas, ChatModel, ChatRequest, ChatResponse, DeltaSink};
use crate::error::ModelError;
use crate::message::ToolCall;
use crate::model::Usage;
use crate::usage::UsageEstimator;

/// One scripted answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// Answer text.
    pub content: String,
    /// Tool calls to make.
    pub tool_calls: Vec<ToolCall>,
    /// How long the model takes to answer (a slow server, a long
    /// generation); `None` answers at once.
    pub delay: Option<Duration>,
}

impl Turn {
    /// A text answer.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            tool_calls: Vec::new(),
            delay: None,
        }
    }

    /// An answer that calls tools.
    pub fn tool_calls(calls: impl IntoIterator<Item = ToolCall>) -> Self {
        Self {
            content: String::new(),
            tool_calls: calls.into_iter().collect(),
            delay: None,
        }
    }

    /// An answer that calls one tool with JSON arguments.
    pub fn call(id: &str, name: &str, arguments: serde_json::Value) -> Self {
        Self::tool_calls([ToolCall::new(id, name, arguments)])
    }

    /// The same answer, given after `delay`.
    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }
}

impl From<&str> for Turn {
    fn from(text: &str) -> Self {
        Turn::text(text)
    }
}

impl From<String> for Turn {
    fn from(text: String) -> Self {
        Turn::text(text)
    }
}

/// Replays fixed turns in order, one per call, and counts calls.
///
/// It is a stand-in for a real model: everything that uses it (the
/// quickstart example, the tests, the benchmarks) says so. Clones share the
/// script position and the counter.
///
/// ```
/// use lc_agent::{ChatModel, ChatRequest, ScriptedChatModel};
///
/// # tokio_test_block_on(async {
/// let model = ScriptedChatModel::new(["first", "second"]);
/// let a = model.complete(&ChatRequest::default()).await.unwrap();
/// let b = model.complete(&ChatRequest::default()).await.unwrap();
/// assert_eq!((a.content.as_str(), b.content.as_str()), ("first", "second"));
/// assert_eq!(model.calls(), 2);
/// assert!(model.complete(&ChatRequest::default()).await.is_err()); // script exhausted
/// # });
/// # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ScriptedChatModel {
    name: String,
    usage: Option<Usage>,
    turns: Arc<[Turn]>,
    cycle: bool,
    calls: Arc<AtomicUsize>,
}

impl ScriptedChatModel {
    /// A model that plays `turns` once, then fails with
    /// [`ModelError::ScriptExhausted`].
    pub fn new<T: Into<Turn>>(turns: impl IntoIterator<Item = T>) -> Self {
        Self {
            name: "scripted".to_string(),
            usage: None,
            turns: turns.into_iter().map(Into::into).collect(),
            cycle: false,
            calls: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Replays the script from the start once it ends, forever.
    pub fn cycled(mut self) -> Self {
        self.cycle = true;
        self
    }

    /// Names the model in error messages.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Reports `usage` with every answer, as a server that counts tokens
    /// does. Without it each answer reports the cheap estimate of
    /// the default estimator (four characters a token, marked
    /// `estimated`), so that a scripted run never needs a real tokenizer.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// How many times the model was called.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    fn next_turn(&self) -> Result<&Turn, ModelError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let index = if self.cycle && !self.turns.is_empty() {
            n % self.turns.len()
        } else {
            n
        };
        self.turns
            .get(index)
            .ok_or_else(|| ModelError::ScriptExhausted {
                name: self.name.clone(),
                played: self.turns.len(),
            })
    }
}

#[async_trait]
impl ChatModel for ScriptedChatModel {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let turn = self.next_turn()?;
        if let Some(delay) = turn.delay {
            tokio::time::sleep(delay).await;
        }
        let mut response = ChatResponse {
            content: turn.content.clone(),
            tool_calls: turn.tool_calls.clone(),
            usage: self.usage,
            finish_reason: Some(if turn.tool_calls.is_empty() {
                "stop".into()
            } else {
                "tool_calls".into()
            }),
            model: Some(self.name.clone()),
        };
        if response.usage.is_none() {
            response.usage = Some(crate::usage::ApproxUsage.estimate(request, &response));
        }
        Ok(response)
    }

    async fn stream(
        &self,
        request: &ChatRequest,
        on_delta: DeltaSink<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let response = self.complete(request).await?;
        // Word by word, so streaming consumers see more than one piece.
        replay_as_deltas(
            response.content.split_inclusive(' '),
            &response.tool_calls,
            on_delta,
        );
        Ok(response)
    }
}
