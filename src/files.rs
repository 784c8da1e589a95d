//! The agent's virtual files, kept in the network and saved with it.

use serde::{Deserialize, Serialize};

/// Virtual files by absolute path (`/notes.md`), sorted by path.
pub type Files = std::collections::BTreeMap<String, FileData>;

/// One virtual file: its lines and two RFC 3339 timestamps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileData {
    /// The text split on `\n` (so `"a\nb"` is `["a", "b"]` and `"a\n"` is
    /// `["a", ""]`).
    pub content: Vec<String>,
    /// When the file was first written.
    pub created_at: String,
    /// When the file was last written.
    pub modified_at: String,
}

impl FileData {
    /// A file holding `text`, created and modified now.
    pub fn new(text: &str) -> Self {
        let now = now_rfc3339();
        Self {
            content: text.split('\n').map(str::to_string).collect(),
            created_at: now.clone(),
            modified_at: now,
        }
    }

    /// The whole text (lines joined with `\n`).
    pub fn text(&self) -> String {
        self.content.join("\n")
    }

    /// Replaces the text and bumps `modified_at`.
    pub fn set_text(&mut self, text: &str) {
        self.content = text.split('\n').map(str::to_string).collect();
        self.modified_at = now_rfc3339();
    }
}

/// The current UTC time as RFC 3339 with microseconds (`2026-11-21T10:00:00.000000Z`).
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_text_split_on_newlines() {
        assert_eq!(FileData::new("a\nb").content, ["a", "b"]);
        assert_eq!(FileData::new("a\n").content, ["a", ""]);
        assert_eq!(FileData::new("").content, [""]);
        assert_eq!(FileData::new("x\n\ny").text(), "x\n\ny");
    }
}
