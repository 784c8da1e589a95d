//! `read_file` on images and PDFs: an image comes back as an image part
//! (downscaled and re-encoded when too large for a model) after a line
//! describing it; a PDF as the text of its pages, numbered and paged like
//! any text file.
//!
//! ```text
//!  read_file(/shot.png) ─ name says image/PDF ─▶ Backend::read_bytes(cap 20 MiB)
//!     └ text read fails "binary" ─ magic bytes say image ─┘      │ sniff (magic bytes)
//!        image: within 1568 px and 3.75 MB? as it is : decode ─ thumbnail ─ PNG (JPEG if larger)
//!               ─▶ "Image: <path> (PNG, 800x600 px, 12345 bytes)" + ContentPart::Image
//!        PDF:   lopdf ─ text per page, "--- Page <n> of <total> ---" before each
//!               ─▶ the text tools' paging (offset/limit are lines) + "[PDF: <n> pages ...]"
//!        neither (a `.png` that holds text): read as text
//! ```
//!
//! Which files count is decided by their bytes, not their names: a file
//! named `.png` that holds text (a Git LFS pointer, say) is read as text;
//! a PNG without an extension, which the text read finds binary, is shown
//! as an image. The limits and the error texts are documented in
//! `docs/read-file-images-and-pdfs.md`.

use std::io::Cursor;

use base64::Engine as _;
use image::{DynamicImage, ImageFormat, ImageReader, Limits};
use lc_agent::{ContentPart, ToolOutput};

use crate::backend::{Backend, ReadPage};
use crate::error::{FsError, FsResult};
use crate::paging::page;
use crate::read_format::format_read;

/// Bytes of an image or PDF file `read_file` reads at most (20 MiB).
pub(crate) const MAX_MEDIA_BYTES: u64 = 20 << 20;
/// The longest side of an image a model is shown, in pixels (larger
/// images are downscaled to it; what providers resize to anyway).
pub(crate) const MAX_IMAGE_SIDE: u32 = 1568;
/// Bytes of the image a model is shown at most (3.75 MB: 5 MB once
/// base64-encoded, the smallest provider limit).
pub(crate) const MAX_IMAGE_BYTES: usize = 3_750_000;
/// Pixels of an image decoded at most (width × height), so a small file
/// cannot claim a huge canvas.
pub(crate) const MAX_IMAGE_PIXELS: u64 = 50_000_000;
/// Bytes the decoded content of one PDF page may take at most.
const MAX_PDF_PAGE_BYTES: usize = 64 << 20;

/// What a file holds, by its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Media {
    /// An image in a format models read.
    Image(ImageFormat),
    /// A PDF document.
    Pdf,
}

/// Whether `path`'s extension names an image or a PDF (case-insensitive):
/// such a file is read as bytes first.
pub(crate) fn named_media(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let Some((_, ext)) = name.rsplit_once('.') else {
        return false;
    };
    ["png", "jpg", "jpeg", "gif", "webp", "pdf"]
        .iter()
        .any(|e| ext.eq_ignore_ascii_case(e))
}

/// What `bytes` are, by their magic bytes: PNG, JPEG, GIF, WebP or PDF.
pub(crate) fn sniff(bytes: &[u8]) -> Option<Media> {
    let head = &bytes[..bytes.len().min(1024)];
    if head.windows(5).any(|w| w == b"%PDF-") {
        return Some(Media::Pdf);
    }
    match image::guess_format(bytes).ok()? {
        f @ (ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::Gif | ImageFormat::WebP) => {
            Some(Media::Image(f))
        }
        _ => None,
    }
}

/// The name a format is shown by, and its media type.
fn names(format: ImageFormat) -> (&'static str, &'static str) {
    match format {
        ImageFormat::Png => ("PNG", "image/png"),
        ImageFormat::Jpeg => ("JPEG", "image/jpeg"),
        ImageFormat::Gif => ("GIF", "image/gif"),
        ImageFormat::WebP => ("WebP", "image/webp"),
        _ => ("image", "application/octet-stream"),
    }
}

