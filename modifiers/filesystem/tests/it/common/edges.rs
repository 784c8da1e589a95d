//! Files at the edges, the same on every backend: huge lines, NUL bytes
//! in and past the first 8 KiB, files too large to count, control characters in
//! names, bytes that are not UTF-8.

use lc_agent_filesystem::{
    Backend, FileOpError, GREP_LINE_LIMIT, MAX_LINE_CHARS, READ_SCAN_BUDGET,
};
use serde_json::json;

use super::{case, Case};

/// Lines before the NUL bytes of `/late_nul.txt` (well past 8 KiB).
const LATE_NUL_LINES: usize = 2000;
/// The length of the one long line of `/two_mib.txt`.
const TWO_MIB: usize = 2 << 20;
/// The length of the first line of `/over.txt`: past the scan budget and
/// past grep's line limit.
fn over_len() -> usize {
    READ_SCAN_BUDGET as usize + (1 << 20)
}
/// Lines of 999 chars in `/counted.txt`: more bytes than the scan budget.
fn counted_lines() -> usize {
    READ_SCAN_BUDGET as usize / 1000 + 1000
}

fn late_nul() -> String {
    let mut text: String = (0..LATE_NUL_LINES)
        .map(|i| format!("text line {i:04}\n"))
        .collect();
    text.push_str("\0\0\0\nafter\n");
    text
}

/// Lines of 99 `x` then `y`s up to a NUL byte at byte index `at`, then
/// `"\nafter\n"` (the spec's 8 KiB rule: 8,191 is binary, 8,192 is text).
fn nul_at(at: usize) -> String {
    let mut text = format!("{}\n", "x".repeat(99)).repeat(at / 100);
    text.push_str(&"y".repeat(at - text.len()));
    text.push_str("\0\nafter\n");
    text
}

/// A NUL byte far past the first 8 KiB (about 1 MiB in).
fn far_nul() -> String {
    let mut text: String = (0..FAR_NUL_LINES)
        .map(|i| format!("far line {i:06}\n"))
        .collect();
    text.push_str("zero \0 here\nafter\n");
    text
}

/// Lines before the NUL byte of `/far_nul.txt`.
const FAR_NUL_LINES: usize = 65_000;

/// The edge fixture (path, content): all text a model could write.
pub fn fixture() -> Vec<(String, String)> {
    vec![
        ("/late_nul.txt".into(), late_nul()),
        ("/nul_8191.txt".into(), nul_at(8191)),
        ("/nul_8192.txt".into(), nul_at(8192)),
        ("/far_nul.txt".into(), far_nul()),
        (
            "/two_mib.txt".into(),
            format!("{}\nend\n", "a".repeat(TWO_MIB)),
        ),
        (
            "/over.txt".into(),
            format!("{}\nlast\n", "x".repeat(over_len())),
        ),
        (
            "/counted.txt".into(),
            format!("{}\n", "y".repeat(999)).repeat(counted_lines()),
        ),
        ("/ok.txt".into(), "fine\n".into()),
        ("/straddle.txt".into(), straddle()),
        ("/bom.txt".into(), "\u{FEFF}héllo\nwörld\n".into()),
        ("/late_crlf.txt".into(), late_crlf()),
    ]
}

/// One line of 2 MiB with `NEEDLE-X` across the first MiB boundary and
/// again at the end: `edit_file` streams disk files in 1 MiB pieces.
fn straddle() -> String {
    format!(
        "{}NEEDLE-X{}NEEDLE-X\n",
        "a".repeat((1 << 20) - 4),
        "b".repeat(1 << 20)
    )
}

/// A CRLF file whose first line ending comes after the first MiB.
fn late_crlf() -> String {
    format!("{}\r\none\r\ntwo\r\n", "c".repeat((1 << 20) + 10))
}

/// Writes the edge fixture through a backend, every path under `prefix`.
pub async fn load(backend: &dyn Backend, prefix: &str) {
    for (path, content) in fixture() {
        backend
            .write(&format!("{prefix}{path}"), &content, true)
            .await
            .unwrap_or_else(|e| panic!("edge fixture {path}: {e}"));
    }
}

