//! The content parts a person's message carries through the session and
//! runs APIs (`POST /api/sessions/{id}/messages`, `POST
//! /api/sessions/{id}/runs`): text and images, read and checked before
//! anything is saved, so a part no model could read is a 400 naming it
//! (`parts[j]`) and what is wrong with it, never a failed run later.
//!
//! ```text
//!  {"type": "text", "text": "..."}
//!  {"type": "image", "media_type": "image/png", "data": "<base64>"[, "detail"]}
//!      kept exactly as sent (the session view shows the same part)
//!  {"type": "image", "url": "data:image/png;base64,<base64>"[, "detail"]}
//!      a data URL is kept as its media type and data (as ContentPart::image_url
//!      reads it), so every provider can send it
//!  {"type": "image", "url": "https://..."[, "detail"]}    kept as the URL
//!  {"type": "image_url", "image_url": {"url", "detail"?}}  OpenAI's spelling of the two above
//! ```
//!
//! An image is PNG, JPEG, GIF or WebP (its first bytes must say the same
//! as its media type), valid base64, at most [`MAX_IMAGE_BYTES`] once
//! decoded (3.75 MB: 5 MB in base64, the smallest provider limit, and what
//! `read_file` shows a model at most), and a message carries at most
//! [`MAX_IMAGES`]. The web page checks the same size before it sends.
//! An image URL must be `https://`/`http://` to a public host (no
//! loopback, private, link-local or metadata address) or a `data:` URL;
//! `/v1/chat/completions` checks its `image_url` parts the same way.

use base64::Engine as _;
use lc_agent::ContentPart;
use serde_json::{Map, Value};

use crate::error::ApiError;

/// The largest image a message may carry, decoded (3.75 MB).
const MAX_IMAGE_BYTES: usize = 3_750_000;

/// The most images one message may carry.
const MAX_IMAGES: usize = 20;

/// The longest image URL (a `data:` URL aside).
const MAX_URL_BYTES: usize = 8 * 1024;

/// The image types a model reads: media type, name.
const IMAGE_TYPES: &[(&str, &str)] = &[
    ("image/png", "PNG"),
    ("image/jpeg", "JPEG"),
    ("image/gif", "GIF"),
    ("image/webp", "WebP"),
];

/// A request's `parts` (absent or `null`: none), checked (see the
/// [module docs](self)); 400 naming the first part that is wrong.
pub(crate) fn read_parts(parts: Option<&Value>) -> Result<Vec<ContentPart>, ApiError> {
    let items = match parts {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(bad(format!(
                "`parts` must be a list of parts, got {}",
                kind_of(other)
            )))
        }
    };
    let mut read = Vec::with_capacity(items.len());
    let mut images = 0;
    for (j, item) in items.iter().enumerate() {
        let part = read_part(item).map_err(|why| bad(format!("`parts[{j}]`: {why}")))?;
        if matches!(part, ContentPart::Image(_)) {
            images += 1;
            if images > MAX_IMAGES {
                return Err(bad(format!(
                    "`parts[{j}]`: a message may carry at most {MAX_IMAGES} images; send the \
                     others in another message"
                )));
            }
        }
        read.push(part);
    }
    Ok(read)
}

fn bad(message: String) -> ApiError {
    ApiError::BadRequest(message)
}

