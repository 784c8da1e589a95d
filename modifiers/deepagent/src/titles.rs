//! Session titles written by a model: after the first answer, the model
//! of the `title` step names the conversation in a few words. Opt-in: a
//! network without a route for [`TITLE_STEP`] keeps the title its caller
//! gave it (the CLI and the server use the first message, through
//! [`title_of`], the one title rule).
//!
//! ```text
//!  first human message + first answer ─▶ `title` step's model (one small request)
//!        ─▶ clean_title ─▶ network name + metadata["title"], ["title_model"]
//! ```
//!
//! In a blueprint: `[routes] title = "small"` with a `[models.small]`.

use lc_agent::{
    Attachments, ChatRequest, History, Message, ModelError, ModelRoutes, RunnableNetwork,
};
use serde_json::json;

/// The model-routing step of title requests.
pub const TITLE_STEP: &str = "title";

/// Where the title is kept in the network's metadata (also its name).
pub const TITLE_KEY: &str = "title";

/// The system prompt of a title request.
pub(crate) const TITLE_PROMPT: &str =
    "You name conversations. Write a title of at most eight words \
for the conversation below: what the user wants, in the user's language. No quotes, no final \
period. Answer with the title only.";

/// Characters of the question and the answer a title request shows.
const SHOWN: usize = 2_000;

/// The longest title kept (cut at a word, with `…`).
pub(crate) const TITLE_MAX: usize = 60;

/// Why no title was written (the network keeps the one it had).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TitleError {
    /// The route names a model that is not registered.
    #[error("no chat model named `{0}` is registered for titles")]
    UnknownModel(String),
    /// The title model failed.
    #[error("the title model failed: {0}")]
    Model(#[from] ModelError),
    /// The title model answered with no usable text.
    #[error("the title model `{0}` answered with no title")]
    Empty(String),
}

/// The one title rule, for every session title (a first message, a
/// model's answer, the CLI and the server alike): the first non-empty
/// line, control characters dropped, spaces collapsed, at most
/// 60 characters (cut at a word, with `…`; inside the word
/// when cutting before it would keep less than half).
///
/// ```
/// use lc_agent_deepagent::title_of;
///
/// assert_eq!(title_of("\n  Plan   a trip\nto Lisbon"), "Plan a trip");
/// assert_eq!(title_of(&"word ".repeat(30)).chars().count(), 60);
/// let long = title_of(&format!("Trip to Lisbon {}", "x".repeat(80)));
/// assert!(long.starts_with("Trip to Lisbon xxx") && long.ends_with('…'));
/// assert_eq!(long.chars().count(), 60);
/// ```
pub fn title_of(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let line: String = line.chars().filter(|c| !c.is_control()).collect();
    let mut title = String::new();
    for word in line.split_whitespace() {
        let extra = usize::from(!title.is_empty()) + word.chars().count();
        let used = title.chars().count();
        if used + extra > TITLE_MAX {
            if used < TITLE_MAX / 2 {
                // A long word: cut inside it rather than lose most of the line.
                if !title.is_empty() {
                    title.push(' ');
                }
                let room = TITLE_MAX - 1 - title.chars().count();
                title.extend(word.chars().take(room));
            }
            title.push('…');
            return title;
        }
        if !title.is_empty() {
            title.push(' ');
        }
        title.push_str(word);
    }
    title
}

/// A model's answer as a title: its first non-empty line without quotes,
/// a `Title:` label, Markdown marks or a final period, then [`title_of`].
pub(crate) fn clean_title(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let line = line
        .strip_prefix("Title:")
        .or_else(|| line.strip_prefix("title:"))
        .unwrap_or(line);
    let line: String = line.chars().filter(|c| !c.is_control()).collect();
    let line = line
        .trim_matches(|c: char| {
            c.is_whitespace() || matches!(c, '"' | '\'' | '*' | '#' | '`' | '“' | '”' | '_')
        })
        .trim_end_matches(['.', '"', '\'', '”', '*', '`', '_', ' ']);
    title_of(line)
}

fn shown(text: &str) -> String {
    if text.chars().count() > SHOWN {
        let cut: String = text.chars().take(SHOWN).collect();
        format!("{cut} [...]")
    } else {
        text.to_string()
    }
}

/// Asks the `title` step's model for a title of the conversation (its
/// first human message and first answer) and writes it to the network's
/// name and metadata. `Ok(None)` without a `title` route or before the
/// first answer (nothing asked).
///
/// ```
/// use lc_agent::{HumanNode, ModelRoutes, RunnableNetwork, ScriptedChatModel};
/// use lc_agent_deepagent::{write_title, TITLE_STEP};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let main = ScriptedChatModel::new(["fn reverse(...) { ... }"]);
/// let small = ScriptedChatModel::new(["\"Reversing words in Rust.\""]);
/// let net = RunnableNetwork::builder().default_node("chat").chat_model("main")
///     .model("main", main).model("small", small).build();
/// { let _scope = net.enter(); HumanNode::new("How do I reverse the words of a line in Rust?"); }
/// net.invoke().await?;
/// assert_eq!(write_title(&net).await?, None, "no `title` route: nothing asked");
/// net.set_model_route(TITLE_STEP, "small");
/// assert_eq!(write_title(&net).await?.as_deref(), Some("Reversing words in Rust"));
/// assert_eq!(net.name(), "Reversing words in Rust");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub async fn write_title(network: &RunnableNetwork) -> Result<Option<String>, TitleError> {
    let Some(name) = network.model_routes().get(TITLE_STEP).cloned() else {
        return Ok(None);
    };
    let history = network.history();
    let messages = history.to_vec();
    let Some(question) = messages.iter().find(|m| matches!(m, Message::Human { .. })) else {
        return Ok(None);
    };
    let Some(answer) = messages
        .iter()
        .find(|m| matches!(m, Message::Ai { .. }) && !m.text().trim().is_empty())
    else {
        return Ok(None);
    };
    let model = network
        .model(&name)
        .ok_or_else(|| TitleError::UnknownModel(name.clone()))?;
    let ask = format!(
        "The user:\n{}\n\nThe answer:\n{}",
        shown(question.text()),
        shown(answer.text())
    );
    let request = ChatRequest::new(History::from_messages([
        Message::system(TITLE_PROMPT),
        Message::human(ask),
    ]));
    let response = model.complete(&request).await?;
    let title = clean_title(&response.content);
    if title.is_empty() {
        return Err(TitleError::Empty(name));
    }
    network.set_name(&title);
    network.set_metadata(TITLE_KEY, json!(title));
    network.set_metadata("title_model", json!(name));
    Ok(Some(title))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_one_short_clean_line() {
        assert_eq!(
            clean_title("Title: \"Reverse words in Rust.\"\nmore"),
            "Reverse words in Rust"
        );
        assert_eq!(clean_title("**Plan a trip**"), "Plan a trip");
        assert_eq!(clean_title("  \n# Trip to Prague\n"), "Trip to Prague");
        assert_eq!(clean_title("“Quoted”."), "Quoted");
        assert_eq!(clean_title("a\u{7}b c"), "ab c");
        assert_eq!(clean_title(""), "");
        let long = clean_title(&"word ".repeat(30));
        assert!(
            long.ends_with('…') && long.chars().count() <= TITLE_MAX,
            "{long}"
        );
    }
}
