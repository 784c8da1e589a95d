//! One reader of server-sent events, for a whole body or as it comes:
//! blocks separated by a blank line, `id:`, `event:` and `data:` fields
//! (data lines joined), the data parsed as JSON when it is JSON.

use futures::StreamExt;
use serde_json::Value;

/// One event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Its `id:` as a number, when it has one.
    pub id: Option<u64>,
    /// Its `event:` name (`message` when it has none).
    pub name: String,
    /// Its data: JSON when it parses, else the text as a JSON string.
    pub data: Value,
}

/// The events of a whole SSE body, in order; blocks without data (comments,
/// keep-alives) are left out.
pub fn events(body: &str) -> Vec<Event> {
    let mut reader = Reader::default();
    let mut out = reader.push(body);
    out.extend(reader.push("\n\n"));
    out
}

/// The events of a whole SSE body as `(name, data)` pairs.
pub fn named(body: &str) -> Vec<(String, Value)> {
    events(body).into_iter().map(|e| (e.name, e.data)).collect()
}

/// Reads SSE as it arrives: push bytes in any pieces (a character may be
/// split between two), get the events whose blocks are complete.
#[derive(Debug, Default)]
pub struct Reader {
    buf: Vec<u8>,
}

impl Reader {
    /// Adds `bytes`; the events they completed.
    pub fn push(&mut self, bytes: impl AsRef<[u8]>) -> Vec<Event> {
        self.buf.extend_from_slice(bytes.as_ref());
        let mut out = Vec::new();
        while let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
            let block: Vec<u8> = self.buf.drain(..end + 2).collect();
            if let Some(event) = parse_block(&String::from_utf8_lossy(&block)) {
                out.push(event);
            }
        }
        out
    }
}

fn parse_block(block: &str) -> Option<Event> {
    let mut id = None;
    let mut name = "message".to_string();
    let mut data = String::new();
    let mut has_data = false;
    for line in block.lines() {
        if let Some(v) = line.strip_prefix("id:") {
            id = v.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("event:") {
            name = v.trim().to_string();
        } else if let Some(v) = line.strip_prefix("data:") {
            if has_data {
                data.push('\n');
            }
            data.push_str(v.strip_prefix(' ').unwrap_or(v));
            has_data = true;
        }
    }
    if !has_data || data.is_empty() {
        return None;
    }
    let data = serde_json::from_str(&data).unwrap_or(Value::String(data));
    Some(Event { id, name, data })
}

/// Reads the events of a streaming response, calling `on_event` for each,
/// until `on_event` returns `false` (then `true` is returned) or the
/// stream ends or breaks (`false`).
pub async fn read(response: reqwest::Response, mut on_event: impl FnMut(&Event) -> bool) -> bool {
    let mut body = response.bytes_stream();
    let mut reader = Reader::default();
    while let Some(chunk) = body.next().await {
        let Ok(chunk) = chunk else { return false };
        for event in reader.push(&chunk) {
            if !on_event(&event) {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_body_gives_its_events_with_ids_names_and_json_data() {
        let body = "id: 1\nevent: node_added\ndata: {\"kind\":\"chat\"}\n\n\
                    : keep-alive\n\n\
                    data: [DONE]\n\n";
        assert_eq!(
            events(body),
            vec![
                Event {
                    id: Some(1),
                    name: "node_added".into(),
                    data: json!({"kind": "chat"}),
                },
                Event {
                    id: None,
                    name: "message".into(),
                    data: json!("[DONE]"),
                },
            ]
        );
    }

    #[test]
    fn pieces_split_anywhere_even_inside_a_character_give_the_same_events() {
        let body = "id: 7\nevent: delta\ndata: {\"text\":\"héllo\"}\n\n".as_bytes();
        let split = body.iter().position(|&b| b == 0xC3).unwrap() + 1;
        let mut reader = Reader::default();
        assert!(reader.push(&body[..split]).is_empty());
        let got = reader.push(&body[split..]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].id, Some(7));
        assert_eq!(got[0].data, json!({"text": "héllo"}));
    }
}