/// One part, or why it cannot be read.
fn read_part(item: &Value) -> Result<ContentPart, String> {
    let Some(part) = item.as_object() else {
        return Err(format!(
            "a part is an object with a `type` (\"text\" or \"image\"), got {}",
            kind_of(item)
        ));
    };
    let Some(kind) = part.get("type").and_then(Value::as_str) else {
        return Err("a part needs a `type` (\"text\" or \"image\")".to_string());
    };
    match kind {
        "text" => {
            only_fields(part, "a text part", &["type", "text"])?;
            let text = string(part, "text")?.ok_or("a text part needs its `text`")?;
            Ok(ContentPart::Text { text: text.into() })
        }
        "image" => {
            only_fields(
                part,
                "an image part",
                &["type", "media_type", "data", "url", "detail"],
            )?;
            let detail = detail_of(part)?;
            match (string(part, "data")?, string(part, "url")?) {
                (Some(data), None) => {
                    let media_type = string(part, "media_type")?.ok_or(
                        "an image given as `data` needs its `media_type` (image/png, \
                         image/jpeg, image/gif or image/webp)",
                    )?;
                    check_image(media_type, data)?;
                    Ok(with_detail(
                        ContentPart::image_base64(media_type, data),
                        detail,
                    ))
                }
                (None, Some(url)) => {
                    if part.contains_key("media_type") {
                        return Err("`media_type` goes with `data`; an image given by `url` \
                                    has none (a data URL names its own)"
                            .to_string());
                    }
                    image_at(url, detail)
                }
                (Some(_), Some(_)) => {
                    Err("an image has either `data` or a `url`, not both".to_string())
                }
                (None, None) => Err(
                    "an image needs its `data` (base64, with its `media_type`) or a `url`"
                        .to_string(),
                ),
            }
        }
        "image_url" => {
            only_fields(part, "an `image_url` part", &["type", "image_url"])?;
            let Some(image) = part.get("image_url").and_then(Value::as_object) else {
                return Err("an `image_url` part needs `\"image_url\": {\"url\": ...}`".to_string());
            };
            only_fields(image, "`image_url`", &["url", "detail"])?;
            let url = string(image, "url")?.ok_or("an `image_url` part needs its `url`")?;
            image_at(url, detail_of(image)?)
        }
        other => Err(format!(
            "a `{other}` part cannot be read: a message carries `text` and `image` parts"
        )),
    }
}

/// An image given by URL: a data URL (checked like data) or an
/// `https://` / `http://` address to a public host (the session API's
/// parts and a chat completion's `image_url` parts).
pub(crate) fn image_at(url: &str, detail: Option<String>) -> Result<ContentPart, String> {
    if let Some(rest) = url.strip_prefix("data:") {
        let (head, data) = rest
            .split_once(',')
            .ok_or("a data URL reads `data:<media type>;base64,<data>`")?;
        let media_type = head
            .strip_suffix(";base64")
            .ok_or("a data URL must carry base64 (`data:<media type>;base64,<data>`)")?;
        check_image(media_type, data)?;
        return Ok(with_detail(ContentPart::image_url(url), detail));
    }
    let scheme = url.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
    if !matches!(scheme.as_deref(), Some("https" | "http")) {
        return Err(
            "an image `url` is an https:// (or http://) address or a data: URL".to_string(),
        );
    }
    if url.len() > MAX_URL_BYTES {
        return Err(format!(
            "the image URL is {} characters long; at most {MAX_URL_BYTES} are taken",
            url.len()
        ));
    }
    if let Some(why) = inside_address(url) {
        return Err(format!(
            "the image URL names {why}: the model's server would fetch it from inside its own              network; send the picture itself (a data: URL) instead"
        ));
    }
    Ok(with_detail(ContentPart::image_url(url), detail))
}