/// The edge table (items 13 and 14 of issue 21). `{R}` is the route prefix.
pub fn table() -> Vec<Case> {
    let y = "y".repeat(999);
    let x_shown = "x".repeat(MAX_LINE_CHARS);
    // Kept: 4 * 2000 + 4 bytes, of which 2000 are shown; then the budget.
    let over_more = 4 * MAX_LINE_CHARS + 4 - MAX_LINE_CHARS + READ_SCAN_BUDGET as usize;
    let limit_mib = GREP_LINE_LIMIT >> 20;
    vec![
        // Issue 36 item 2, the spec's rule: a NUL byte in the first 8 KiB
        // (index 8,191) is binary; at 8,192 or later it is text.
        case("read_file", json!({"file_path": "{R}/nul_8191.txt", "offset": 81}), format!("Error: {{R}}/nul_8191.txt is a binary file ({} bytes)", nul_at(8191).len())),
        case("edit_file", json!({"file_path": "{R}/nul_8191.txt", "old_string": "after", "new_string": "b"}), format!("Error: {{R}}/nul_8191.txt is a binary file ({} bytes)", nul_at(8191).len())),
        case("grep", json!({"pattern": "after", "path": "{R}/nul_8191.txt"}), "No matches found"),
        case("read_file", json!({"file_path": "{R}/nul_8192.txt", "offset": 81}), format!("    82\t{}\0\n    83\tafter", "y".repeat(92))),
        case("grep", json!({"pattern": "after|y\\x00", "path": "{R}/", "glob": "nul_*", "output_mode": "content"}), format!("{{R}}/nul_8192.txt:82:{}\0\n{{R}}/nul_8192.txt:83:after", "y".repeat(92))),
        case("grep", json!({"pattern": "after", "path": "{R}/", "glob": "*nul*"}), "{R}/far_nul.txt\n{R}/late_nul.txt\n{R}/nul_8192.txt"),
        case("grep", json!({"pattern": "after", "path": "{R}/late_nul.txt", "output_mode": "count"}), "{R}/late_nul.txt: 1"),
        case("read_file", json!({"file_path": "{R}/late_nul.txt", "offset": 1999, "limit": 3}), "  2000\ttext line 1999\n  2001\t\0\0\0\n  2002\tafter"),
        case("read_file", json!({"file_path": "{R}/far_nul.txt", "offset": FAR_NUL_LINES}), format!("{:>6}\tzero \0 here\n{:>6}\tafter", FAR_NUL_LINES + 1, FAR_NUL_LINES + 2)),
        case("grep", json!({"pattern": "zero", "path": "{R}/far_nul.txt", "output_mode": "content"}), format!("{{R}}/far_nul.txt:{}:zero \0 here", FAR_NUL_LINES + 1)),
        case("edit_file", json!({"file_path": "{R}/nul_8192.txt", "old_string": "after", "new_string": "AFTER"}), "Successfully replaced 1 occurrence(s) in {R}/nul_8192.txt"),
        case("read_file", json!({"file_path": "{R}/nul_8192.txt", "offset": 82}), "    83\tAFTER"),
        case("edit_file", json!({"file_path": "{R}/far_nul.txt", "old_string": "zero \0 here", "new_string": "zero"}), "Successfully replaced 1 occurrence(s) in {R}/far_nul.txt"),
        case("grep", json!({"pattern": "^zero$", "path": "{R}/far_nul.txt", "output_mode": "count"}), "{R}/far_nul.txt: 1"),
        // Issue 36 item 6: edit_file streams (disk backends) with the same
        // answers: occurrences across a piece boundary, counted without
        // overlap; a CRLF file known by a line ending past the first piece.
        case("edit_file", json!({"file_path": "{R}/straddle.txt", "old_string": "NEEDLE-X", "new_string": "Y"}), "Error: String 'NEEDLE-X' appears 2 times in file. Use replace_all=true or give more surrounding context."),
        case("edit_file", json!({"file_path": "{R}/straddle.txt", "old_string": "NEEDLE-X", "new_string": "[Y]", "replace_all": true}), "Successfully replaced 2 occurrence(s) in {R}/straddle.txt"),
        case("edit_file", json!({"file_path": "{R}/straddle.txt", "old_string": "a[Y]b", "new_string": "a-b"}), "Successfully replaced 1 occurrence(s) in {R}/straddle.txt"),
        case("edit_file", json!({"file_path": "{R}/straddle.txt", "old_string": "b[Y]\n", "new_string": "."}), "Successfully replaced 1 occurrence(s) in {R}/straddle.txt"),
        case("grep", json!({"pattern": "a-b.*\\.$", "path": "{R}/straddle.txt", "output_mode": "count"}), "{R}/straddle.txt: 1"),
        case("edit_file", json!({"file_path": "{R}/late_crlf.txt", "old_string": "one\ntwo", "new_string": "1\n2"}), "Successfully replaced 1 occurrence(s) in {R}/late_crlf.txt"),
        case("read_file", json!({"file_path": "{R}/late_crlf.txt", "offset": 1}), "     2\t1\n     3\t2"),
        case("edit_file", json!({"file_path": "{R}/late_crlf.txt", "old_string": "1\r\n2\r\n", "new_string": "done\n"}), "Successfully replaced 1 occurrence(s) in {R}/late_crlf.txt"),
        case("grep", json!({"pattern": "^done$", "path": "{R}/late_crlf.txt", "output_mode": "count"}), "{R}/late_crlf.txt: 1"),
        // Issue 36 item 6: UTF-8 with a BOM is named, the BOM not shown
        // (nor seen by `^`), and kept by edit_file.
        case("read_file", json!({"file_path": "{R}/bom.txt"}), "     1\théllo\n     2\twörld\n[File encoding: UTF-8 with BOM]"),
        case("grep", json!({"pattern": "^héllo$", "path": "{R}/bom.txt", "output_mode": "content"}), "{R}/bom.txt:1:héllo"),
        case("edit_file", json!({"file_path": "{R}/bom.txt", "old_string": "wörld", "new_string": "world"}), "Successfully replaced 1 occurrence(s) in {R}/bom.txt"),
        case("read_file", json!({"file_path": "{R}/bom.txt", "offset": 1}), "     2\tworld\n[File encoding: UTF-8 with BOM]"),
        // 13: a long line is cut, and the rest of it counted exactly...
        case("read_file", json!({"file_path": "{R}/two_mib.txt"}), format!("     1\t{} ... [line truncated, {} more chars]\n     2\tend", "a".repeat(MAX_LINE_CHARS), TWO_MIB - MAX_LINE_CHARS)),
        case("grep", json!({"pattern": "^a+$", "path": "{R}/two_mib.txt", "output_mode": "content"}), format!("{{R}}/two_mib.txt:1:{} ... [line truncated, {} more chars]", "a".repeat(MAX_LINE_CHARS), TWO_MIB - MAX_LINE_CHARS)),
        case("grep", json!({"pattern": "end", "path": "{R}/two_mib.txt", "output_mode": "content", "context": 1}), format!("{{R}}/two_mib.txt-1-{} ... [line truncated, {} more chars]\n{{R}}/two_mib.txt:2:end", "a".repeat(MAX_LINE_CHARS), TWO_MIB - MAX_LINE_CHARS)),
        // ...until the scan budget: then "over", and the total is not counted.
        case("read_file", json!({"file_path": "{R}/over.txt"}), format!("     1\t{x_shown} ... [line truncated, over {over_more} more chars]\n[Showing lines 1-1 of a file too large to count. Use offset=1 to read more.]")),
        case("read_file", json!({"file_path": "{R}/over.txt", "offset": 1}), "     2\tlast"),
        case("read_file", json!({"file_path": "{R}/over.txt", "offset": 2}), "Error: Line offset 2 exceeds file length (2 lines)"),
        // grep does not hold a line longer than its limit: the file is named.
        case("grep", json!({"pattern": "last", "path": "{R}/"}), format!("Note: {{R}}/over.txt was not searched: it has a line longer than {limit_mib} MiB.\nNo matches found")),
        case("grep", json!({"pattern": "fine|end", "path": "{R}/"}), format!("Note: {{R}}/over.txt was not searched: it has a line longer than {limit_mib} MiB.\n{{R}}/ok.txt\n{{R}}/two_mib.txt")),
        // 13: the footer does not count a huge file to its end.
        case("read_file", json!({"file_path": "{R}/counted.txt", "limit": 2}), format!("     1\t{y}\n     2\t{y}\n[Showing lines 1-2 of a file too large to count. Use offset=2 to read more.]")),
        case("read_file", json!({"file_path": "{R}/counted.txt", "offset": counted_lines() - 1}), format!("{:>6}\t{y}", counted_lines())),
        case("read_file", json!({"file_path": "{R}/counted.txt", "offset": counted_lines() + 5}), format!("Error: Line offset {} exceeds file length ({} lines)", counted_lines() + 5, counted_lines())),
        case("read_file", json!({"file_path": "{R}/counted.txt", "offset": 10, "limit": 100}), {
            let lines: Vec<String> = (11..=59).map(|n| format!("{n:>6}\t{y}")).collect();
            format!("{}\n[Output truncated at 50,000 chars. Showing lines 11-59 of a file too large to count. Use offset=59 to read more.]", lines.join("\n"))
        }),
        // 14: control characters are refused in new names...
        case("write_file", json!({"file_path": "{R}/evil\nname.txt", "content": "x"}), "Error: Invalid path: {R}/evil\\nname.txt (file names cannot contain control characters)"),
        case("write_file", json!({"file_path": "{R}/tab\there/x.txt", "content": "x"}), "Error: Invalid path: {R}/tab\\there/x.txt (file names cannot contain control characters)"),
        case("write_file", json!({"file_path": "{R}/esc\u{1b}[31m.txt", "content": "x"}), "Error: Invalid path: {R}/esc\\u{1b}[31m.txt (file names cannot contain control characters)"),
        case("write_file", json!({"file_path": "{R}/c1\u{85}.txt", "content": "x"}), "Error: Invalid path: {R}/c1\\u{85}.txt (file names cannot contain control characters)"),
        case("edit_file", json!({"file_path": "{R}/ok\r.txt", "old_string": "a", "new_string": "b"}), "Error: Invalid path: {R}/ok\\r.txt (file names cannot contain control characters)"),
        case("ls", json!({"path": "{R}/"}), "{R}/bom.txt\n{R}/counted.txt\n{R}/far_nul.txt\n{R}/late_crlf.txt\n{R}/late_nul.txt\n{R}/nul_8191.txt\n{R}/nul_8192.txt\n{R}/ok.txt\n{R}/over.txt\n{R}/straddle.txt\n{R}/two_mib.txt"),
        // ...and a path argument is echoed escaped (a NUL never raw).
        case("read_file", json!({"file_path": "{R}/nope\n.txt"}), "Error: File not found: {R}/nope\\n.txt"),
        case("ls", json!({"path": "{R}/a\u{0}b"}), "Error: Invalid path: {R}/a\\0b"),
        case("grep", json!({"pattern": "x", "path": "{R}/no\tpe"}), "Error: Path not found: {R}/no\\tpe"),
        case("glob", json!({"pattern": "*", "path": "{R}/no\u{7f}pe"}), "Error: Path not found: {R}/no\\u{7f}pe"),
    ]
}

