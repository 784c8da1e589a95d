//! Shared fixtures: the golden table every backend must print exactly, and
//! a helper that finds the temp files of atomic writes on disk.
#![allow(dead_code)]

use lc_agent_filesystem::{run_tool, Backend};
use serde_json::{json, Value};

pub mod edges;

/// The fixture files (path, content).
pub fn fixture() -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = [
        ("/README.md", "# Project\nhello world\n"),
        ("/src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n"),
        (
            "/src/lib.rs",
            "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n// TODO: more\n",
        ),
        (
            "/src/util/strings.rs",
            "pub fn shout(s: &str) -> String {\n    s.to_uppercase()\n}\n",
        ),
        (
            "/docs/guide.md",
            "Guide\n=====\nStep one: TODO\nStep two\nStep three: TODO\n",
        ),
        ("/.hidden/config.toml", "key = \"value\"\n"),
        ("/.gitignore", "target/\n*.log\n"),
        ("/target/debug/out.rs", "fn generated() {} // TODO\n"),
        ("/app.log", "TODO in a log\n"),
        ("/.git/config", "[core]\n"),
        ("/src/.git/HEAD", "ref: TODO\n"),
        ("/crlf.txt", "one\r\ntwo\r\nthree\r\n"),
        ("/empty.txt", ""),
        ("/blank.txt", "  \n\t\n"),
        ("/foo..bar.txt", "dots\n"),
        ("/bin.dat", "abc\0def"),
        // Line anchors: `$` at every line end (LF, CRLF, last line).
        ("/docs/rows.txt", "row 1\nrow 2\nkept\n\nrow 10 kept\n"),
        ("/docs/crlf2.txt", "alpha\r\nbeta\r\ngamma"),
        // Not a git repository's exclude file: never applied as ignore rules.
        ("/.git/info/exclude", "*.md\n*.txt\n"),
    ]
    .into_iter()
    .map(|(p, c)| (p.to_string(), c.to_string()))
    .collect();
    files.push((
        "/long.txt".into(),
        (1..=1200).map(|i| format!("line {i}\n")).collect(),
    ));
    files.push(("/wide.txt".into(), format!("{}\n", "x".repeat(2500))));
    files.push((
        "/big_lines.txt".into(),
        (0..60).map(|_| format!("{}\n", "y".repeat(1000))).collect(),
    ));
    for i in 0..1005 {
        files.push((format!("/many/f{i:04}.txt"), format!("file {i}\n")));
    }
    files
}

/// Writes the fixture through a backend, every path under `prefix`.
pub async fn load_fixture(backend: &dyn Backend, prefix: &str) {
    for (path, content) in fixture() {
        backend
            .write(&format!("{prefix}{path}"), &content, true)
            .await
            .unwrap_or_else(|e| panic!("fixture {path}: {e}"));
    }
}

/// One row: tool, arguments, expected text, whether it is an error.
pub struct Case {
    pub tool: &'static str,
    pub args: Value,
    pub expected: String,
}

pub fn case(tool: &'static str, args: Value, expected: impl Into<String>) -> Case {
    Case {
        tool,
        args,
        expected: expected.into(),
    }
}

