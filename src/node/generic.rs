//! Nodes of a kind this program does not know.

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::error::{NetworkError, Result};
use crate::message::Message;
use crate::node::{NodeContext, NodeLogic};

/// A saved node whose kind is not registered in this program.
///
/// It keeps every field exactly as saved (in order) and saves back
/// unchanged, so a program that does not know a kind never destroys it.
/// Its output joins the conversation when it is a message; it cannot run.
#[derive(Debug, Clone, PartialEq)]
pub struct GenericNode {
    kind: String,
    raw: Map<String, Value>,
}

impl GenericNode {
    pub(crate) fn new(kind: String, raw: Map<String, Value>) -> Self {
        Self { kind, raw }
    }

    /// Every field as saved, `__node_type__` included.
    pub fn raw(&self) -> &Map<String, Value> {
        &self.raw
    }
}

#[async_trait]
impl NodeLogic for GenericNode {
    fn kind(&self) -> &str {
        &self.kind
    }

    async fn invoke(&self, _ctx: NodeContext) -> Result<Message> {
        Err(NetworkError::Format(format!(
            "node kind `{}` is not registered in this program, so it cannot run",
            self.kind
        )))
    }

    fn save(&self) -> Result<Map<String, Value>> {
        Ok(self.raw.clone())
    }
}