/// Names with control characters that exist already (made by another
/// program: a shell, an old session), planted by each backend's test.
pub const ODD_NAMES: [&str; 2] = ["/odd/evil\nname.txt", "/odd/tab\tname.txt"];

/// What `ls`, `glob` and `grep` print for [`ODD_NAMES`] (content
/// `"needle\n"`): one escaped path per line.
pub fn odd_table() -> Vec<Case> {
    vec![
        case("ls", json!({"path": "{R}/odd"}), "{R}/odd/evil\\nname.txt\n{R}/odd/tab\\tname.txt"),
        case("ls", json!({"path": "{R}/odd", "recursive": true}), "{R}/odd/evil\\nname.txt\n{R}/odd/tab\\tname.txt"),
        case("glob", json!({"pattern": "*.txt", "path": "{R}/odd"}), "{R}/odd/evil\\nname.txt\n{R}/odd/tab\\tname.txt"),
        case("grep", json!({"pattern": "needle", "path": "{R}/odd"}), "{R}/odd/evil\\nname.txt\n{R}/odd/tab\\tname.txt"),
        case("grep", json!({"pattern": "needle", "path": "{R}/odd", "output_mode": "content"}), "{R}/odd/evil\\nname.txt:1:needle\n{R}/odd/tab\\tname.txt:1:needle"),
        case("grep", json!({"pattern": "needle", "path": "{R}/odd", "output_mode": "count"}), "{R}/odd/evil\\nname.txt: 1\n{R}/odd/tab\\tname.txt: 1"),
        case("read_file", json!({"file_path": "{R}/odd/evil\nname.txt"}), "     1\tneedle"),
        case("read_file", json!({"file_path": "{R}/odd/evil\nname.txt", "offset": 3}), "Error: Line offset 3 exceeds file length (1 lines)"),
        // An existing odd name is not rewritten either.
        case("edit_file", json!({"file_path": "{R}/odd/tab\tname.txt", "old_string": "needle", "new_string": "pin"}), "Error: Invalid path: {R}/odd/tab\\tname.txt (file names cannot contain control characters)"),
    ]
}