/// The answer for an image or PDF file of these bytes, or `None` when the
/// bytes are neither (the caller reads the file as text).
pub(crate) fn answer(
    path: &str,
    bytes: &[u8],
    offset: usize,
    limit: usize,
    read_limit: u64,
) -> Option<FsResult<ToolOutput>> {
    Some(match sniff(bytes)? {
        Media::Image(format) => image_answer(path, bytes, format),
        Media::Pdf => pdf_answer(path, bytes, offset, limit, read_limit).map(ToolOutput::ok),
    })
}

/// `read_file`'s answer for a file whose name says image or PDF: the bytes
/// (capped), then the image or the PDF's text; a file that holds neither
/// is read as text.
pub(crate) async fn read_named(
    backend: &dyn Backend,
    path: &str,
    offset: usize,
    limit: usize,
) -> FsResult<Option<ToolOutput>> {
    let bytes = backend.read_bytes(path, MAX_MEDIA_BYTES).await?;
    answer(path, &bytes, offset, limit, backend.limits().read_limit()).transpose()
}

/// The image file at `path` (a virtual path, checked like the tools'
/// paths) as a content part to attach to a message (`@shot.png` in the
/// CLI): as it is, or downscaled like `read_file` shows it. A file that is
/// not a PNG, JPEG, GIF or WebP image is [`FsError::NotAnImage`].
///
/// ```no_run
/// # async fn demo() -> Result<(), lc_agent_filesystem::FsError> {
/// let disk = lc_agent_filesystem::FilesystemBackend::new(".").map_err(|e| {
///     lc_agent_filesystem::FsError::Io { path: "/".into(), reason: e.to_string() }
/// })?;
/// let part = lc_agent_filesystem::image_part(&disk, "shots/login.png").await?;
/// let message = lc_agent::Message::Human {
///     content: "What is wrong here?".into(),
///     parts: vec![part],
/// };
/// # Ok(()) }
/// ```
pub async fn image_part(backend: &dyn Backend, path: &str) -> FsResult<ContentPart> {
    let file = crate::path::normalize(path)?;
    let bytes = backend.read_bytes(&file, MAX_MEDIA_BYTES).await?;
    let Some(Media::Image(format)) = sniff(&bytes) else {
        return Err(FsError::NotAnImage(file));
    };
    let mut out = image_answer(&file, &bytes, format)?;
    out.parts.pop().ok_or(FsError::NotAnImage(file))
}

fn undecodable(path: &str, what: &str, reason: impl std::fmt::Display) -> FsError {
    FsError::Undecodable {
        path: path.to_string(),
        what: what.to_string(),
        reason: reason.to_string(),
    }
}

/// An image part for `bytes` and the line that describes it.
fn image_answer(path: &str, bytes: &[u8], format: ImageFormat) -> FsResult<ToolOutput> {
    let (name, media_type) = names(format);
    let what = format!("a {name} image");
    let reader = || {
        let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
        let mut limits = Limits::default();
        limits.max_alloc = Some(MAX_IMAGE_PIXELS * 4 + (64 << 20));
        reader.limits(limits);
        reader
    };
    let (width, height) = reader()
        .into_dimensions()
        .map_err(|e| undecodable(path, &what, e))?;
    let pixels = u64::from(width) * u64::from(height);
    if pixels > MAX_IMAGE_PIXELS {
        return Err(FsError::TooManyPixels {
            path: path.to_string(),
            width,
            height,
            max: MAX_IMAGE_PIXELS,
        });
    }
    let mut text = format!(
        "Image: {} ({name}, {width}x{height} px, {} bytes)",
        crate::path::shown(path),
        bytes.len()
    );
    let fits = width.max(height) <= MAX_IMAGE_SIDE && bytes.len() <= MAX_IMAGE_BYTES;
    let (media_type, shown) = if fits {
        (media_type, bytes.to_vec())
    } else {
        let decoded = reader().decode().map_err(|e| undecodable(path, &what, e))?;
        let (media_type, small, (w, h)) = downscale(&decoded).map_err(|e| FsError::Io {
            path: path.to_string(),
            reason: format!("cannot re-encode the image: {e}"),
        })?;
        text.push_str(&format!(
            "; shown downscaled to {w}x{h} px ({}, {} bytes)",
            if media_type == "image/png" {
                "PNG"
            } else {
                "JPEG"
            },
            small.len()
        ));
        (media_type, small)
    };
    let data = base64::engine::general_purpose::STANDARD.encode(&shown);
    Ok(ToolOutput::with_parts(
        text,
        vec![ContentPart::image_base64(media_type, data)],
    ))
}

