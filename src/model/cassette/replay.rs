//! [`ReplayChatModel`]: a cassette played back offline, and [`Match`]:
//! which parts of a request must be as recorded.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use async_trait::async_trait;
use parking_lot::Mutex;
use serde_json::{Map, Value};

use super::diff::diff;
use super::exchange::{read_cassette, Exchange, Mode, RecordedRequest};
use super::redact::Redactor;
use crate::error::{CassetteError, ModelError};
use crate::model::{replay_as_deltas, ChatModel, ChatRequest, ChatResponse, DeltaSink};

/// A part of a request that a [`ReplayChatModel`] compares with the
/// recorded one.
///
/// By default a replay is strict: [`Match::Messages`], [`Match::Tools`]
/// and [`Match::ToolChoice`] (every message, the
/// tools, the tool choice). [`ReplayChatModel::matching`] compares less,
/// e.g. `[Match::Conversation]` to replay a cassette after the system
/// prompt or a tool's description changed, or nothing at all (`[]`) to
/// play the answers in order whatever is asked.
///
/// ```
/// use lc_agent::Match;
///
/// assert_eq!("messages".parse::<Match>(), Ok(Match::Messages));
/// assert_eq!(Match::ToolNames.to_string(), "tool_names");
/// assert!("everything".parse::<Match>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Match {
    /// Every message, in order, system prompt included (`messages`).
    Messages,
    /// The messages other than system ones (`conversation`).
    Conversation,
    /// The tools offered: names, descriptions, parameter schemas
    /// (`tools`).
    Tools,
    /// Only the names of the tools offered (`tool_names`).
    ToolNames,
    /// The tool choice (`tool_choice`).
    ToolChoice,
}

impl Match {
    /// What a replay compares unless told otherwise: the whole request.
    pub(crate) const STRICT: [Match; 3] = [Match::Messages, Match::Tools, Match::ToolChoice];

    /// Every part, for help texts.
    pub const ALL: [Match; 5] = [
        Match::Messages,
        Match::Conversation,
        Match::Tools,
        Match::ToolNames,
        Match::ToolChoice,
    ];