/// What an `http(s)` URL's host is when it is not a public address: a
/// loopback, private, link-local (the cloud metadata service), shared or
/// unspecified IP, `localhost`, a metadata host name, or an address
/// written as a number (`2130706433`, `0x7f.1`). Names are not resolved:
/// the check is of what the URL says.
fn inside_address(url: &str) -> Option<String> {
    use std::net::{IpAddr, Ipv6Addr};
    let rest = url.split_once("://").map_or("", |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host_port.split(':').next().unwrap_or_default(),
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if host.is_empty() {
        return Some("no host".to_string());
    }
    if host == "localhost"
        || host.ends_with(".localhost")
        || host == "metadata"
        || host.ends_with(".internal")
    {
        return Some(format!("`{host}`, a name inside the server's network"));
    }
    let private_v6 = |ip: &Ipv6Addr| {
        let first = ip.segments()[0];
        ip.is_loopback()
            || ip.is_unspecified()
            || (first & 0xfe00) == 0xfc00
            || (first & 0xffc0) == 0xfe80
    };
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => {
            let o = ip.octets();
            let shared = o[0] == 100 && (64..128).contains(&o[1]);
            (ip.is_loopback()
                || ip.is_private()
                || ip.is_link_local()
                || ip.is_unspecified()
                || ip.is_broadcast()
                || shared
                || o[0] == 0)
                .then(|| format!("{ip}, an address inside a network"))
        }
        Ok(IpAddr::V6(ip)) => match ip.to_ipv4_mapped() {
            Some(v4) => inside_address(&format!("http://{v4}/")),
            None => private_v6(&ip).then(|| format!("{ip}, an address inside a network")),
        },
        // 2130706433, 0x7f.1, 0177.0.0.1: numbers some clients read as
        // addresses.
        Err(_)
            if host.split('.').all(|label| {
                !label.is_empty()
                    && (label.bytes().all(|b| b.is_ascii_digit())
                        || label
                            .strip_prefix("0x")
                            .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit())))
            }) =>
        {
            Some(format!("`{host}`, an address written as a number"))
        }
        Err(_) => None,
    }
}

/// Whether `data` is base64 of an image of `media_type` a model reads,
/// within [`MAX_IMAGE_BYTES`].
fn check_image(media_type: &str, data: &str) -> Result<(), String> {
    let Some((_, name)) = IMAGE_TYPES.iter().find(|(t, _)| *t == media_type) else {
        return Err(format!(
            "`{media_type}` images cannot be read: attach a PNG, JPEG, GIF or WebP image"
        ));
    };
    // Four base64 characters carry three bytes: refused before decoding.
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count().min(2);
    let size = (data.len() / 4 * 3).saturating_sub(padding);
    if size > MAX_IMAGE_BYTES {
        return Err(too_large(size));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| format!("the image's data is not valid base64 ({e})"))?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(too_large(bytes.len()));
    }
    if !starts_as(media_type, &bytes) {
        return Err(format!(
            "the data is not a {name} image (its first bytes are not a {name} file's), though \
             its media type says `{media_type}`"
        ));
    }
    Ok(())
}

fn too_large(bytes: usize) -> String {
    let mb = |n: usize| format!("{:.2} MB", n as f64 / 1e6);
    // Just over the limit, the sizes in MB read the same: say the bytes.
    let size = if mb(bytes) == mb(MAX_IMAGE_BYTES) {
        format!("{bytes} bytes")
    } else {
        mb(bytes)
    };
    format!(
        "the image is {size}; an image may be at most {} ({MAX_IMAGE_BYTES} bytes): attach a \
         smaller one (or a screenshot of part of it)",
        mb(MAX_IMAGE_BYTES)
    )
}

/// Whether `bytes` open as a file of `media_type` does (its magic bytes).
fn starts_as(media_type: &str, bytes: &[u8]) -> bool {
    match media_type {
        "image/png" => bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "image/jpeg" => bytes.starts_with(&[0xFF, 0xD8, 0xFF]),
        "image/gif" => bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a"),
        "image/webp" => bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP",
        _ => false,
    }
}

/// OpenAI's `detail` hint, when given: `low`, `high` or `auto`.
fn detail_of(part: &Map<String, Value>) -> Result<Option<String>, String> {
    match string(part, "detail")? {
        None => Ok(None),
        Some(d @ ("low" | "high" | "auto")) => Ok(Some(d.to_string())),
        Some(other) => Err(format!(
            "`detail` is \"low\", \"high\" or \"auto\", got \"{other}\""
        )),
    }
}

