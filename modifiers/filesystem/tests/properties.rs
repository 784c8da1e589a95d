//! Properties of the file tools, on generated inputs:
//! - path normalisation is canonical, and names the argument when it refuses;
//! - no generated path (`..`, `.`, `//`, `\`, `~`, drives, unicode, NUL,
//!   over-long components, symlinks out of the root) makes a tool on
//!   `FilesystemBackend` touch or reveal anything outside its root: every
//!   answer operates inside it or is the spec's error for that path;
//! - on plain paths, `StateBackend` and `FilesystemBackend` answer alike;
//! - `edit_file` equals a reference `replacen`/`replace` (with the spec's
//!   uniqueness and CRLF rules), on both backends.
//!
//! ```text
//!  TestRunner (CASES each) ─▶ generated path / edit ─▶ run_tool on backends
//!     ─▶ check: answer shape, named path, no host path, outside untouched
//! ```
#![allow(clippy::unwrap_used, unreachable_pub)]

use std::cell::Cell;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use lc_agent::RunnableNetwork;
use lc_agent_filesystem::path::{normalize, shown};
use lc_agent_filesystem::{run_tool, Backend, FilesystemBackend, StateBackend};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{json, Value};

/// Cases of the cheap properties (normalisation, edits).
const CASES: u32 = 1024;
/// Cases of the properties that run every tool on disk per case (each
/// stays well under 20 s in debug builds on 2 busy cores).
const PATH_CASES: u32 = 512;

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Runs `check` on `cases` generated values and returns how many ran.
fn run_cases<S: Strategy>(
    cases: u32,
    strategy: S,
    check: impl Fn(S::Value) -> Result<(), TestCaseError>,
) -> u32
where
    S::Value: std::fmt::Debug,
{
    let ran = Cell::new(0u32);
    let result = runner(cases).run(&strategy, |value| {
        ran.set(ran.get() + 1);
        check(value)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    ran.get()
}

async fn call(backend: &dyn Backend, tool: &str, args: Value) -> String {
    run_tool(backend, tool, &args).await.unwrap().content
}

/// Path components models (and attackers) write, and the sandbox's names.
fn component() -> impl Strategy<Value = String> {
    let named: Vec<String> = [
        "..",
        ".",
        "",
        "a.txt",
        "sub",
        "b.txt",
        "link_in",
        "link_in_dir",
        "link_out",
        "link_out_dir",
        "abs_link",
        "loop",
        "dangling_in",
        "dangling_out",
        "up",
        "esc",
        "secret.txt",
        "outside",
        "root",
        "~",
        "\\",
        "..\\..",
        "C:",
        "é",
        "日本語",
        "x\0y",
        "foo..bar",
        "...",
        ".git",
        "new.txt",
    ]
    .into_iter()
    .map(String::from)
    .chain(["n".repeat(256), "m".repeat(1000)])
    .collect();
    prop_oneof![
        6 => prop::sample::select(named),
        1 => "[a-z.~\\\\]{1,4}",
        1 => "\\PC{1,3}",
    ]
}

/// A path argument: a prefix (the host path of the sandbox among them),
/// components and separators.
fn path_arg(host: String) -> impl Strategy<Value = String> {
    let prefixes = vec![
        String::new(),
        "/".into(),
        "//".into(),
        "~/".into(),
        "\\\\".into(),
        "C:\\".into(),
        "./".into(),
        format!("{host}/"),
        format!("{host}/root/"),
        format!("/{}", "p/".repeat(20)),
        // Over the 4096-byte limit.
        format!("/{}", "p/".repeat(2100)),
    ];
    (
        prop::sample::select(prefixes),
        prop::collection::vec(
            (
                component(),
                prop::sample::select(vec!["/", "//", "\\", "/./"]),
            ),
            0..6,
        ),
        any::<bool>(),
    )
        .prop_map(|(prefix, parts, trailing)| {
            let mut p = prefix;
            for (i, (c, sep)) in parts.iter().enumerate() {
                if i > 0 {
                    p.push_str(sep);
                }
                p.push_str(c);
            }
            if trailing {
                p.push('/');
            }
            p
        })
}

#[test]
fn normalisation_is_canonical() {
    let ran = run_cases(CASES, path_arg("/tmp/host".into()), |p| {
        match normalize(&p) {
            Ok(v) => {
                prop_assert!(v.starts_with('/'), "{v:?}");
                prop_assert!(v == "/" || !v.ends_with('/'), "{v:?}");
                prop_assert!(!v.contains("//") && !v.contains('\0'), "{v:?}");
                prop_assert!(v.split('/').skip(1).all(|c| c != "." && c != ".."), "{v:?}");
                prop_assert_eq!(normalize(&v), Ok(v.clone()));
                prop_assert!(p.len() <= 4096);
            }
            Err(e) => {
                let text = e.to_string();
                prop_assert!(
                    // The argument as given, control characters escaped.
                    text == format!("Path traversal not allowed: {}", shown(&p))
                        || text == format!("Invalid path: {}", shown(&p)),
                    "{text:?}"
                );
            }
        }
        Ok(())
    });
    eprintln!("normalisation_is_canonical: {ran} cases");
}

/// A root with links that stay in and links that leave, next to an
/// `outside` directory holding a secret; laid anew for every case.
struct Sandbox {
    tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

impl Sandbox {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        let outside = tmp.path().join("outside");
        Sandbox { tmp, root, outside }
    }

    /// Lays out the root and `outside` afresh; a backend on the root.
    fn reset(&self) -> FilesystemBackend {
        let (root, outside) = (&self.root, &self.outside);
        for dir in [root, outside] {
            if dir.exists() {
                std::fs::remove_dir_all(dir).unwrap();
            }
        }
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(outside).unwrap();
        std::fs::write(outside.join("secret.txt"), "TOPSECRET\n").unwrap();
        std::fs::write(root.join("a.txt"), "inside\n").unwrap();
        std::fs::write(root.join("sub/b.txt"), "inside b\n").unwrap();
        for (target, link) in [
            ("a.txt", "link_in"),
            ("sub", "link_in_dir"),
            ("../outside/secret.txt", "link_out"),
            ("../outside", "link_out_dir"),
            ("loop", "loop"),
            ("sub/made_by_link.txt", "dangling_in"),
            ("../outside/new.txt", "dangling_out"),
            ("..", "sub/up"),
            ("../../outside", "sub/esc"),
        ] {
            symlink(target, root.join(link)).unwrap();
        }
        symlink(outside.join("secret.txt"), root.join("abs_link")).unwrap();
        FilesystemBackend::new(root).unwrap()
    }

    fn host(&self) -> String {
        self.tmp.path().to_string_lossy().into_owned()
    }

    /// Nothing outside the root was created, changed or removed.
    fn outside_untouched(&self) -> Result<(), TestCaseError> {
        let names = |dir: &Path| -> Vec<String> {
            let mut names: Vec<String> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        };
        prop_assert_eq!(names(self.tmp.path()), ["outside", "root"]);
        prop_assert_eq!(names(&self.outside), ["secret.txt"]);
        prop_assert_eq!(
            std::fs::read_to_string(self.outside.join("secret.txt")).unwrap(),
            "TOPSECRET\n"
        );
        prop_assert!(self.root.is_dir());
        Ok(())
    }
}

/// Checks one answer to a call naming path argument `p`.
fn check_answer(tool: &str, p: &str, out: &str, host: &str) -> Result<(), TestCaseError> {
    let normalized = normalize(p);
    // The host path appears only where the model wrote it itself (the
    // argument, its normalised form, or an ancestor of it).
    // (Errors print it with control characters escaped.)
    let mut scrubbed = out.replace(&*shown(p), "").replace(p, "");
    if let Ok(v) = &normalized {
        let mut named = v.as_str();
        while named != "/" {
            scrubbed = scrubbed.replace(named, "");
            named = lc_agent_filesystem::path::parent(named);
        }
    }
    prop_assert!(
        !scrubbed.contains(host),
        "{tool} {p:?} revealed a host path: {out:?}"
    );
    prop_assert!(
        !out.contains("TOPSECRET"),
        "{tool} {p:?} revealed outside content: {out:?}"
    );
    let Some(error) = out.strip_prefix("Error: ") else {
        return check_success(tool, normalized.as_deref().unwrap_or("?"), out);
    };
    for banned in [
        "I/O error",
        "Permission denied",
        "Storage error",
        "Invalid arguments",
    ] {
        prop_assert!(!error.starts_with(banned), "{tool} {p:?}: {out:?}");
    }
    match normalized {
        Err(e) => prop_assert_eq!(error, e.to_string()),
        Ok(v) => {
            let names_path = [
                "Path escapes the workspace: ",
                "Too many levels of symbolic links: ",
                "File not found: ",
                "Directory not found: ",
                "Path not found: ",
                "Not a directory: ",
                "Invalid path: ",
            ]
            .iter()
            .any(|prefix| error == format!("{prefix}{v}"))
                || error == format!("{v} is a directory; use ls")
                || error == format!("{v} is a directory")
                || error.starts_with(&format!("Cannot write to {v} because it already exists."))
                || error.starts_with(&format!("Cannot create {v}: "))
                || error.starts_with("String not found in file: ");
            prop_assert!(
                names_path,
                "{tool} {p:?} (as {v:?}): unexpected error {out:?}"
            );
        }
    }
    Ok(())
}

/// A successful answer lists virtual paths below the one asked about.
fn check_success(tool: &str, v: &str, out: &str) -> Result<(), TestCaseError> {
    let below = |line: &str| {
        let path = match tool {
            "grep" => line.split(':').next().unwrap_or(line),
            _ => line.trim_end_matches('/'),
        };
        path == v || path.starts_with(&format!("{}/", v.trim_end_matches('/')))
    };
    match tool {
        "ls" | "glob" | "grep" => {
            for line in out.lines() {
                let footer = line.starts_with("... (")
                    || [
                        "(empty directory)",
                        "No files found",
                        "No matches found",
                        "--",
                    ]
                    .contains(&line);
                prop_assert!(footer || below(line), "{tool} {v:?}: line {line:?}");
            }
        }
        "write_file" => prop_assert_eq!(out, format!("Successfully wrote to {v}")),
        "edit_file" => {
            prop_assert_eq!(out, format!("Successfully replaced 1 occurrence(s) in {v}"))
        }
        _ => {}
    }
    Ok(())
}

#[test]
fn generated_paths_stay_inside_the_root() {
    let sandbox = Sandbox::new();
    let host = sandbox.host();
    let rt = runtime();
    let ran = run_cases(
        PATH_CASES,
        (path_arg(host.clone()), any::<bool>()),
        |(p, overwrite)| {
            let backend = sandbox.reset();
            rt.block_on(async {
            let b = &backend;
            // The write comes last: later answers would list what it made
            // (a file named after the host path is the model's own doing).
            let calls = [
                ("ls", json!({"path": p})),
                ("ls", json!({"path": p, "recursive": true})),
                ("read_file", json!({"file_path": p})),
                ("glob", json!({"pattern": "*", "path": p})),
                (
                    "grep",
                    json!({"pattern": "TOPSECRET|inside|W", "path": p, "output_mode": "content"}),
                ),
                (
                    "edit_file",
                    json!({"file_path": p, "old_string": "inside b", "new_string": "inside B"}),
                ),
                (
                    "write_file",
                    json!({"file_path": p, "content": "W\n", "overwrite": overwrite}),
                ),
            ];
            for (tool, args) in calls {
                let out = call(b, tool, args).await;
                check_answer(tool, &p, &out, &host)?;
                sandbox.outside_untouched()?;
                if tool == "write_file" && !out.starts_with("Error: ") {
                    // The write landed inside: it reads back by the same path.
                    let back = call(b, "read_file", json!({"file_path": p})).await;
                    prop_assert_eq!(back, "     1\tW");
                }
            }
            Ok(())
        })
        },
    );
    eprintln!("generated_paths_stay_inside_the_root: {ran} cases");
}

/// Plain components (no symlinks): what both backends hold.
fn plain_path() -> impl Strategy<Value = String> {
    let names: Vec<String> = [
        "a.txt", "sub", "b.txt", "nope", ".git", "config", "é", "f.txt", ".", "", "x",
    ]
    .into_iter()
    .map(String::from)
    .chain(["n".repeat(300)])
    .collect();
    (
        prop::sample::select(vec!["", "/", "//"]),
        prop::collection::vec(prop::sample::select(names), 0..4),
    )
        .prop_map(|(prefix, parts)| format!("{prefix}{}", parts.join("/")))
}

#[test]
fn state_and_disk_answer_alike_on_plain_paths() {
    let dir = tempfile::tempdir().unwrap();
    let disk = FilesystemBackend::new(dir.path()).unwrap();
    let state = StateBackend::new(RunnableNetwork::new());
    let rt = runtime();
    rt.block_on(async {
        for b in [&disk as &dyn Backend, &state] {
            for (file, text) in [
                ("/a.txt", "alpha\nbeta\n"),
                ("/sub/b.txt", "beta\r\ngamma\r\n"),
                ("/.git/config", "[core]\n"),
                ("/é/f.txt", "é\n"),
                ("/sub/.gitignore", "x\n"),
            ] {
                b.write(file, text, true).await.unwrap();
            }
        }
    });
    let ran = run_cases(
        PATH_CASES,
        (plain_path(), any::<bool>()),
        |(p, overwrite)| {
            rt.block_on(async {
                let long_name = p.split('/').any(|c| c.len() > 255);
                let mut calls = vec![
                    ("ls", json!({"path": p})),
                    ("ls", json!({"path": p, "recursive": true})),
                    ("read_file", json!({"file_path": p})),
                    ("glob", json!({"pattern": "**", "path": p})),
                    (
                        "grep",
                        json!({"pattern": "a$|^g", "path": p, "output_mode": "content"}),
                    ),
                    (
                        "edit_file",
                        json!({"file_path": p, "old_string": "zzz", "new_string": "y"}),
                    ),
                ];
                // A name too long for a filesystem is writable in memory only.
                if !long_name {
                    calls.push((
                        "write_file",
                        json!({"file_path": p, "content": "W\n", "overwrite": overwrite}),
                    ));
                }
                for (tool, args) in calls {
                    let on_disk = call(&disk, tool, args.clone()).await;
                    let in_state = call(&state, tool, args).await;
                    prop_assert_eq!(&on_disk, &in_state, "{} {:?}", tool, p);
                }
                Ok(())
            })
        },
    );
    eprintln!("state_and_disk_answer_alike_on_plain_paths: {ran} cases");
}

/// The spec's `edit_file`, written plainly: CRLF files get `\r\n` in both
/// strings; `replacen` once, or `replace` all.
fn reference_edit(
    text: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<(String, usize), String> {
    if old.is_empty() {
        return Err("Error: old_string cannot be empty".into());
    }
    if old == new {
        return Err("Error: old_string and new_string are identical".into());
    }
    let crlf = text.find('\n').is_some_and(|i| text[..i].ends_with('\r'));
    let adjust = |s: &str| {
        if crlf {
            s.replace("\r\n", "\n").replace('\n', "\r\n")
        } else {
            s.to_string()
        }
    };
    let (o, n) = (adjust(old), adjust(new));
    match text.matches(o.as_str()).count() {
        0 => Err(format!("Error: String not found in file: '{old}'")),
        count if count > 1 && !replace_all => Err(format!(
            "Error: String '{old}' appears {count} times in file. Use replace_all=true or give more surrounding context."
        )),
        count if replace_all => Ok((text.replace(o.as_str(), &n), count)),
        _ => Ok((text.replacen(o.as_str(), &n, 1), 1)),
    }
}

fn pieces(alphabet: &'static [&'static str], max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(alphabet), 0..max).prop_map(|p| p.concat())
}

#[test]
fn edit_file_equals_reference_replacement() {
    const TEXT: &[&str] = &["a", "b", "ab", "\n", "\r\n", " ", "é", "日", "x", "aa"];
    const OLD: &[&str] = &["a", "b", "ab", "\n", "\r\n", "é", "x", "ba"];
    let dir = tempfile::tempdir().unwrap();
    let disk = FilesystemBackend::new(dir.path()).unwrap();
    let state = StateBackend::new(RunnableNetwork::new());
    let rt = runtime();
    let ran = run_cases(
        CASES,
        (
            pieces(TEXT, 40),
            pieces(OLD, 4),
            pieces(OLD, 4),
            any::<bool>(),
        ),
        |(text, old, new, replace_all)| {
            rt.block_on(async {
                let expected = reference_edit(&text, &old, &new, replace_all);
                for b in [&disk as &dyn Backend, &state] {
                    b.write("/f.txt", &text, true).await.unwrap();
                    let args = json!({"file_path": "/f.txt", "old_string": old, "new_string": new, "replace_all": replace_all});
                    let out = call(b, "edit_file", args).await;
                    let down = b.download_files(vec!["/f.txt".into()]).await;
                    let after = String::from_utf8(down[0].content.clone().unwrap()).unwrap();
                    match &expected {
                        Ok((result, n)) => {
                            prop_assert_eq!(out, format!("Successfully replaced {n} occurrence(s) in /f.txt"));
                            prop_assert_eq!(&after, result);
                        }
                        Err(error) => {
                            prop_assert_eq!(&out, error);
                            prop_assert_eq!(&after, &text);
                        }
                    }
                }
                Ok(())
            })
        },
    );
    eprintln!("edit_file_equals_reference_replacement: {ran} cases (x2 backends)");
}
