//! The core against real model servers: llama-cpp-python serving
//! SmolLM2-135M-Instruct (one server shared by the process,
//! `LlamaServer::shared`), and LiteLLM's proxy speaking Anthropic's
//! Messages API in front of it. Apart from `tests/it` because the model
//! runs on the CPU: these tests queue on it and must not compete with
//! hundreds of parallel tests for the cores (their timeouts). Each carries
//! `#[needs(llama)]` (and `litellm`), so a machine without them lists
//! them as ignored.
//!
//! # Layout
//!
//! - `real_model` — `OpenAiChatModel` and the agent loop.
//! - `real_anthropic` — `AnthropicChatModel` through LiteLLM.
//! - `record_replay` — a recorded real run replays offline byte for byte.
//! - `real_fallback` — a server stopped mid-run; the step's fallback answers.
//! - `real_typed` — typed answers (`invoke_typed`, a chat node's schema).

// Test code: a failed step is a failed test.
#![allow(clippy::unwrap_used, unreachable_pub)]

mod real_anthropic;
mod real_fallback;
mod real_model;
mod real_typed;
mod record_replay;
