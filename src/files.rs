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
    rfc3339_micros(chrono::Utc::now())
}

thread_local! {
    /// The second last formatted on this thread and its text up to the
    /// fraction (`2026-11-21T10:00:00`): every node of a run stamps its
    /// start, and within one second only the microseconds change.
    static SECOND: std::cell::RefCell<(i64, String)> =
        const { std::cell::RefCell::new((i64::MIN, String::new())) };
}

/// `t` as RFC 3339 with microseconds, exactly as chrono writes it
/// (`to_rfc3339_opts(SecondsFormat::Micros, true)`), which formats only the
/// first time of each second on a thread.
pub(crate) fn rfc3339_micros(t: chrono::DateTime<chrono::Utc>) -> String {
    let micros = t.timestamp_subsec_micros();
    if micros >= 1_000_000 {
        // A leap second: chrono's own way.
        return t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    }
    let second = t.timestamp();
    SECOND.with(|cached| {
        let mut cached = cached.borrow_mut();
        if cached.0 != second {
            let full = t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
            // What follows the seconds: `.` six digits `Z`.
            let prefix = full.get(..full.len().saturating_sub(8)).unwrap_or_default();
            *cached = (second, prefix.to_string());
            return full;
        }
        let mut out = String::with_capacity(cached.1.len() + 8);
        out.push_str(&cached.1);
        out.push('.');
        let mut divisor = 100_000;
        while divisor > 0 {
            out.push(char::from(b'0' + (micros / divisor % 10) as u8));
            divisor /= 10;
        }
        out.push('Z');
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_read_as_chrono_writes_them() {
        use chrono::TimeZone;
        let chrono_text = |t: &chrono::DateTime<chrono::Utc>| {
            t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
        };
        let base = chrono::Utc
            .with_ymd_and_hms(2026, 11, 26, 23, 59, 59)
            .unwrap();
        // Within one second (the cached text), across seconds, days and
        // years, and far from now.
        for micros in [
            0,
            1,
            9,
            10,
            999,
            1_000,
            123_456,
            500_000,
            999_999,
            1_000_000,
            1_000_001,
            86_400_000_123,
        ] {
            for t in [
                base,
                chrono::DateTime::UNIX_EPOCH,
                chrono::Utc
                    .with_ymd_and_hms(9999, 12, 31, 23, 59, 59)
                    .unwrap(),
            ] {
                let t = t + chrono::Duration::microseconds(micros);
                assert_eq!(rfc3339_micros(t), chrono_text(&t));
                assert_eq!(rfc3339_micros(t), chrono_text(&t), "the second cached");
            }
        }
        let now = now_rfc3339();
        assert_eq!(now.len(), "2026-11-21T10:00:00.000000Z".len());
    }

    #[test]
    fn content_is_text_split_on_newlines() {
        assert_eq!(FileData::new("a\nb").content, ["a", "b"]);
        assert_eq!(FileData::new("a\n").content, ["a", ""]);
        assert_eq!(FileData::new("").content, [""]);
        assert_eq!(FileData::new("x\n\ny").text(), "x\n\ny");
    }
}