    fn name(self) -> &'static str {
        match self {
            Match::Messages => "messages",
            Match::Conversation => "conversation",
            Match::Tools => "tools",
            Match::ToolNames => "tool_names",
            Match::ToolChoice => "tool_choice",
        }
    }

    /// This part of `request` (tools keyed by name, so a diff names the
    /// tool that changed).
    fn project(self, request: &Value) -> Value {
        let messages = || request.get("messages").cloned().unwrap_or(Value::Null);
        let tools = || {
            request
                .get("tools")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let tool_name = |tool: &Value| {
            tool.get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        match self {
            Match::Messages => messages(),
            Match::Conversation => Value::Array(
                messages()
                    .as_array()
                    .map(|all| {
                        all.iter()
                            .filter(|m| m.get("role").and_then(Value::as_str) != Some("system"))
                            .cloned()
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            Match::Tools => Value::Object(
                tools()
                    .into_iter()
                    .map(|mut tool| {
                        let name = tool_name(&tool);
                        if let Some(fields) = tool.as_object_mut() {
                            fields.remove("name");
                        }
                        (name, tool)
                    })
                    .collect(),
            ),
            Match::ToolNames => Value::Array(
                tools()
                    .iter()
                    .map(|tool| Value::String(tool_name(tool)))
                    .collect(),
            ),
            Match::ToolChoice => request.get("tool_choice").cloned().unwrap_or(Value::Null),
        }
    }
}

impl fmt::Display for Match {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Match {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        Match::ALL
            .into_iter()
            .find(|part| part.name() == text || part.name().replace('_', "-") == text)
            .ok_or_else(|| {
                format!(
                    "`{text}` is not a part of a request; expected one of {}",
                    Match::ALL.map(Match::name).join(", ")
                )
            })
    }
}

/// Plays a cassette back offline: no server, no key. Each request gets the
/// answer recorded for it — through [`stream`](ChatModel::stream) the
/// recorded deltas in their order, then the answer; through
/// [`complete`](ChatModel::complete) the answer — or the recorded error.
/// [`context_window`](ChatModel::context_window) is what the recorded
/// model said.
///
/// **Which answer.** The first one not played yet whose request is the
/// same as this one in the [`Match`] parts compared (all of them unless
/// [`matching`](Self::matching) says otherwise). Requests that ran
/// concurrently (sub-agents, parallel tool calls) find their answers in
/// whatever order they come; a request asked twice gets its answers in
/// the recorded order. A request that differs from every answer left
/// fails with [`CassetteError::Mismatch`], which lists what differs from
/// the next answer in the cassette (path, recorded value, value now);
/// once every answer was played, [`CassetteError::Exhausted`]. A request
/// is compared after the same secret redaction as the recording (so a
/// redacted key in a message still matches).
///
/// **The cassette** is the JSON-lines file a
/// [`RecordingChatModel`](crate::RecordingChatModel) writes, one exchange
/// per line:
///
/// ```text
/// {"format":"lc-agent-cassette/1","model_name":"smollm2","context_window":2048,"mode":"stream",
///  "request":{"messages":[{"role":"system",...},{"role":"human","content":"hi"}],
///             "tools":[{"name","description","parameters"}],"tool_choice":"auto"},
///  "deltas":[{"text":"Hel"},{"text":"lo"},{"tool_call":{"index":0,"id":"c1","name":"ls","arguments":"{}"}}],
///  "response":{"content":"Hello","usage":{...},"finish_reason":"stop","model":"..."}}
/// ```
///
/// - `format` (`lc-agent-cassette/1`) is on every
///   line, so a line another version wrote is found.
/// - `request` is what a provider would be sent, and nothing that changes
///   from run to run: the messages the request assembles (provider-neutral
///   [`Message`](crate::Message)s, system sections included), the tools,
///   the tool choice. The chat node's id is not in it; tool call ids come
///   from the model, so the cassette has them (in the answers, and in the
///   later messages that echo them).
/// - `deltas` are the streamed pieces in order (absent when the request
///   was not streamed; replayed through `stream`, such an answer comes as
///   one text delta and one delta per tool call). `response` is the whole
///   answer; `error` (`{"kind": "http", "status", "body"}`, ...) replaces
///   it when the model failed, after the deltas that came before.
///
/// **Same run, same session.** Replaying a recorded run gives the same
/// answers, tool calls and tool call ids, so the saved session is the same
/// except what the network draws from the clock and the random generator:
/// node and session ids (uuid v4), timestamps and durations. Compare
/// sessions with those masked (the tests map each id to its first-seen
/// position and mask times).
///
/// ```
/// use std::sync::Arc;
/// use lc_agent::{ChatModel, ChatRequest, History, Message, RecordingChatModel,
///                ReplayChatModel, ScriptedChatModel, StreamDelta};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// let cassette = dir.path().join("run.jsonl");
/// let ask = |text: &str| ChatRequest::new(History::from_messages([Message::human(text)]));
///
/// let recorder = RecordingChatModel::create(
///     Arc::new(ScriptedChatModel::new(["Hello there"])), &cassette).unwrap();
/// recorder.stream(&ask("Hi"), &mut |_| {}).await.unwrap();
///
/// let replay = ReplayChatModel::open(&cassette).unwrap();
/// let mut pieces = Vec::new();
/// let answer = replay.stream(&ask("Hi"), &mut |d| pieces.push(d)).await.unwrap();
/// assert_eq!(answer.content, "Hello there");
/// assert_eq!(pieces, [StreamDelta::Text("Hello ".into()), StreamDelta::Text("there".into())]);
///
/// let again = ReplayChatModel::open(&cassette).unwrap();
/// let error = again.complete(&ask("Hello?")).await.unwrap_err().to_string();
/// assert!(error.contains(r#"messages[0] (human).content: recorded "Hi", now "Hello?""#), "{error}");
/// # });
/// ```
#[derive(Debug)]
pub struct ReplayChatModel {
    path: PathBuf,
    exchanges: Vec<Exchange>,
    /// The recorded requests, as compared (redacted JSON).
    requests: Vec<Value>,
    played: Mutex<Vec<bool>>,
    parts: Vec<Match>,
    redactor: Redactor,
}

impl ReplayChatModel {
    /// The cassette at `path`, to play from its first answer, comparing
    /// whole requests (messages, tools, tool choice).
    pub fn open(path: impl AsRef<Path>) -> Result<Self, CassetteError> {
        let path = path.as_ref();
        let exchanges = read_cassette(path)?;
        let requests = exchanges
            .iter()
            .map(|exchange| request_value(&exchange.request))
            .collect();
        Ok(Self {
            path: path.to_path_buf(),
            played: Mutex::new(vec![false; exchanges.len()]),
            exchanges,
            requests,
            parts: Match::STRICT.to_vec(),
            redactor: Redactor::from_env(),
        })
    }

    /// Compares only these parts of a request (none: the answers play in
    /// the recorded order whatever is asked).
    pub fn matching(mut self, parts: impl IntoIterator<Item = Match>) -> Self {
        self.parts = parts.into_iter().collect();
        self.parts.dedup();
        self
    }

    /// Also erases `secret` from a request before comparing it, as the
    /// recording's [`redact`](crate::RecordingChatModel::redact) did.
    pub fn redact(mut self, secret: impl AsRef<str>) -> Self {
        self.redactor.add(secret.as_ref());
        self
    }

    /// The name the recording gave its model
    /// ([`RecordingChatModel::named`](crate::RecordingChatModel::named)),
    /// if it gave one.
    pub fn model_name(&self) -> Option<&str> {
        self.exchanges
            .iter()
            .find_map(|exchange| exchange.model_name.as_deref())
    }

    /// How many answers the cassette recorded.
    pub fn recorded(&self) -> usize {
        self.exchanges.len()
    }

    /// How many answers were played.
    pub fn played(&self) -> usize {
        self.played.lock().iter().filter(|played| **played).count()
    }

    /// The compared parts of `request`.
    fn key(&self, request: &Value) -> Value {
        Value::Object(
            self.parts
                .iter()
                .map(|part| (part.name().to_string(), part.project(request)))
                .collect::<Map<_, _>>(),
        )
    }

    /// The exchange for `request`, marked played.
    fn take(&self, request: &ChatRequest) -> Result<&Exchange, ModelError> {
        let mut now = request_value(&RecordedRequest::of(request));
        self.redactor.value(&mut now);
        let key = self.key(&now);
        let mut played = self.played.lock();
        let mut left = (0..self.exchanges.len()).filter(|&i| !played[i]).peekable();
        let Some(&next) = left.peek() else {
            return Err(CassetteError::Exhausted {
                path: self.path.clone(),
                recorded: self.exchanges.len(),
            }
            .into());
        };
        match left.find(|&i| self.key(&self.requests[i]) == key) {
            Some(found) => {
                played[found] = true;
                Ok(&self.exchanges[found])
            }
            None => Err(CassetteError::Mismatch {
                path: self.path.clone(),
                answer: next + 1,
                recorded: self.exchanges.len(),
                compared: self
                    .parts
                    .iter()
                    .map(|p| p.name())
                    .collect::<Vec<_>>()
                    .join(", "),
                diff: diff(&self.key(&self.requests[next]), &key),
            }
            .into()),
        }
    }
}

/// A recorded request as compared: its JSON, redacted as it was written.
fn request_value(request: &RecordedRequest) -> Value {
    serde_json::to_value(request).unwrap_or(Value::Null)
}

/// The recorded answer (or error) of `exchange`.
fn outcome(exchange: &Exchange) -> Result<ChatResponse, ModelError> {
    match (&exchange.response, &exchange.error) {
        (_, Some(error)) => Err(error.clone().into()),
        (Some(response), None) => Ok(response.clone().into()),
        (None, None) => Err(ModelError::Other(
            "the cassette recorded neither an answer nor an error".to_string(),
        )),
    }
}

#[async_trait]
impl ChatModel for ReplayChatModel {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        outcome(self.take(request)?)
    }

    async fn stream(
        &self,
        request: &ChatRequest,
        on_delta: DeltaSink<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let exchange = self.take(request)?;
        let result = outcome(exchange);
        match (exchange.mode, &result) {
            (Mode::Stream, _) => {
                for delta in &exchange.deltas {
                    on_delta(delta.clone().into());
                }
            }
            (Mode::Complete, Ok(response)) => {
                replay_as_deltas([response.content.as_str()], &response.tool_calls, on_delta)
            }
            (Mode::Complete, Err(_)) => {}
        }
        result
    }

    async fn context_window(&self) -> Option<usize> {
        let played = self.played.lock();
        let next = played
            .iter()
            .position(|played| !played)
            .unwrap_or(self.exchanges.len().saturating_sub(1));
        self.exchanges.get(next).and_then(|e| e.context_window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;
    use crate::model::{StreamDelta, ToolChoice};
    use crate::tool::ToolSpec;
    use crate::ToolCall;
    use serde_json::json;

    fn cassette(lines: &[Value]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    fn line(human: &str, answer: &str) -> Value {
        json!({"format": "lc-agent-cassette/1", "mode": "complete",
               "request": {"messages": [{"role": "system", "content": "Be brief."},
                                         {"role": "human", "content": human}],
                           "tools": [{"name": "ls", "description": "List.", "parameters": {}}],
                           "tool_choice": "auto"},
               "response": {"content": answer}})
    }

    fn request(system: &str, human: &str, tool_description: &str) -> ChatRequest {
        ChatRequest {
            tools: vec![ToolSpec {
                name: "ls".into(),
                description: tool_description.into(),
                parameters: json!({}),
            }]
            .into(),
            tool_choice: Some(ToolChoice::Auto),
            ..ChatRequest::new(crate::History::from_messages([
                Message::system(system),
                Message::human(human),
            ]))
        }
    }

    #[tokio::test]
    async fn answers_are_found_by_request_in_any_order_then_exhausted() {
        let (_dir, path) = cassette(&[line("one", "1"), line("two", "2")]);
        let replay = ReplayChatModel::open(&path).unwrap();
        let two = replay
            .complete(&request("Be brief.", "two", "List."))
            .await
            .unwrap();
        let one = replay
            .complete(&request("Be brief.", "one", "List."))
            .await
            .unwrap();
        assert_eq!((one.content.as_str(), two.content.as_str()), ("1", "2"));
        assert_eq!(replay.played(), 2);
        let error = replay
            .complete(&request("Be brief.", "one", "List."))
            .await
            .unwrap_err();
        assert!(matches!(
            error,
            ModelError::Cassette(CassetteError::Exhausted { recorded: 2, .. })
        ));
        assert_eq!(
            error.to_string(),
            format!(
                "the cassette {} has no more recorded answers (it recorded 2)",
                path.display()
            )
        );
    }

    #[tokio::test]
    async fn a_strict_replay_names_what_differs() {
        let (_dir, path) = cassette(&[line("one", "1")]);
        let replay = ReplayChatModel::open(&path).unwrap();
        let error = replay
            .complete(&request("Be long.", "one", "Lists files."))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("differs from the one recorded in the cassette"),
            "{error}"
        );
        assert!(
            error.contains("(answer 1 of 1; compared: messages, tools, tool_choice)"),
            "{error}"
        );
        assert!(
            error.contains(
                r#"  messages[0] (system).content: recorded "Be brief.", now "Be long.""#
            ),
            "{error}"
        );
        assert!(
            error.contains(r#"  tools.ls.description: recorded "List.", now "Lists files.""#),
            "{error}"
        );
        assert_eq!(replay.played(), 0, "a mismatch plays nothing");
    }

    #[tokio::test]
    async fn a_replay_can_compare_less() {
        let (_dir, path) = cassette(&[line("one", "1")]);
        let replay = ReplayChatModel::open(&path)
            .unwrap()
            .matching([Match::Conversation, Match::ToolNames]);
        let answer = replay
            .complete(&request("Be long.", "one", "Lists files."))
            .await
            .unwrap();
        assert_eq!(answer.content, "1");

        let (_dir, path) = cassette(&[line("one", "1")]);
        let replay = ReplayChatModel::open(&path).unwrap().matching([]);
        let answer = replay
            .complete(&request("x", "anything", "y"))
            .await
            .unwrap();
        assert_eq!(answer.content, "1");
    }

    #[tokio::test]
    async fn deltas_and_errors_replay_in_order() {
        let mut streamed = line("one", "");
        streamed["mode"] = json!("stream");
        streamed["context_window"] = json!(2048);
        streamed["deltas"] = json!([
            {"text": "He"},
            {"tool_call": {"index": 0, "id": "c1", "name": "ls", "arguments": "{\"pa"}},
            {"tool_call": {"index": 0, "arguments": "th\":1}"}}
        ]);
        streamed.as_object_mut().unwrap().remove("response");
        streamed["error"] = json!({"kind": "http", "status": 500, "body": "boom"});
        let (_dir, path) = cassette(&[streamed]);
        let replay = ReplayChatModel::open(&path).unwrap();
        assert_eq!(replay.context_window().await, Some(2048));
        let mut deltas = Vec::new();
        let error = replay
            .stream(&request("Be brief.", "one", "List."), &mut |d| {
                deltas.push(d)
            })
            .await
            .unwrap_err();
        assert!(
            matches!(&error, ModelError::Http { status: 500, body } if body == "boom"),
            "{error:?}"
        );
        assert_eq!(
            deltas,
            [
                StreamDelta::Text("He".into()),
                StreamDelta::ToolCall {
                    index: 0,
                    id: Some("c1".into()),
                    name: Some("ls".into()),
                    arguments: "{\"pa".into()
                },
                StreamDelta::ToolCall {
                    index: 0,
                    id: None,
                    name: None,
                    arguments: "th\":1}".into()
                },
            ]
        );
        assert_eq!(replay.context_window().await, Some(2048), "the last one's");
    }

    #[tokio::test]
    async fn a_completed_answer_streams_as_whole_pieces() {
        let mut answer = line("one", "Hi");
        answer["response"]["tool_calls"] = json!([{"id": "c9", "name": "ls", "arguments": "{}"}]);
        let (_dir, path) = cassette(&[answer]);
        let replay = ReplayChatModel::open(&path).unwrap();
        let mut deltas = Vec::new();
        let response = replay
            .stream(&request("Be brief.", "one", "List."), &mut |d| {
                deltas.push(d)
            })
            .await
            .unwrap();
        assert_eq!(response.tool_calls, [ToolCall::new("c9", "ls", json!({}))]);
        assert_eq!(deltas.len(), 2, "{deltas:?}");
    }

    #[test]
    fn files_that_are_not_cassettes_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.jsonl");
        let error = ReplayChatModel::open(&missing).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!("cannot read the cassette {}", missing.display())),
            "{error}"
        );

        let (_d, path) = cassette(&[json!({"messages": []})]);
        let error = ReplayChatModel::open(&path).unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "{} is not a cassette (line 1: no \"format\": \"lc-agent-cassette/1\")",
                path.display()
            )
        );

        let other = dir.path().join("notes.txt");
        std::fs::write(&other, "hello\n").unwrap();
        let error = ReplayChatModel::open(&other).unwrap_err().to_string();
        assert!(
            error.contains("is not a cassette (line 1: not JSON"),
            "{error}"
        );

        let mut newer = line("one", "1");
        newer["format"] = json!("lc-agent-cassette/9");
        let (_d, path) = cassette(&[line("one", "1"), newer]);
        let error = ReplayChatModel::open(&path).unwrap_err().to_string();
        assert!(
            error.contains("has format `lc-agent-cassette/9` on line 2"),
            "{error}"
        );

        let mut neither = line("one", "1");
        neither.as_object_mut().unwrap().remove("response");
        let (_d, path) = cassette(&[neither]);
        let error = ReplayChatModel::open(&path).unwrap_err().to_string();
        assert!(
            error.contains("line 1: neither a \"response\" nor an \"error\""),
            "{error}"
        );
    }

    #[test]
    fn match_parts_parse_by_name() {
        for part in Match::ALL {
            assert_eq!(part.to_string().parse::<Match>(), Ok(part));
        }
        assert_eq!("tool-choice".parse::<Match>(), Ok(Match::ToolChoice));
    }
}