/// The golden table. `{R}` stands for the route prefix ("" or "/ws").
pub fn table() -> Vec<Case> {
    let many: Vec<String> = (0..1000)
        .map(|i| format!("{{R}}/many/f{i:04}.txt"))
        .collect();
    let many_ls = format!(
        "{}\n... (5 more entries; list a subdirectory)",
        many.join("\n")
    );
    let many_glob = format!(
        "{}\n... (5 more matches; narrow the pattern)",
        many.join("\n")
    );
    let long_500: Vec<String> = (1..=500).map(|i| format!("{i:>6}\tline {i}")).collect();
    let long_head = format!(
        "{}\n[Showing lines 1-500 of 1200. Use offset=500 to read more.]",
        long_500.join("\n")
    );
    let big: Vec<String> = (1..=49)
        .map(|i| format!("{i:>6}\t{}", "y".repeat(1000)))
        .collect();
    let big_lines = format!(
        "{}\n[Output truncated at 50,000 chars. Showing lines 1-49 of 60. Use offset=49 to read more.]",
        big.join("\n")
    );
    let q250 = "q".repeat(250);
    // One path component longer than any filesystem allows (255 bytes).
    let long = "n".repeat(300);
    vec![
        // ls
        case("ls", json!({"path": "{R}/"}), "{R}/.gitignore\n{R}/.hidden/\n{R}/README.md\n{R}/app.log\n{R}/big_lines.txt\n{R}/bin.dat\n{R}/blank.txt\n{R}/crlf.txt\n{R}/docs/\n{R}/empty.txt\n{R}/foo..bar.txt\n{R}/long.txt\n{R}/many/\n{R}/src/\n{R}/target/\n{R}/wide.txt"),
        case("ls", json!({"path": "{r}src"}), "{R}/src/lib.rs\n{R}/src/main.rs\n{R}/src/util/"),
        case("ls", json!({"path": "{R}/src", "recursive": true}), "{R}/src/lib.rs\n{R}/src/main.rs\n{R}/src/util/\n{R}/src/util/strings.rs"),
        case("ls", json!({"path": "/{R}/src///util/"}), "{R}/src/util/strings.rs"),
        case("ls", json!({"path": "{R}/./src/./util"}), "{R}/src/util/strings.rs"),
        case("ls", json!({"path": "{R}/nope"}), "Error: Directory not found: {R}/nope"),
        case("ls", json!({"path": "{R}/README.md"}), "Error: Not a directory: {R}/README.md"),
        case("ls", json!({"path": "{R}/.git"}), "Error: Directory not found: {R}/.git"),
        case("ls", json!({"path": "{R}/many"}), many_ls),
        case("ls", json!({"path": "{R}/../etc"}), "Error: Path traversal not allowed: {R}/../etc"),
        case("ls", json!({"path": "~/x"}), "Error: Path traversal not allowed: ~/x"),
        case("ls", json!({"path": 5}), "Error: Invalid arguments for ls: `path` must be a string, got 5"),
        case("ls", json!({"path": "{R}/src", "recursive": "yes"}), "Error: Invalid arguments for ls: `recursive` must be a boolean, got \"yes\""),
        // read_file
        case("read_file", json!({"file_path": "{R}/src/main.rs"}), "     1\tfn main() {\n     2\t    println!(\"hello\");\n     3\t}"),
        case("read_file", json!({"file_path": "{r}src/main.rs", "offset": 1, "limit": 1}), "     2\t    println!(\"hello\");\n[Showing lines 2-2 of 3. Use offset=2 to read more.]"),
        case("read_file", json!({"file_path": "{R}/long.txt"}), long_head),
        case("read_file", json!({"file_path": "{R}/long.txt", "offset": 1199, "limit": 500}), "  1200\tline 1200"),
        case("read_file", json!({"file_path": "{R}/long.txt", "offset": 1200}), "Error: Line offset 1200 exceeds file length (1200 lines)"),
        case("read_file", json!({"file_path": "{R}/long.txt", "offset": -1}), "Error: Invalid arguments for read_file: `offset` must be at least 0, got -1"),
        case("read_file", json!({"file_path": "{R}/long.txt", "limit": 0}), "Error: Invalid arguments for read_file: `limit` must be at least 1, got 0"),
        case("read_file", json!({"file_path": "{R}/long.txt", "limit": "ten"}), "Error: Invalid arguments for read_file: `limit` must be an integer, got \"ten\""),
        case("read_file", json!({}), "Error: Invalid arguments for read_file: missing required argument `file_path`"),
        case("read_file", json!({"file_path": "{R}/empty.txt"}), "System reminder: File exists but has empty contents"),
        case("read_file", json!({"file_path": "{R}/empty.txt", "offset": 7}), "System reminder: File exists but has empty contents"),
        case("read_file", json!({"file_path": "{R}/blank.txt"}), "System reminder: File exists but has empty contents"),
        case("read_file", json!({"file_path": "{r}nope.txt"}), "Error: File not found: {R}/nope.txt"),
        case("read_file", json!({"file_path": "{R}/src"}), "Error: {R}/src is a directory; use ls"),
        case("read_file", json!({"file_path": "{R}/bin.dat"}), "Error: {R}/bin.dat is a binary file (7 bytes)"),
        case("read_file", json!({"file_path": "{R}/crlf.txt"}), "     1\tone\n     2\ttwo\n     3\tthree"),
        case("read_file", json!({"file_path": "{R}/wide.txt"}), format!("     1\t{} ... [line truncated, 500 more chars]", "x".repeat(2000))),
        case("read_file", json!({"file_path": "{R}/big_lines.txt"}), big_lines),
        case("read_file", json!({"file_path": "{R}/.git/config"}), "     1\t[core]"),
        case("read_file", json!({"file_path": "{R}/foo..bar.txt"}), "     1\tdots"),
        case("read_file", json!({"file_path": "C:\\x"}), "Error: Invalid path: C:\\x"),
        // A NUL byte is never echoed raw: control characters print escaped.
        case("read_file", json!({"file_path": "a\u{0}b"}), "Error: Invalid path: a\\0b"),
        case("read_file", json!({"file_path": "{R}/a/../../etc/passwd"}), "Error: Path traversal not allowed: {R}/a/../../etc/passwd"),
        // write_file
        case("write_file", json!({"file_path": "{R}/new/dir/file.txt", "content": "x\ny"}), "Successfully wrote to {R}/new/dir/file.txt"),
        case("read_file", json!({"file_path": "{R}/new/dir/file.txt"}), "     1\tx\n     2\ty"),
        case("write_file", json!({"file_path": "{R}/README.md", "content": "x"}), "Error: Cannot write to {R}/README.md because it already exists. Read it and use edit_file, or call write_file with overwrite=true."),
        case("write_file", json!({"file_path": "{R}/new/dir/file.txt", "content": "z", "overwrite": true}), "Successfully wrote to {R}/new/dir/file.txt"),
        case("read_file", json!({"file_path": "{R}/new/dir/file.txt"}), "     1\tz"),
        case("write_file", json!({"file_path": "{R}/src", "content": "x"}), "Error: {R}/src is a directory"),
        case("write_file", json!({"file_path": "{R}/README.md/x", "content": "x"}), "Error: Cannot create {R}/README.md/x: {R}/README.md is a file"),
        case("write_file", json!({"file_path": "{R}/x.txt"}), "Error: Invalid arguments for write_file: missing required argument `content`"),
        // edit_file
        case("edit_file", json!({"file_path": "{R}/docs/guide.md", "old_string": "", "new_string": "x"}), "Error: old_string cannot be empty"),
        case("edit_file", json!({"file_path": "{R}/docs/guide.md", "old_string": "a", "new_string": "a"}), "Error: old_string and new_string are identical"),
        case("edit_file", json!({"file_path": "../x", "old_string": "a", "new_string": "b"}), "Error: Path traversal not allowed: ../x"),
        case("edit_file", json!({"file_path": "{R}/nope.md", "old_string": "a", "new_string": "b"}), "Error: File not found: {R}/nope.md"),
        case("edit_file", json!({"file_path": "{R}/docs", "old_string": "a", "new_string": "b"}), "Error: {R}/docs is a directory; use ls"),
        case("edit_file", json!({"file_path": "{R}/bin.dat", "old_string": "a", "new_string": "b"}), "Error: {R}/bin.dat is a binary file (7 bytes)"),
        case("edit_file", json!({"file_path": "{R}/docs/guide.md", "old_string": "zzz", "new_string": "b"}), "Error: String not found in file: 'zzz'"),
        case("edit_file", json!({"file_path": "{R}/docs/guide.md", "old_string": q250, "new_string": "b"}), format!("Error: String not found in file: '{}...'", "q".repeat(200))),
        case("edit_file", json!({"file_path": "{R}/docs/guide.md", "old_string": "TODO", "new_string": "DONE"}), "Error: String 'TODO' appears 2 times in file. Use replace_all=true or give more surrounding context."),
        case("edit_file", json!({"file_path": "{R}/docs/guide.md", "old_string": "Step two", "new_string": "Step 2"}), "Successfully replaced 1 occurrence(s) in {R}/docs/guide.md"),
        case("edit_file", json!({"file_path": "{R}/docs/guide.md", "old_string": "TODO", "new_string": "DONE", "replace_all": true}), "Successfully replaced 2 occurrence(s) in {R}/docs/guide.md"),
        case("read_file", json!({"file_path": "{R}/docs/guide.md"}), "     1\tGuide\n     2\t=====\n     3\tStep one: DONE\n     4\tStep 2\n     5\tStep three: DONE"),
        case("edit_file", json!({"file_path": "{R}/crlf.txt", "old_string": "one\ntwo", "new_string": "1\n2"}), "Successfully replaced 1 occurrence(s) in {R}/crlf.txt"),
        case("read_file", json!({"file_path": "{R}/crlf.txt"}), "     1\t1\n     2\t2\n     3\tthree"),
        case("edit_file", json!({"file_path": "{R}/foo..bar.txt", "old_string": "o", "new_string": "0", "replace_all": "no"}), "Error: Invalid arguments for edit_file: `replace_all` must be a boolean, got \"no\""),
        // glob
        case("glob", json!({"pattern": "*.rs", "path": "{R}/"}), "{R}/src/lib.rs\n{R}/src/main.rs\n{R}/src/util/strings.rs"),
        case("glob", json!({"pattern": "src/*.rs", "path": "{R}/"}), "{R}/src/lib.rs\n{R}/src/main.rs"),
        case("glob", json!({"pattern": "/src/**/*.rs", "path": "{R}/"}), "{R}/src/lib.rs\n{R}/src/main.rs\n{R}/src/util/strings.rs"),
        case("glob", json!({"pattern": "/*.md", "path": "{R}/"}), "{R}/README.md"),
        case("glob", json!({"pattern": "*.rs", "path": "{R}/src/util"}), "{R}/src/util/strings.rs"),
        case("glob", json!({"pattern": "*.{md,toml}", "path": "{R}/"}), "{R}/.hidden/config.toml\n{R}/README.md\n{R}/docs/guide.md"),
        case("glob", json!({"pattern": "?ain.rs", "path": "{R}/"}), "{R}/src/main.rs"),
        case("glob", json!({"pattern": "[lm]*.rs", "path": "{R}/src"}), "{R}/src/lib.rs\n{R}/src/main.rs"),
        case("glob", json!({"pattern": "*.RS", "path": "{R}/"}), "No files found"),
        case("glob", json!({"pattern": "*.log", "path": "{R}/"}), "No files found"),
        case("glob", json!({"pattern": "config", "path": "{R}/"}), "No files found"),
        case("glob", json!({"pattern": "util", "path": "{R}/src"}), "No files found"),
        case("glob", json!({"pattern": "../*", "path": "{R}/"}), "Error: Path traversal not allowed: ../*"),
        case("glob", json!({"pattern": "*", "path": "{R}/README.md"}), "Error: Not a directory: {R}/README.md"),
        case("glob", json!({"pattern": "*", "path": "{R}/nope"}), "Error: Path not found: {R}/nope"),
        case("glob", json!({"pattern": "*", "path": "{R}/.git"}), "Error: Path not found: {R}/.git"),
        case("glob", json!({"pattern": "*.txt", "path": "{R}/many"}), many_glob),
        case("glob", json!({"path": "{R}/"}), "Error: Invalid arguments for glob: missing required argument `pattern`"),
        // grep
        case("grep", json!({"pattern": "DONE|TODO", "path": "{R}/"}), "{R}/docs/guide.md\n{R}/src/lib.rs"),
        case("grep", json!({"pattern": "TODO", "path": "{R}/", "output_mode": "content"}), "{R}/src/lib.rs:4:// TODO: more"),
        case("grep", json!({"pattern": "DONE|TODO", "path": "{R}/", "output_mode": "count"}), "{R}/docs/guide.md: 2\n{R}/src/lib.rs: 1"),
        case("grep", json!({"pattern": "done", "path": "{R}/", "case_insensitive": true}), "{R}/docs/guide.md"),
        case("grep", json!({"pattern": "done", "path": "{R}/"}), "No matches found"),
        case("grep", json!({"pattern": "Step 2", "path": "{R}/", "output_mode": "content", "context": 1}), "{R}/docs/guide.md-3-Step one: DONE\n{R}/docs/guide.md:4:Step 2\n{R}/docs/guide.md-5-Step three: DONE"),
        case("grep", json!({"pattern": "DONE|TODO", "path": "{R}/", "output_mode": "content", "context": 1}), "{R}/docs/guide.md-2-=====\n{R}/docs/guide.md:3:Step one: DONE\n{R}/docs/guide.md-4-Step 2\n{R}/docs/guide.md:5:Step three: DONE\n--\n{R}/src/lib.rs-3-}\n{R}/src/lib.rs:4:// TODO: more"),
        case("grep", json!({"pattern": "^(Guide|Step three)", "path": "{R}/docs", "output_mode": "content", "context": 1}), "{R}/docs/guide.md:1:Guide\n{R}/docs/guide.md-2-=====\n--\n{R}/docs/guide.md-4-Step 2\n{R}/docs/guide.md:5:Step three: DONE"),
        case("grep", json!({"pattern": "DONE|TODO", "path": "{R}/", "max_count": 1}), "{R}/docs/guide.md\n... (stopped after 1 matches; narrow the search)"),
        case("grep", json!({"pattern": "DONE|TODO", "path": "{R}/", "output_mode": "content", "max_count": 2}), "{R}/docs/guide.md:3:Step one: DONE\n{R}/docs/guide.md:5:Step three: DONE\n... (stopped after 2 matches; narrow the search)"),
        case("grep", json!({"pattern": "DONE|TODO", "path": "{R}/", "output_mode": "count", "max_count": 3}), "{R}/docs/guide.md: 2\n{R}/src/lib.rs: 1"),
        case("grep", json!({"pattern": "println!(", "path": "{R}/"}), "Note: 'println!(' is not a valid regex (error: unclosed group); searched for it as literal text.\n{R}/src/main.rs"),
        case("grep", json!({"pattern": "a + b", "path": "{R}/", "fixed_strings": true, "output_mode": "content"}), "{R}/src/lib.rs:2:    a + b"),
        case("grep", json!({"pattern": "DONE|TODO", "path": "{R}/", "glob": "*.rs"}), "{R}/src/lib.rs"),
        case("grep", json!({"pattern": "fn", "path": "{R}/src", "glob": "util/*.rs"}), "{R}/src/util/strings.rs"),
        case("grep", json!({"pattern": "TODO", "path": "{R}/src/lib.rs", "output_mode": "content"}), "{R}/src/lib.rs:4:// TODO: more"),
        case("grep", json!({"pattern": "three$", "path": "{R}/crlf.txt", "output_mode": "content"}), "{R}/crlf.txt:3:three"),
        case("grep", json!({"pattern": "^row 1$", "path": "{R}/docs", "output_mode": "content"}), "{R}/docs/rows.txt:1:row 1"),
        case("grep", json!({"pattern": "kept$", "path": "{R}/", "output_mode": "content"}), "{R}/docs/rows.txt:3:kept\n{R}/docs/rows.txt:5:row 10 kept"),
        case("grep", json!({"pattern": "^row \\d+$", "path": "{R}/docs", "output_mode": "count"}), "{R}/docs/rows.txt: 2"),
        case("grep", json!({"pattern": "^$", "path": "{R}/docs/rows.txt", "output_mode": "content"}), "{R}/docs/rows.txt:4:"),
        case("grep", json!({"pattern": "^(alpha|beta|gamma)$", "path": "{R}/docs", "output_mode": "content"}), "{R}/docs/crlf2.txt:1:alpha\n{R}/docs/crlf2.txt:2:beta\n{R}/docs/crlf2.txt:3:gamma"),
        case("grep", json!({"pattern": "a$", "path": "{R}/docs/crlf2.txt", "output_mode": "count"}), "{R}/docs/crlf2.txt: 3"),
        case("grep", json!({"pattern": "^(1|2|three)$", "path": "{R}/", "output_mode": "content"}), "{R}/crlf.txt:1:1\n{R}/crlf.txt:2:2\n{R}/crlf.txt:3:three"),
        case("grep", json!({"pattern": "^Guide$", "path": "{R}/", "case_insensitive": true}), "{R}/docs/guide.md"),
        case("grep", json!({"pattern": "^(one|two)$", "path": "{R}/"}), "No matches found"),
        case("grep", json!({"pattern": "abc", "path": "{R}/"}), "No matches found"),
        case("grep", json!({"pattern": "core", "path": "{R}/"}), "No matches found"),
        case("grep", json!({"pattern": "x", "path": "{R}/nope"}), "Error: Path not found: {R}/nope"),
        case("grep", json!({"pattern": "x", "path": "{R}/.git"}), "Error: Path not found: {R}/.git"),
        case("grep", json!({"pattern": "x", "path": "{R}/", "output_mode": "lines"}), "Error: Invalid arguments for grep: `output_mode` must be one of \"files_with_matches\", \"content\", \"count\", got \"lines\""),
        case("grep", json!({"pattern": "x", "path": "{R}/", "max_count": 0}), "Error: Invalid arguments for grep: `max_count` must be at least 1, got 0"),
        case("grep", json!({"pattern": "x", "glob": "../*.rs"}), "Error: Path traversal not allowed: ../*.rs"),
        case("grep", json!({"pattern": "file 100[0-4]", "path": "{R}/many", "output_mode": "count"}), "{R}/many/f1000.txt: 1\n{R}/many/f1001.txt: 1\n{R}/many/f1002.txt: 1\n{R}/many/f1003.txt: 1\n{R}/many/f1004.txt: 1"),
        // A path under a file is missing; so is a name too long for any
        // filesystem (same answer on every backend).
        case("ls", json!({"path": "{R}/README.md/x"}), "Error: Directory not found: {R}/README.md/x"),
        case("ls", json!({"path": "{R}/README.md/x/y"}), "Error: Directory not found: {R}/README.md/x/y"),
        case("read_file", json!({"file_path": "{R}/README.md/x"}), "Error: File not found: {R}/README.md/x"),
        case("edit_file", json!({"file_path": "{R}/README.md/x", "old_string": "a", "new_string": "b"}), "Error: File not found: {R}/README.md/x"),
        case("glob", json!({"pattern": "*", "path": "{R}/README.md/x"}), "Error: Path not found: {R}/README.md/x"),
        case("grep", json!({"pattern": "x", "path": "{R}/README.md/x"}), "Error: Path not found: {R}/README.md/x"),
        case("ls", json!({"path": format!("{{R}}/{long}")}), format!("Error: Directory not found: {{R}}/{long}")),
        case("ls", json!({"path": format!("{{R}}/{long}/x")}), format!("Error: Directory not found: {{R}}/{long}/x")),
        case("read_file", json!({"file_path": format!("{{R}}/{long}")}), format!("Error: File not found: {{R}}/{long}")),
        case("read_file", json!({"file_path": format!("{{R}}/src/{long}.rs")}), format!("Error: File not found: {{R}}/src/{long}.rs")),
        case("edit_file", json!({"file_path": format!("{{R}}/{long}"), "old_string": "a", "new_string": "b"}), format!("Error: File not found: {{R}}/{long}")),
        case("glob", json!({"pattern": "*", "path": format!("{{R}}/{long}")}), format!("Error: Path not found: {{R}}/{long}")),
        case("grep", json!({"pattern": "x", "path": format!("{{R}}/{long}/y")}), format!("Error: Path not found: {{R}}/{long}/y")),
        // `.git/info/exclude` is not a `.gitignore`: `*.md`/`*.txt` stay visible.
        case("glob", json!({"pattern": "*.md", "path": "{R}/"}), "{R}/README.md\n{R}/docs/guide.md"),
        case("grep", json!({"pattern": "^row 2$", "path": "{R}/"}), "{R}/docs/rows.txt"),
        case("ls", json!({"path": "{R}/.git/info"}), "Error: Directory not found: {R}/.git/info"),
        case("read_file", json!({"file_path": "{R}/.git/info/exclude"}), "     1\t*.md\n     2\t*.txt"),
        // execute on a backend without a sandbox
        case("execute", json!({"command": "ls"}), "Error: execute is not available: the backend cannot run commands"),
        case("nope", json!({}), "unknown"),
    ]
}

