//! A saved session with what a run draws from the clock and the random
//! generator masked, so two runs of the same conversation compare byte
//! for byte: each uuid (node and session ids) becomes `<id-N>`, N its
//! first-seen position, so the shape of the graph (which node points to
//! which) still has to be the same; RFC 3339 timestamps become `<time>`;
//! `elapsed_us` values become `<us>`. Everything else — messages, tool
//! calls and their ids, metadata, files, order — must be equal.

use regex::{Captures, Regex};

/// `saved` with ids, times and durations masked (see the module docs).
pub fn masked(saved: &str) -> String {
    let uuid = Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap();
    let time =
        Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})").unwrap();
    let elapsed = Regex::new(r#""elapsed_us":\s*\d+"#).unwrap();
    let mut seen: Vec<String> = Vec::new();
    let text = uuid.replace_all(saved, |c: &Captures| {
        let id = c[0].to_string();
        let n = seen.iter().position(|s| *s == id).unwrap_or_else(|| {
            seen.push(id);
            seen.len() - 1
        });
        format!("<id-{n}>")
    });
    let text = time.replace_all(&text, "<time>");
    elapsed
        .replace_all(&text, r#""elapsed_us":<us>"#)
        .into_owned()
}

#[cfg(test)]
#[test]
fn ids_times_and_durations_are_masked_by_position() {
    let a = r#"{"id":"7e3f3090-5d88-4aa5-af35-f8d2bb1f9335","p":["7e3f3090-5d88-4aa5-af35-f8d2bb1f9335","d442fe68-a459-4fd2-982d-20836bec1107"],"t":{"started_at":"2026-11-25T11:32:51.417034Z","elapsed_us":19160}}"#;
    assert_eq!(
        masked(a),
        r#"{"id":"<id-0>","p":["<id-0>","<id-1>"],"t":{"started_at":"<time>","elapsed_us":<us>}}"#
    );
}
