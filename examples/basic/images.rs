//! # Images and PDFs: `read_file` shows a picture to the model, a PDF as text
//!
//! Shows: an agent over a directory workspace (`FilesystemBackend`) whose
//! model calls `read_file` on a PNG and on a PDF. The PNG comes back as an
//! image part after a line describing it (`Image: /shot.png (PNG, 1x1 px,
//! 70 bytes)`; a larger one is downscaled to 1568 px), which an
//! OpenAI-compatible server receives as an `image_url` part; the PDF comes
//! back as the text of its pages, numbered and paged like a text file. A
//! person attaches an image the same way with `HumanNode::with_parts` (in
//! the CLI: `lc-agent run "What is wrong in @shots/login.png?"`). The rules
//! and error texts are in `docs/read-file-images-and-pdfs.md`.
//!
//! Needs: nothing. It runs offline with `ScriptedChatModel`, which replays
//! fixed answers (and says so); the files are written to a temporary
//! directory.
//!
//! Run: `cargo run --example images`

use lc_agent::{
    Attachments, HumanNode, Message, RunnableNetwork, ScriptedChatModel, ToolCall, Turn,
};
use lc_agent_filesystem::{FilesystemBackend, FilesystemModifier};
use serde_json::json;

/// A 1x1 PNG.
const PIXEL: [u8; 70] = [
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0,
    0, 0, 31, 21, 196, 137, 0, 0, 0, 13, 73, 68, 65, 84, 120, 218, 99, 100, 248, 207, 80, 15, 0, 3,
    134, 1, 128, 90, 52, 125, 107, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
];

/// A one-page PDF saying `text` (plain ASCII, offsets computed).
fn pdf(text: &str) -> String {
    let stream = format!("BT /F1 12 Tf 72 720 Td ({text}) Tj ET");
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>".to_string(),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_string(),
        format!("<< /Length {} >>\nstream\n{stream}\nendstream", stream.len()),
    ];
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
    for offset in offsets {
        out.push_str(&format!("{offset:010} 00000 n \n"));
    }
    out.push_str(&format!(
        "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
        objects.len() + 1
    ));
    out
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("shot.png"), PIXEL)?;
    std::fs::write(dir.path().join("invoice.pdf"), pdf("Total due: 42 EUR"))?;

    println!("(offline: ScriptedChatModel replays fixed answers)");
    let model = ScriptedChatModel::new([
        Turn::tool_calls([
            ToolCall::new("c1", "read_file", json!({"file_path": "/shot.png"})),
            ToolCall::new("c2", "read_file", json!({"file_path": "/invoice.pdf"})),
        ]),
        Turn::text("The screenshot is a single pixel; the invoice asks for 42 EUR."),
    ]);
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("scripted")
        .model("scripted", model)
        .build();
    net.add_modifier(FilesystemModifier::new(FilesystemBackend::new(dir.path())?))?;
    {
        let _scope = net.enter();
        HumanNode::new("What do /shot.png and /invoice.pdf say?");
    }
    let answer = net.invoke().await?;
    for node in net.nodes() {
        if let Some(Message::Tool { content, parts, .. }) = node.output().as_deref() {
            println!("--- tool result ({} image part(s))\n{content}", parts.len());
        }
    }
    println!("--- answer\n{}", answer.text());
    Ok(())
}
