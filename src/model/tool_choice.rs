//! Whether and which tool the model must call: [`ToolChoice`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Whether the model may, must or must not call a tool, or which one.
///
/// A [`ChatRequest`](crate::ChatRequest) without a choice lets the
/// provider send its default: [`ToolChoice::Auto`] when tools are offered
/// (some servers, llama-cpp-python's function-calling format among them,
/// drop the tools from the prompt unless a choice is sent), nothing when
/// none are.
///
/// Saved on a [`ChatNode`](crate::ChatNode) or in a step's route as a
/// string: `auto`, `required`, `none`, or the name of the tool.
///
/// ```
/// use lc_agent::ToolChoice;
///
/// assert_eq!("required".parse::<ToolChoice>(), Ok(ToolChoice::Required));
/// assert_eq!("read_file".parse::<ToolChoice>(), Ok(ToolChoice::Tool("read_file".into())));
/// assert_eq!(ToolChoice::Tool("grep".into()).to_string(), "grep");
/// assert_eq!(serde_json::to_string(&ToolChoice::Auto).unwrap(), r#""auto""#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum ToolChoice {
    /// The model decides (`auto`).
    Auto,
    /// The model must call some tool (`required`).
    Required,
    /// The model must not call a tool (`none`); the tools stay described.
    None,
    /// The model must call this tool.
    Tool(String),
}

impl ToolChoice {
    /// The network metadata key holding the step → tool-choice map (see
    /// [`ModelRoutes::set_tool_choice_route`](crate::ModelRoutes::set_tool_choice_route)).
    pub(crate) const ROUTES_KEY: &'static str = "tool_choice_routes";
}

impl fmt::Display for ToolChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ToolChoice::Auto => "auto",
            ToolChoice::Required => "required",
            ToolChoice::None => "none",
            ToolChoice::Tool(name) => name,
        })
    }
}

/// A tool choice that is not `auto`, `required`, `none` or a tool name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid tool choice `{0}`: expected `auto`, `required`, `none` or a tool name")]
pub struct ToolChoiceError(String);

impl FromStr for ToolChoice {
    type Err = ToolChoiceError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        Ok(match text {
            "auto" => ToolChoice::Auto,
            "required" | "any" => ToolChoice::Required,
            "none" => ToolChoice::None,
            "" => return Err(ToolChoiceError(text.to_string())),
            name if name.chars().any(char::is_whitespace) => {
                return Err(ToolChoiceError(name.to_string()))
            }
            name => ToolChoice::Tool(name.to_string()),
        })
    }
}

impl From<ToolChoice> for String {
    fn from(choice: ToolChoice) -> Self {
        choice.to_string()
    }
}

impl TryFrom<String> for ToolChoice {
    type Error = ToolChoiceError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}