/// Runs the golden table through `backend` (fixture under `prefix`) and
/// returns every mismatch.
pub async fn run_table(backend: &dyn Backend, prefix: &str) -> Vec<String> {
    load_fixture(backend, prefix).await;
    run_cases(backend, prefix, table()).await
}

/// Runs `cases` through `backend` (`{R}` is `prefix`, `{r}` the prefix
/// without its leading `/` and with a trailing one) and returns every
/// mismatch.
pub async fn run_cases(backend: &dyn Backend, prefix: &str, cases: Vec<Case>) -> Vec<String> {
    let rel = if prefix.is_empty() {
        String::new()
    } else {
        format!("{}/", &prefix[1..])
    };
    let mut failures = Vec::new();
    for (i, case) in cases.into_iter().enumerate() {
        let args: Value = serde_json::from_str(
            &serde_json::to_string(&case.args)
                .unwrap()
                .replace("{R}", prefix)
                .replace("{r}", &rel),
        )
        .unwrap();
        let expected = case.expected.replace("{R}", prefix);
        let Some(out) = run_tool(backend, case.tool, &args).await else {
            if case.tool != "nope" {
                failures.push(format!("#{i} {}: unknown tool", case.tool));
            }
            continue;
        };
        let is_error = expected.starts_with("Error: ");
        if out.content != expected || (out.status == lc_agent::ToolStatus::Error) != is_error {
            failures.push(format!(
                "#{i} {} {}\n--- expected ({})\n{}\n--- got ({:?})\n{}",
                case.tool,
                trim(&args.to_string()),
                if is_error { "error" } else { "ok" },
                trim(&expected),
                out.status,
                trim(&out.content)
            ));
        }
    }
    failures
}

