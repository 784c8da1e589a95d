//! `read_file` on images and PDFs, on every backend: an image part after a
//! line describing it (downscaled when too large), a PDF's text per page
//! paged like text, the errors for what is too large or broken; the
//! in-memory backends keep text only (a PDF that is plain text works
//! there, image bytes are refused when stored); a model that cannot read
//! images gets the description and a note instead of a failed run.

use std::io::Cursor;
use std::sync::Arc;

use base64::Engine as _;
use lc_agent::{
    Attachments, ContentPart, HumanNode, OpenAiChatModel, RunnableNetwork, ToolOutput, ToolStatus,
};
use lc_agent_filesystem::{
    run_tool, Backend, CompositeBackend, FilesystemBackend, FilesystemModifier, InMemoryStore,
    LocalShellBackend, StateBackend, StoreBackend,
};
use lc_agent_test_support::{MockServer, Reply};
use serde_json::{json, Value};

/// A PNG of `width` x `height` pixels (a gradient, so it does not
/// compress to nothing).
pub fn png(width: u32, height: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, ((x * y) % 256) as u8])
    });
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

/// A PDF with one page per text (plain ASCII, offsets computed).
pub fn pdf(pages: &[&str]) -> Vec<u8> {
    let n = pages.len();
    // Objects: 1 catalog, 2 pages, 3 font, then per page: page, content.
    let mut objects: Vec<String> = Vec::new();
    objects.push("<< /Type /Catalog /Pages 2 0 R >>".into());
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 4 + 2 * i)).collect();
    objects.push(format!(
        "<< /Type /Pages /Kids [{}] /Count {n} >>",
        kids.join(" ")
    ));
    objects.push("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".into());
    for (i, text) in pages.iter().enumerate() {
        let content_id = 5 + 2 * i;
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents {content_id} 0 R >>"
        ));
        let mut stream = String::from("BT /F1 12 Tf 72 720 Td 14 TL\n");
        for line in text.lines() {
            stream.push_str(&format!("({line}) Tj T*\n"));
        }
        stream.push_str("ET");
        objects.push(format!(
            "<< /Length {} >>\nstream\n{stream}\nendstream",
            stream.len()
        ));
    }
    let mut out = String::from("%PDF-1.4\n");
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.push_str(&format!("{} 0 obj\n{body}\nendobj\n", i + 1));
    }
    let xref = out.len();
    out.push_str(&format!(
        "xref\n0 {}\n0000000000 65535 f \n",
        objects.len() + 1
    ));
    for off in offsets {
        out.push_str(&format!("{off:010} 00000 n \n"));
    }
    out.push_str(&format!(
        "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
        objects.len() + 1
    ));
    out.into_bytes()
}

async fn read(backend: &dyn Backend, args: Value) -> ToolOutput {
    run_tool(backend, "read_file", &args).await.unwrap()
}

fn image_of(out: &ToolOutput) -> (String, Vec<u8>) {
    assert_eq!(out.parts.len(), 1, "{}", out.content);
    let ContentPart::Image(image) = &out.parts[0] else {
        panic!("an image part: {:?}", out.parts)
    };
    let data = base64::engine::general_purpose::STANDARD
        .decode(image.data().unwrap())
        .unwrap();
    (image.media_type().unwrap().to_string(), data)
}

async fn put(backend: &dyn Backend, path: &str, bytes: Vec<u8>) {
    let done = backend.upload_files(vec![(path.to_string(), bytes)]).await;
    assert_eq!(done[0].error, None, "{path}");
}

const REPORT: [&str; 3] = [
    "Quarterly report\nRevenue grew by 12 percent",
    "",
    "Appendix\nThe numbers are rounded",
];

