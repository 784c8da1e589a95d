//! Content parts: what a message carries after its text — images (as
//! base64 data or a URL) and text between them.
//!
//! A [`Message`](crate::Message)'s `content` stays its text; `parts` follow
//! it in order. A text-only message has no parts and saves exactly as it
//! did before parts existed. Saved shape (`"type"` tags the part):
//!
//! ```json
//! {"role": "human", "content": "What is in this picture?",
//!  "parts": [{"type": "image", "media_type": "image/png", "data": "iVBORw0..."},
//!            {"type": "text", "text": "and this one?"},
//!            {"type": "image", "url": "https://example.com/cat.jpg"}]}
//! ```
//!
//! Each provider turns parts into its own wire format (OpenAI's
//! `image_url` parts, Anthropic's `image` blocks); a model whose settings
//! say it cannot read images refuses the request with
//! [`ModelError::ImagesNotSupported`](crate::ModelError::ImagesNotSupported)
//! instead of dropping them.

use serde::{Deserialize, Serialize};

/// One part of a message after its text.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ContentPart {
    /// Text between images.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image(ImagePart),
}

impl ContentPart {
    /// An image given as base64 data of the given media type
    /// (`image/png`, `image/jpeg`, `image/gif`, `image/webp`).
    pub fn image_base64(media_type: impl Into<String>, data: impl Into<String>) -> Self {
        ContentPart::Image(ImagePart {
            media_type: Some(media_type.into()),
            data: Some(data.into()),
            url: None,
            detail: None,
        })
    }

    /// An image given by URL (`https://...`, or a `data:` URL).
    pub fn image_url(url: impl Into<String>) -> Self {
        let url = url.into();
        match split_data_url(&url) {
            Some((media_type, data)) => Self::image_base64(media_type, data),
            None => ContentPart::Image(ImagePart {
                media_type: None,
                data: None,
                url: Some(url),
                detail: None,
            }),
        }
    }
}

/// An image: base64 data with its media type, or a URL. Saved with the
/// fields it was given, exactly (`detail` is OpenAI's `low`/`high`/`auto`
/// hint, kept when a client sent one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImagePart {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
}

impl ImagePart {
    /// The media type of base64 data (`image/png`...), when given.
    pub fn media_type(&self) -> Option<&str> {
        self.media_type.as_deref()
    }

    /// The base64 data, when the image is given as data.
    pub fn data(&self) -> Option<&str> {
        self.data.as_deref()
    }

    /// The URL, when the image is given by URL.
    pub fn url(&self) -> Option<&str> {
        self.url.as_deref()
    }

    /// OpenAI's `detail` hint, when a client gave one.
    #[cfg(feature = "openai")]
    pub(crate) fn detail(&self) -> Option<&str> {
        self.detail.as_deref()
    }

    /// Sets OpenAI's `detail` hint (`low`, `high`, `auto`).
    pub fn with_detail(mut self, detail: Option<String>) -> Self {
        self.detail = detail;
        self
    }

    /// The image as one URL: a `data:<type>;base64,<data>` URL for data,
    /// else the URL itself (empty when the part has neither).
    #[cfg(feature = "openai")]
    pub(crate) fn as_url(&self) -> String {
        match (&self.data, &self.url) {
            (Some(data), _) => format!(
                "data:{};base64,{data}",
                self.media_type.as_deref().unwrap_or("image/png")
            ),
            (None, Some(url)) => url.clone(),
            (None, None) => String::new(),
        }
    }
}

/// `data:<type>;base64,<data>` -> (`<type>`, `<data>`).
fn split_data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (head, data) = rest.split_once(',')?;
    let media_type = head.strip_suffix(";base64")?;
    Some((media_type, data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parts_save_in_their_own_shape_and_data_urls_become_data() {
        let part = ContentPart::image_url("data:image/png;base64,AAAA");
        assert_eq!(
            serde_json::to_value(&part).unwrap(),
            json!({"type": "image", "media_type": "image/png", "data": "AAAA"})
        );
        let ContentPart::Image(image) = &part else {
            panic!("an image")
        };
        assert_eq!(image.as_url(), "data:image/png;base64,AAAA");
        let url = ContentPart::image_url("https://example.com/a.png");
        assert_eq!(
            serde_json::to_value(&url).unwrap(),
            json!({"type": "image", "url": "https://example.com/a.png"})
        );
        for p in [part, url, ContentPart::Text { text: "t".into() }] {
            let text = serde_json::to_string(&p).unwrap();
            assert_eq!(serde_json::from_str::<ContentPart>(&text).unwrap(), p);
        }
    }
}