fn with_detail(part: ContentPart, detail: Option<String>) -> ContentPart {
    match part {
        ContentPart::Image(image) => ContentPart::Image(image.with_detail(detail)),
        other => other,
    }
}

/// A field that must be a string when present (`null` counts as absent).
fn string<'a>(part: &'a Map<String, Value>, field: &str) -> Result<Option<&'a str>, String> {
    match part.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!(
            "`{field}` must be a string, got {}",
            kind_of(other)
        )),
    }
}

/// Refuses fields a part of this kind does not have (a typo would
/// otherwise be dropped silently).
fn only_fields(part: &Map<String, Value>, what: &str, fields: &[&str]) -> Result<(), String> {
    match part.keys().find(|k| !fields.contains(&k.as_str())) {
        None => Ok(()),
        Some(key) => Err(format!(
            "`{key}` is not a field of {what} (it has {})",
            fields
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// What a JSON value is, in words.
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PNG: &str = "iVBORw0KGgo=";

    #[test]
    fn the_saved_shape_is_kept_and_a_data_url_becomes_data() {
        let parts = json!([
            {"type": "image", "media_type": "image/png", "data": PNG, "detail": "low"},
            {"type": "text", "text": "and"},
            {"type": "image", "url": format!("data:image/png;base64,{PNG}")},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
        ]);
        let read = read_parts(Some(&parts)).unwrap();
        assert_eq!(
            serde_json::to_value(&read).unwrap(),
            json!([
                {"type": "image", "media_type": "image/png", "data": PNG, "detail": "low"},
                {"type": "text", "text": "and"},
                {"type": "image", "media_type": "image/png", "data": PNG},
                {"type": "image", "url": "https://example.com/a.png"},
            ])
        );
    }

    #[test]
    fn what_is_wrong_is_named() {
        let refused = |parts: Value| match read_parts(Some(&parts)) {
            Err(ApiError::BadRequest(m)) => m,
            other => panic!("{parts}: {other:?}"),
        };
        let gif_as_png = base64::engine::general_purpose::STANDARD.encode(b"GIF89a....");
        for (parts, words) in [
            (json!("x"), "`parts` must be a list"),
            (json!([{"text": "t"}]), "`parts[0]`: a part needs a `type`"),
            (json!([{"type": "audio"}]), "a `audio` part cannot be read"),
            (
                json!([{"type": "image", "media_type": "image/png", "data": "%%%"}]),
                "not valid base64",
            ),
            (
                json!([{"type": "image", "media_type": "image/png", "data": gif_as_png}]),
                "not a PNG image",
            ),
            (
                json!([{"type": "image", "media_type": "image/bmp", "data": PNG}]),
                "`image/bmp` images cannot be read",
            ),
            (
                json!([{"type": "image", "url": "javascript:alert(1)"}]),
                "https://",
            ),
            (
                json!([{"type": "image", "data": PNG}]),
                "needs its `media_type`",
            ),
            (
                json!([{"type": "image", "media_type": "image/png", "data": PNG, "colour": 1}]),
                "`colour` is not a field",
            ),
            (
                json!([{"type": "text", "text": "ok"}, {"type": "image", "url": "https://a/b.png", "detail": "max"}]),
                "`parts[1]`: `detail` is",
            ),
        ] {
            let m = refused(parts.clone());
            assert!(m.contains(words), "{parts}: {m}");
        }
        let huge = "A".repeat((MAX_IMAGE_BYTES + 3) / 3 * 4 + 4);
        let m = refused(json!([{"type": "image", "media_type": "image/png", "data": huge}]));
        assert!(m.contains("may be at most 3.75 MB"), "{m}");
        let many: Vec<Value> = (0..=MAX_IMAGES)
            .map(|_| json!({"type": "image", "url": "https://example.com/a.png"}))
            .collect();
        let m = refused(Value::Array(many));
        assert!(m.contains(&format!("at most {MAX_IMAGES} images")), "{m}");
    }
}