fn trim(s: &str) -> String {
    if s.len() > 600 {
        format!(
            "{}...[{} bytes]",
            &s[..s.char_indices().nth(600).map_or(s.len(), |(i, _)| i)],
            s.len()
        )
    } else {
        s.to_string()
    }
}

/// The temp files of atomic writes below `dir` (left by killed writers).
pub fn temp_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name
            .to_string_lossy()
            .starts_with(lc_agent_filesystem::TEMP_PREFIX)
        {
            found.push(entry.path());
        } else if entry.file_type().unwrap().is_dir() {
            found.extend(temp_files(&entry.path()));
        }
    }
    found
}

/// Two editors (two app servers, say) append lines to one file at once
/// through `edit_file`, each `rounds` times; returns the lines the file
/// ends with. With a lost update some of them would be missing.
pub async fn two_editors(
    a: std::sync::Arc<dyn Backend>,
    b: std::sync::Arc<dyn Backend>,
    rounds: usize,
) -> Vec<String> {
    use lc_agent_filesystem::run_tool;
    use serde_json::json;

    let out = run_tool(
        &*a,
        "write_file",
        &json!({"file_path": "/memories/log.md", "content": "END"}),
    )
    .await
    .unwrap();
    assert_eq!(out.content, "Successfully wrote to /memories/log.md");
    let editor = |backend: std::sync::Arc<dyn Backend>, name: &'static str| {
        tokio::spawn(async move {
            for i in 0..rounds {
                let line = format!("{name}-{i}");
                let out = run_tool(
                    &*backend,
                    "edit_file",
                    &json!({"file_path": "/memories/log.md", "old_string": "END",
                            "new_string": format!("{line}\nEND")}),
                )
                .await
                .unwrap();
                assert!(
                    out.content.starts_with("Successfully replaced 1"),
                    "{}",
                    out.content
                );
                tokio::task::yield_now().await;
            }
        })
    };
    let (x, y) = tokio::join!(editor(a.clone(), "a"), editor(b, "b"));
    x.unwrap();
    y.unwrap();
    let text = a
        .download_files(vec!["/memories/log.md".into()])
        .await
        .remove(0)
        .content
        .unwrap();
    String::from_utf8(text)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Checks what [`two_editors`] returned: every line of both, in each
/// editor's order, and the marker last.
pub fn assert_no_lost_update(lines: &[String], rounds: usize) {
    assert_eq!(lines.len(), 2 * rounds + 1, "{lines:?}");
    assert_eq!(lines.last().map(String::as_str), Some("END"));
    for name in ["a", "b"] {
        let mine: Vec<&String> = lines.iter().filter(|l| l.starts_with(name)).collect();
        let expected: Vec<String> = (0..rounds).map(|i| format!("{name}-{i}")).collect();
        assert_eq!(mine, expected.iter().collect::<Vec<_>>());
    }
}
