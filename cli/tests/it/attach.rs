//! `@path/to/image.png` in a message, through the real binary: `run`,
//! `chat` and `exec` attach the image (read from `--root`, else the current
//! directory) and the model server receives it as an `image_url` part; a
//! missing image is a clear error before anything is sent; `@word` that
//! names no image stays text; a path out of the workspace is refused.

use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};

use crate::common;
use crate::model_server::{ModelServer, Reply};

/// A 1x1 PNG.
const PIXEL: [u8; 70] = [
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0,
    0, 0, 31, 21, 196, 137, 0, 0, 0, 13, 73, 68, 65, 84, 120, 218, 99, 100, 248, 207, 80, 15, 0, 3,
    134, 1, 128, 90, 52, 125, 107, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
];
const PIXEL_URL: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `lc-agent <args>` against `server`, in `cwd`.
fn run(dir: &Path, cwd: &Path, server: &ModelServer, args: &[&str], stdin: &str) -> Output {
    let mut command = lc_agent_test_support::own_binary::offline(&common::own_binary(dir));
    command
        .current_dir(cwd)
        .args(args)
        .args(["--model", "m", "--sessions"])
        .arg(dir.join("sessions"))
        .env("OPENAI_BASE_URL", &server.base_url)
        .env("OPENAI_API_KEY", "test")
        .env("LC_AGENT_CONTEXT_WINDOW", "100000")
        .env("LC_AGENT_HOME", dir.join("home"));
    common::with_stdin(&mut command, stdin)
}

/// The person's message of the first chat request.
fn sent_user_message(server: &ModelServer) -> Value {
    let requests = server.chat_requests();
    let body: Value = serde_json::from_str(&requests[0]).unwrap();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap()
}

#[test]
fn run_chat_and_exec_attach_the_image_a_message_names() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("shots")).unwrap();
    std::fs::write(work.join("shots/pixel.png"), PIXEL).unwrap();
    let expected = |typed: &str| {
        json!({"role": "user", "content": [
            {"type": "text", "text": typed},
            {"type": "image_url", "image_url": {"url": PIXEL_URL}}
        ]})
    };

    // run, relative to --root.
    let server = ModelServer::start(vec![Reply::answer("One pixel.", "stop")]);
    let typed = "What is in @shots/pixel.png?";
    let root = work.to_str().unwrap();
    let out = run(
        dir.path(),
        dir.path(),
        &server,
        &["run", typed, "--root", root],
        "",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(sent_user_message(&server), expected(typed));

    // chat, piped, relative to the current directory.
    let server = ModelServer::start(vec![Reply::answer("One pixel.", "stop")]);
    let typed = "and this: @shots/pixel.png.";
    let out = run(dir.path(), &work, &server, &["chat"], &format!("{typed}\n"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(sent_user_message(&server), expected(typed));

    // exec.
    let server = ModelServer::start(vec![Reply::answer("One pixel.", "stop")]);
    let typed = "Describe @shots/pixel.png";
    let out = run(dir.path(), &work, &server, &["exec", typed], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(sent_user_message(&server), expected(typed));
}

#[test]
fn a_missing_image_is_an_error_and_other_words_stay_text() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("notes.txt"), "hello").unwrap();

    let server = ModelServer::start(vec![Reply::answer("Hi.", "stop")]);
    let out = run(dir.path(), &work, &server, &["run", "see @nope.png"], "");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("cannot attach @nope.png: File not found: /nope.png"),
        "{stderr}"
    );
    assert!(server.chat_requests().is_empty(), "nothing is sent");

    // Out of the workspace: refused like the file tools' paths.
    let out = run(dir.path(), &work, &server, &["run", "see @../x.png"], "");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("cannot attach @../x.png: Path traversal not allowed: ../x.png"),
        "{}",
        text(&out.stderr)
    );

    // A text file is not an image.
    std::fs::write(work.join("fake.png"), "not an image").unwrap();
    let out = run(dir.path(), &work, &server, &["run", "see @fake.png"], "");
    assert!(
        text(&out.stderr).contains(
            "cannot attach @fake.png: /fake.png is not an image (PNG, JPEG, GIF or WebP)"
        ),
        "{}",
        text(&out.stderr)
    );

    let typed = "ask @alice about @notes.txt";
    let out = run(dir.path(), &work, &server, &["run", typed], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        sent_user_message(&server),
        json!({"role": "user", "content": typed})
    );
}