/// `image` within [`MAX_IMAGE_SIDE`], as PNG, or as JPEG when the PNG
/// passes [`MAX_IMAGE_BYTES`] (photos); its media type, bytes and size.
fn downscale(image: &DynamicImage) -> image::ImageResult<(&'static str, Vec<u8>, (u32, u32))> {
    let small = if image.width().max(image.height()) > MAX_IMAGE_SIDE {
        image.thumbnail(MAX_IMAGE_SIDE, MAX_IMAGE_SIDE)
    } else {
        image.clone()
    };
    let size = (small.width(), small.height());
    let mut png = Cursor::new(Vec::new());
    small.write_to(&mut png, ImageFormat::Png)?;
    if png.get_ref().len() <= MAX_IMAGE_BYTES {
        return Ok(("image/png", png.into_inner(), size));
    }
    for quality in [85u8, 60, 35] {
        let mut jpeg = Vec::new();
        let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, quality);
        DynamicImage::ImageRgb8(small.to_rgb8()).write_with_encoder(encoder)?;
        if jpeg.len() <= MAX_IMAGE_BYTES || quality == 35 {
            return Ok(("image/jpeg", jpeg, size));
        }
    }
    Ok(("image/png", png.into_inner(), size))
}

/// The text of a PDF's pages, a `--- Page <n> of <total> ---` line before
/// each, paged like a text file, and a last line naming the page count.
fn pdf_answer(
    path: &str,
    bytes: &[u8],
    offset: usize,
    limit: usize,
    read_limit: u64,
) -> FsResult<String> {
    let doc = lopdf::Document::load_mem(bytes).map_err(|e| undecodable(path, "a PDF", e))?;
    if doc.is_encrypted() {
        return Err(undecodable(path, "a PDF", "it is encrypted"));
    }
    let pages: Vec<u32> = doc.get_pages().keys().copied().collect();
    let total = pages.len();
    let mut text = String::new();
    for (i, number) in pages.iter().enumerate() {
        text.push_str(&format!("--- Page {} of {total} ---\n", i + 1));
        let page_text = doc
            .extract_text_with_limit(&[*number], MAX_PDF_PAGE_BYTES)
            .unwrap_or_else(|e| format!("(the text of this page could not be read: {e})"));
        let page_text = page_text.trim_end();
        if page_text.trim().is_empty() {
            text.push_str("(no text on this page)\n");
        } else {
            text.push_str(page_text);
            text.push('\n');
        }
    }
    let window: ReadPage = page(text.as_bytes(), offset, limit).map_err(|e| FsError::Io {
        path: path.to_string(),
        reason: e.to_string(),
    })?;
    let mut out = format_read(&window, read_limit)?;
    out.push_str(&format!(
        "\n[PDF: {total} page{}; the text of each page, without images or layout]",
        if total == 1 { "" } else { "s" }
    ));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_magic_bytes() {
        assert!(named_media("/a/Shot.PNG"));
        assert!(named_media("/doc.pdf"));
        assert!(!named_media("/png"));
        assert!(!named_media("/a.png.txt"));
        assert_eq!(sniff(b"%PDF-1.4\n"), Some(Media::Pdf));
        assert_eq!(
            sniff(b"\x89PNG\r\n\x1a\n...."),
            Some(Media::Image(ImageFormat::Png))
        );
        assert_eq!(sniff(b"version https://git-lfs.github.com/spec/v1\n"), None);
    }
}
