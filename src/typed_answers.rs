//! Typed answers on a network: the output schema of a step, the answers
//! a chat node rejected, and [`OutputSchemaExt::invoke_typed`]. The schema
//! itself ([`OutputSchema`]) is a part of a model request
//! (`output_schema.rs`); this file is what a network does with it.

use serde_json::{json, Value};

use crate::error::{NetworkError, Result};
use crate::message::Message;
use crate::model::ChatRequest;
use crate::network::RunnableNetwork;
use crate::output_schema::OutputSchema;

/// How many answers a chat node with an output schema reads at most (the
/// first and two more, each asked again with the errors).
pub const MAX_ANSWERS: usize = 3;

/// The node metadata key of the parsed answer.
pub(crate) const STRUCTURED_OUTPUT_KEY: &str = "structured_output";

/// The node metadata key of the rejected answers (`[{answer, errors}]`).
pub(crate) const REJECTED_KEY: &str = "schema_rejected";

/// The chat node metadata key holding the model's own text of an answer
/// that was delivered unwrapped (its fence or surrounding words left out).
pub(crate) const RAW_ANSWER_KEY: &str = "raw_answer";

/// The network metadata key of the step → schema map.
const ROUTES_KEY: &str = "output_schemas";

/// One rejected answer, as the node keeps it.
pub(crate) fn rejected(answer: &str, errors: &[String]) -> Value {
    json!({"answer": answer, "errors": errors})
}

/// The history a retry sends: the rejected answer, then the errors.
pub(crate) fn retry_history(
    request: &ChatRequest,
    schema: &OutputSchema,
    answer: &str,
    errors: &[String],
) -> crate::History {
    request
        .history
        .push(std::sync::Arc::new(Message::ai(answer)))
        .push(std::sync::Arc::new(Message::human(schema.retry(errors))))
}

/// Typed answers on a network: a step's output schema, and `invoke_typed`.
pub trait OutputSchemaExt {
    /// Chat nodes of `step` that have no schema of their own answer with
    /// `schema` (saved in the network's metadata under `output_schemas`,
    /// like the model routes; `None` removes it). Unlike the routes, an
    /// inner network (a sub-agent) does not take its outer network's.
    ///
    /// ```
    /// use lc_agent::{OutputSchema, OutputSchemaExt, RunnableNetwork};
    ///
    /// let net = RunnableNetwork::builder().build();
    /// let schema = OutputSchema::new(serde_json::json!({"type": "integer"})).unwrap();
    /// net.set_output_schema("chat", Some(schema.clone()));
    /// assert_eq!(net.output_schema_for_step("chat"), Some(schema));
    /// assert_eq!(net.output_schema_for_step("summary"), None);
    /// ```
    fn set_output_schema(&self, step: impl Into<String>, schema: Option<OutputSchema>);

    /// The output schema of chat nodes of `step` that name none (a saved
    /// schema that does not parse is ignored with a warning).
    fn output_schema_for_step(&self, step: &str) -> Option<OutputSchema>;

    /// Invokes the network with `T`'s schema ([`OutputSchema::of`]) on
    /// its chat step for this run, and returns the final answer as a `T`.
    /// The value is also saved on the answering node
    /// (`metadata["structured_output"]`). An answer that does not fit after
    /// [`MAX_ANSWERS`] answers is [`NetworkError::SchemaMismatch`] (inside
    /// the node's failure).
    fn invoke_typed<T>(&self) -> impl std::future::Future<Output = Result<T>> + Send
    where
        T: serde::de::DeserializeOwned + schemars::JsonSchema;
}

impl OutputSchemaExt for RunnableNetwork {
    fn set_output_schema(&self, step: impl Into<String>, schema: Option<OutputSchema>) {
        let mut routes = match self.metadata_value(ROUTES_KEY) {
            Some(Value::Object(routes)) => routes,
            _ => serde_json::Map::new(),
        };
        let step = step.into();
        match schema.and_then(|s| serde_json::to_value(s).ok()) {
            Some(schema) => {
                routes.insert(step, schema);
            }
            None => {
                routes.shift_remove(&step);
            }
        }
        if routes.is_empty() {
            self.with_metadata_mut(|m| m.shift_remove(ROUTES_KEY));
        } else {
            self.set_metadata(ROUTES_KEY, Value::Object(routes));
        }
    }

    fn output_schema_for_step(&self, step: &str) -> Option<OutputSchema> {
        let value = self.metadata_value(ROUTES_KEY)?.get(step)?.clone();
        match serde_json::from_value(value) {
            Ok(schema) => Some(schema),
            Err(error) => {
                tracing::warn!(step, %error, "ignoring the output schema");
                None
            }
        }
    }

    async fn invoke_typed<T>(&self) -> Result<T>
    where
        T: serde::de::DeserializeOwned + schemars::JsonSchema,
    {
        let step = crate::routing::CHAT_STEP;
        let before = self.output_schema_for_step(step);
        self.set_output_schema(step, Some(OutputSchema::of::<T>()));
        let result = self.invoke().await;
        self.set_output_schema(step, before);
        result?;
        let value = self
            .current_leaf()
            .and_then(|leaf| leaf.metadata_value(STRUCTURED_OUTPUT_KEY))
            .ok_or_else(|| NetworkError::SchemaMismatch {
                attempts: 0,
                errors: vec![
                    "the run ended without a final answer (a call may be waiting for approval)"
                        .to_string(),
                ],
            })?;
        Ok(serde_json::from_value(value)?)
    }
}