/// What every backend answers for a PDF (it is plain ASCII, so the
/// in-memory backends keep it too).
async fn pdf_answers(backend: &dyn Backend, root: &str, label: &str) {
    put(backend, &format!("{root}/docs/report.pdf"), pdf(&REPORT)).await;
    let out = read(
        backend,
        json!({"file_path": format!("{root}/docs/report.pdf")}),
    )
    .await;
    assert_eq!(out.status, ToolStatus::Ok, "{label}: {}", out.content);
    assert!(out.parts.is_empty(), "{label}");
    let lines: Vec<&str> = out.content.lines().collect();
    assert_eq!(
        lines[0], "     1\t--- Page 1 of 3 ---",
        "{label}: {}",
        out.content
    );
    assert!(
        lines[1].starts_with("     2\tQuarterly report"),
        "{label}: {}",
        out.content
    );
    assert!(
        out.content.contains("Revenue grew by 12 percent"),
        "{label}"
    );
    assert!(
        out.content.contains("\t--- Page 2 of 3 ---\n")
            && out.content.contains("\t(no text on this page)\n"),
        "{label}: {}",
        out.content
    );
    assert!(out.content.contains("The numbers are rounded"), "{label}");
    assert!(
        out.content
            .ends_with("\n[PDF: 3 pages; the text of each page, without images or layout]"),
        "{label}: {}",
        out.content
    );
    // Paged like text: offset and limit are lines.
    let out = read(
        backend,
        json!({"file_path": format!("{root}/docs/report.pdf"), "offset": 1, "limit": 1}),
    )
    .await;
    let lines: Vec<&str> = out.content.lines().collect();
    assert!(
        lines[0].starts_with("     2\tQuarterly report"),
        "{label}: {}",
        out.content
    );
    assert!(
        lines[1].starts_with("[Showing lines 2-2 of ")
            && lines[1].ends_with(". Use offset=2 to read more.]"),
        "{label}: {}",
        out.content
    );
    // A broken PDF is an error the model reads.
    put(
        backend,
        &format!("{root}/docs/broken.pdf"),
        b"%PDF-1.4\nthis is not a PDF body\n".to_vec(),
    )
    .await;
    let out = read(
        backend,
        json!({"file_path": format!("{root}/docs/broken.pdf")}),
    )
    .await;
    assert_eq!(out.status, ToolStatus::Error, "{label}");
    assert!(
        out.content.starts_with(&format!(
            "Error: {root}/docs/broken.pdf could not be read as a PDF: "
        )),
        "{label}: {}",
        out.content
    );
    // A file named .png that holds text is read as text.
    put(
        backend,
        &format!("{root}/lfs.png"),
        b"version https://git-lfs.github.com/spec/v1\noid sha256:abc\n".to_vec(),
    )
    .await;
    let out = read(backend, json!({"file_path": format!("{root}/lfs.png")})).await;
    assert_eq!(
        out.content, "     1\tversion https://git-lfs.github.com/spec/v1\n     2\toid sha256:abc",
        "{label}"
    );
}

/// What every backend that keeps bytes answers for images.
async fn image_answers(backend: &dyn Backend, root: &str, label: &str) {
    let small = png(40, 30);
    put(backend, &format!("{root}/shots/small.png"), small.clone()).await;
    let out = read(
        backend,
        json!({"file_path": format!("{root}/shots/small.png")}),
    )
    .await;
    assert_eq!(out.status, ToolStatus::Ok, "{label}: {}", out.content);
    assert_eq!(
        out.content,
        format!(
            "Image: {root}/shots/small.png (PNG, 40x30 px, {} bytes)",
            small.len()
        ),
        "{label}"
    );
    assert_eq!(
        image_of(&out),
        ("image/png".to_string(), small.clone()),
        "{label}: as it is"
    );

    // Without an image's name: the text read finds it binary, its bytes say PNG.
    put(backend, &format!("{root}/shots/noname"), small.clone()).await;
    let out = read(
        backend,
        json!({"file_path": format!("{root}/shots/noname")}),
    )
    .await;
    assert!(
        out.content
            .starts_with(&format!("Image: {root}/shots/noname (PNG, 40x30 px")),
        "{label}: {}",
        out.content
    );

    // Too wide: downscaled to 1568 px on its longest side.
    let big = png(2000, 500);
    put(backend, &format!("{root}/shots/wide.png"), big.clone()).await;
    let out = read(
        backend,
        json!({"file_path": format!("{root}/shots/wide.png")}),
    )
    .await;
    assert!(
        out.content.starts_with(&format!(
            "Image: {root}/shots/wide.png (PNG, 2000x500 px, {} bytes); shown downscaled to 1568x392 px (PNG, ",
            big.len()
        )),
        "{label}: {}",
        out.content
    );
    let (media_type, shown) = image_of(&out);
    assert_eq!(media_type, "image/png");
    let decoded = image::load_from_memory(&shown).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (1568, 392), "{label}");

    // Its magic bytes say PNG, the rest is broken.
    let mut broken = small.clone();
    broken.truncate(40);
    broken.extend_from_slice(&[0xff; 64]);
    put(backend, &format!("{root}/shots/broken.png"), broken).await;
    let out = read(
        backend,
        json!({"file_path": format!("{root}/shots/broken.png")}),
    )
    .await;
    assert_eq!(out.status, ToolStatus::Error, "{label}");
    assert!(
        out.content.starts_with(&format!(
            "Error: {root}/shots/broken.png could not be read as a PNG image: "
        )),
        "{label}: {}",
        out.content
    );
    // Missing: the text tools' error.
    let out = read(
        backend,
        json!({"file_path": format!("{root}/shots/none.png")}),
    )
    .await;
    assert_eq!(
        out.content,
        format!("Error: File not found: {root}/shots/none.png"),
        "{label}"
    );
}

#[tokio::test]
async fn images_and_pdfs_on_the_backends_that_keep_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let disk = FilesystemBackend::new(dir.path()).unwrap();
    image_answers(&disk, "", "disk").await;
    pdf_answers(&disk, "", "disk").await;

    let dir = tempfile::tempdir().unwrap();
    let shell = LocalShellBackend::new(dir.path()).unwrap();
    image_answers(&shell, "", "shell").await;
    pdf_answers(&shell, "", "shell").await;

    let dir = tempfile::tempdir().unwrap();
    let routed: Arc<dyn Backend> = CompositeBackend::new(StateBackend::factory())
        .route("/disk/", FilesystemBackend::new(dir.path()).unwrap())
        .resolve(&RunnableNetwork::new());
    image_answers(routed.as_ref(), "/disk", "composite").await;
    pdf_answers(routed.as_ref(), "/disk", "composite").await;
}