/// Uploaded bytes (item 15): what each kind of backend does with them.
pub struct Upload {
    /// The path uploaded to.
    pub path: &'static str,
    /// The bytes.
    pub bytes: Vec<u8>,
    /// Whether they are UTF-8 text (every backend keeps those exactly).
    pub text: bool,
}

/// Uploads every backend must keep exactly (text) or keep exactly / refuse
/// with `invalid_path` (other bytes; directory backends keep them).
pub fn uploads() -> Vec<Upload> {
    let png: Vec<u8> = [
        0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, 0xFF, 0xD8,
    ]
    .into_iter()
    .chain((0..=255u8).rev())
    .collect();
    let mut utf16 = vec![0xFF, 0xFE];
    utf16.extend("héllo\r\n".encode_utf16().flat_map(u16::to_le_bytes));
    vec![
        Upload {
            path: "/up/image.png",
            bytes: png,
            text: false,
        },
        Upload {
            path: "/up/latin1.txt",
            bytes: b"caf\xe9\n".to_vec(),
            text: false,
        },
        Upload {
            path: "/up/utf16.txt",
            bytes: utf16,
            text: false,
        },
        Upload {
            path: "/up/text.txt",
            bytes: "héllo\r\nwörld\n\0nul".as_bytes().to_vec(),
            text: true,
        },
        Upload {
            path: "/up/empty.txt",
            bytes: Vec::new(),
            text: true,
        },
    ]
}