#[tokio::test]
async fn the_in_memory_backends_keep_text_only_and_read_text_pdfs() {
    let net = RunnableNetwork::new();
    let state = StateBackend::new(net.clone());
    pdf_answers(&state, "", "state").await;
    let store = StoreBackend::new(InMemoryStore::new(), ["u", "fs"]);
    pdf_answers(&store, "", "store").await;
    // An image's bytes are not text: refused where they would be stored.
    for (backend, label) in [(&state as &dyn Backend, "state"), (&store, "store")] {
        let done = backend
            .upload_files(vec![("/shot.png".to_string(), png(4, 4))])
            .await;
        assert!(done[0].error.is_some(), "{label}");
        let out = read(backend, json!({"file_path": "/shot.png"})).await;
        assert_eq!(out.content, "Error: File not found: /shot.png", "{label}");
    }
}

#[tokio::test]
async fn files_too_large_to_read_are_errors_before_they_are_read() {
    let dir = tempfile::tempdir().unwrap();
    // 30 MiB, sparse: the size alone refuses it.
    let file = std::fs::File::create(dir.path().join("huge.png")).unwrap();
    file.set_len(30 << 20).unwrap();
    let disk = FilesystemBackend::new(dir.path()).unwrap();
    let out = read(&disk, json!({"file_path": "/huge.png"})).await;
    assert_eq!(
        out.content,
        "Error: /huge.png is too large to read (31457280 bytes; images and PDFs are read up to 20971520 bytes)"
    );
    assert_eq!(out.status, ToolStatus::Error);

    // A small file that claims a huge canvas (IHDR's width and height at
    // bytes 16..24, its CRC after them).
    let mut header = png(1, 1);
    header[16..20].copy_from_slice(&100_000u32.to_be_bytes());
    header[20..24].copy_from_slice(&100_000u32.to_be_bytes());
    let crc = crc32(&header[12..29]);
    header[29..33].copy_from_slice(&crc.to_be_bytes());
    std::fs::write(dir.path().join("canvas.png"), &header).unwrap();
    let out = read(&disk, json!({"file_path": "/canvas.png"})).await;
    assert_eq!(
        out.content,
        "Error: /canvas.png is too large to read (100000x100000 px; images are decoded up to 50000000 pixels)"
    );
}

/// PNG's CRC-32 (the one zlib computes).
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for b in bytes {
        crc ^= u32::from(*b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A chat-completions reply that calls `read_file` on `/shot.png`, then
/// one that answers.
fn replies() -> Vec<Reply> {
    vec![
        Reply::json(
            json!({"choices": [{"message": {"role": "assistant", "content": "",
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read_file",
            "arguments": "{\"file_path\": \"/shot.png\"}"}}]}, "finish_reason": "tool_calls"}]}),
        ),
        Reply::json(
            json!({"choices": [{"message": {"role": "assistant", "content": "A gradient."},
            "finish_reason": "stop"}]}),
        ),
    ]
}

async fn run_with(images: Option<bool>) -> (MockServer, Vec<u8>) {
    let server = MockServer::start("/v1", "/chat/completions", replies()).await;
    let dir = tempfile::tempdir().unwrap();
    let shot = png(8, 6);
    std::fs::write(dir.path().join("shot.png"), &shot).unwrap();
    let mut model = OpenAiChatModel::builder()
        .model("eyes")
        .base_url(&server.base_url)
        .api_key("k");
    if let Some(images) = images {
        model = model.images(images);
    }
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("eyes")
        .model("eyes", model.build().unwrap())
        .build();
    net.add_modifier(FilesystemModifier::new(
        FilesystemBackend::new(dir.path()).unwrap(),
    ))
    .unwrap();
    {
        let _scope = net.enter();
        HumanNode::new("What is in /shot.png?");
    }
    let answer = net.invoke().await.unwrap();
    assert_eq!(answer.text(), "A gradient.");
    (server, shot)
}

#[tokio::test]
async fn the_model_sees_the_image_read_file_returns() {
    let (server, shot) = run_with(None).await;
    let messages = server.body(1)["messages"].clone();
    let data_url = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(&shot)
    );
    let tool = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(
        tool["content"],
        format!("Image: /shot.png (PNG, 8x6 px, {} bytes)", shot.len())
    );
    let last = messages.as_array().unwrap().last().unwrap();
    assert_eq!(
        last["content"],
        json!([{"type": "text", "text": "The result of tool call call_1:"},
               {"type": "image_url", "image_url": {"url": data_url}}])
    );
}

#[tokio::test]
async fn a_model_without_images_reads_the_description_and_a_note() {
    let (server, shot) = run_with(Some(false)).await;
    let body = server.body(1);
    let text = body.to_string();
    assert!(!text.contains("image_url"), "no image is sent: {text}");
    let tool = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(
        tool["content"],
        format!(
            "Image: /shot.png (PNG, 8x6 px, {} bytes)\n[The image is not shown: model `eyes` cannot read images.]",
            shot.len()
        )
    );
}