/// Uploads through `backend` (under `prefix`) and checks what comes back:
/// `keeps_binary` for directory backends. Returns every mismatch.
pub async fn check_uploads(backend: &dyn Backend, prefix: &str, keeps_binary: bool) -> Vec<String> {
    let mut failures = Vec::new();
    for up in uploads() {
        let path = format!("{prefix}{}", up.path);
        let kept = up.text || keeps_binary;
        let result = backend
            .upload_files(vec![(path.clone(), up.bytes.clone())])
            .await;
        let expected = (!kept).then_some(FileOpError::InvalidPath);
        if result[0].error != expected {
            failures.push(format!(
                "upload {path}: {:?}, expected {expected:?}",
                result[0].error
            ));
        }
        let back = backend.download_files(vec![path.clone()]).await.remove(0);
        let expected = if kept { Some(up.bytes.clone()) } else { None };
        if back.content != expected {
            failures.push(format!(
                "download {path}: {:?}, expected {:?}",
                back.content.as_ref().map(|b| &b[..b.len().min(20)]),
                expected.as_ref().map(|b| &b[..b.len().min(20)])
            ));
        }
        if !kept && back.error != Some(FileOpError::FileNotFound) {
            failures.push(format!(
                "download {path}: {:?}, expected file_not_found",
                back.error
            ));
        }
    }
    // A name with a control character is refused on every backend.
    let odd = format!("{prefix}/up/evil\nname.txt");
    let result = backend.upload_files(vec![(odd, b"x".to_vec())]).await;
    if result[0].error != Some(FileOpError::InvalidPath) {
        failures.push(format!(
            "upload with a newline in the name: {:?}",
            result[0].error
        ));
    }
    failures
}
