//! A shell command line read as the simple commands it would run, for
//! the command rules (`command.rs`): parsed with `brush-parser` (POSIX and
//! bash syntax), every part visited — lists (`;`, `&&`, `||`, `&`),
//! pipelines, subshells, groups, loops, conditions, functions' bodies,
//! `$(…)` and backticks (also inside double quotes and assignments),
//! process substitutions, `sh -c '…'`/`bash -c`, `eval`, `trap` — and
//! what it cannot read fully said as such, so a rule can ask.
//!
//! ```text
//!  "git status && X=$(git push) sh -c 'eval \"ls; git push\"'"
//!     ─▶ commands: [git status] [git push] [sh -c …] [eval …] [ls] [git push]
//!  "echo Z2l0IHB1c2g= | base64 -d | sh"
//!     ─▶ commands: [echo …] [base64 -d] [sh]   unreadable: "`sh` reads its commands from its input"
//! ```
//!
//! A command's words are unquoted (`'git' "push"` is `git push`); wrappers
//! that run the rest of their words (`command`, `builtin`, `exec`, `env`,
//! `nohup`, `nice`, `time`, `timeout`, `sudo`, `doas`, `xargs`, `setsid`,
//! `stdbuf`) are looked through. Unreadable: a syntax error; a program
//! name computed at run time (`$cmd push`); `sh -c`/`eval`/`trap` of a
//! computed string; a shell reading its commands from its input (`… | sh`,
//! `sh -s`, `sh <<EOF`); inline code of an interpreter (`python3 -c`,
//! `perl -e`, `node -e`, `ruby -e`); nesting deeper than
//! [`MAX_DEPTH`]. A script a command runs (`sh build.sh`, `./build.sh`)
//! is not read: rules see command lines, not files.

use brush_parser::word::{WordPiece, WordPieceWithSource};
use brush_parser::ParserOptions;
use serde_json::Value;

/// How deep `sh -c`, `eval` and substitutions may nest before the line
/// counts as unreadable.
const MAX_DEPTH: usize = 8;

/// Shells whose `-c` takes a command line.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "busybox"];

/// Interpreters whose `-c`/`-e` takes inline code that rules cannot read.
const INTERPRETERS: &[&str] = &[
    "python", "perl", "ruby", "node", "nodejs", "php", "deno", "bun",
];

/// Programs that run the rest of their words as a command.
const WRAPPERS: &[&str] = &[
    "command", "builtin", "exec", "nohup", "time", "setsid", "nice", "env", "timeout", "sudo",
    "doas", "xargs", "stdbuf",
];

/// What a command line would run.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Reading {
    /// Each simple command's words, unquoted (the program first, as
    /// written: a path stays a path).
    pub commands: Vec<Vec<String>>,
    /// Why parts of it cannot be read, in the user's terms.
    pub unreadable: Vec<String>,
}

/// The simple commands of `line`, and what could not be read.
pub(crate) fn read(line: &str) -> Reading {
    let mut reading = Reading::default();
    program(line, 0, &mut reading);
    // The syntax tree can hold a word twice (an assignment's word and
    // its value): each command once, in order.
    let mut seen = std::collections::HashSet::new();
    reading.commands.retain(|c| seen.insert(c.clone()));
    reading.unreadable.dedup();
    reading
}

fn options() -> ParserOptions {
    ParserOptions::default()
}

/// Parses `text` as a program and visits it.
fn program(text: &str, depth: usize, out: &mut Reading) {
    if depth > MAX_DEPTH {
        out.unreadable
            .push(format!("it nests commands more than {MAX_DEPTH} deep"));
        return;
    }
    let mut parser = brush_parser::Parser::new(std::io::Cursor::new(text), &options());
    let parsed = match parser.parse_program() {
        Ok(parsed) => parsed,
        Err(e) => {
            out.unreadable.push(format!("it does not parse ({e})"));
            return;
        }
    };
    match serde_json::to_value(&parsed) {
        Ok(tree) => visit(&tree, depth, out),
        Err(e) => out.unreadable.push(format!("it cannot be walked ({e})")),
    }
}

/// Visits every node of the syntax tree (as JSON): simple commands are
/// judged, every string is searched for substitutions.
fn visit(node: &Value, depth: usize, out: &mut Reading) {
    match node {
        Value::Object(map) => {
            if let Some(simple) = map.get("Simple") {
                simple_command(simple, depth, out);
            }
            for value in map.values() {
                visit(value, depth, out);
            }
        }
        Value::Array(items) => {
            for item in items {
                visit(item, depth, out);
            }
        }
        Value::String(text) => substitutions(text, depth, out),
        _ => {}
    }
}

/// The commands of each `$(…)` and backquoted substitution in `text`.
fn substitutions(text: &str, depth: usize, out: &mut Reading) {
    if !(text.contains("$(") || text.contains('`')) {
        return;
    }
    match brush_parser::word::parse(text, &options()) {
        Ok(pieces) => pieces_substitutions(&pieces, depth, out),
        Err(_) => out.unreadable.push(format!(
            "a word holding a command substitution does not parse: {text}"
        )),
    }
}

fn pieces_substitutions(pieces: &[WordPieceWithSource], depth: usize, out: &mut Reading) {
    for piece in pieces {
        match &piece.piece {
            WordPiece::CommandSubstitution(inner)
            | WordPiece::BackquotedCommandSubstitution(inner) => program(inner, depth + 1, out),
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                pieces_substitutions(inner, depth, out);
            }
            _ => {}
        }
    }
}

/// A word's text once unquoted, or `None` when it is computed at run
/// time (a parameter, a substitution, arithmetic).
fn literal(word: &str) -> Option<String> {
    let pieces = brush_parser::word::parse(word, &options()).ok()?;
    let mut text = String::new();
    literal_pieces(&pieces, &mut text)?;
    Some(text)
}

fn literal_pieces(pieces: &[WordPieceWithSource], text: &mut String) -> Option<()> {
    for piece in pieces {
        match &piece.piece {
            WordPiece::Text(t) | WordPiece::SingleQuotedText(t) | WordPiece::AnsiCQuotedText(t) => {
                text.push_str(t);
            }
            WordPiece::EscapeSequence(e) => text.push_str(e.strip_prefix('\\').unwrap_or(e)),
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                literal_pieces(inner, text)?;
            }
            WordPiece::TildeExpansion(_) => text.push('~'),
            _ => return None,
        }
    }
    Some(())
}

/// The words of a simple command (JSON of brush's `SimpleCommand`): the
/// program and the suffix's words, raw.
fn raw_words(simple: &Value) -> Vec<String> {
    let mut words = Vec::new();
    if let Some(name) = simple
        .pointer("/word_or_name/value")
        .and_then(Value::as_str)
    {
        words.push(name.to_string());
    }
    if let Some(items) = simple.get("suffix").and_then(Value::as_array) {
        for item in items {
            if let Some(word) = item.pointer("/Word/value").and_then(Value::as_str) {
                words.push(word.to_string());
            }
        }
    }
    words
}

/// Whether the command's input is a here-document or here-string (a
/// shell then reads its commands from it).
fn reads_heredoc(simple: &Value) -> bool {
    let text = simple.to_string();
    text.contains("HereDocument") || text.contains("HereString")
}

fn simple_command(simple: &Value, depth: usize, out: &mut Reading) {
    let raw = raw_words(simple);
    let Some(first) = raw.first() else {
        return;
    };
    let Some(program_name) = literal(first) else {
        out.unreadable.push(format!(
            "the program's name is computed when it runs: {first}"
        ));
        return;
    };
    // Arguments stay as written when computed (`git push $REMOTE`).
    let words: Vec<String> = std::iter::once(program_name)
        .chain(
            raw[1..]
                .iter()
                .map(|w| literal(w).unwrap_or_else(|| w.clone())),
        )
        .collect();
    let literal_args: Vec<Option<String>> = raw.iter().map(|w| literal(w)).collect();
    command_words(&words, &literal_args, reads_heredoc(simple), depth, out);
}

/// The base name of a program (`/usr/bin/git` is `git`).
pub(crate) fn base_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// Judges one command's words (`literal[i]`: word `i` unquoted, `None`
/// when computed) and what it runs inside.
fn command_words(
    words: &[String],
    literal: &[Option<String>],
    heredoc: bool,
    depth: usize,
    out: &mut Reading,
) {
    let Some(first) = words.first() else {
        return;
    };
    out.commands.push(words.to_vec());
    let name = base_name(first);
    if WRAPPERS.contains(&name) {
        let rest = wrapped(name, &words[1..]);
        let start = words.len() - rest.len();
        if rest.is_empty() {
            return;
        }
        match literal.get(start).cloned().flatten() {
            Some(_) => command_words(rest, &literal[start..], heredoc, depth, out),
            None => out.unreadable.push(format!(
                "`{name}` runs a program whose name is computed when it runs: {}",
                rest[0]
            )),
        }
        return;
    }
    if SHELLS.contains(&name) {
        shell(name, words, literal, heredoc, depth, out);
        return;
    }
    let interpreter = INTERPRETERS.iter().any(|i| {
        name == *i
            || name
                .strip_prefix(i)
                .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
    });
    if interpreter
        && words[1..]
            .iter()
            .take_while(|w| w.starts_with('-'))
            .any(|w| {
                matches!(w.as_str(), "-c" | "-e" | "-E" | "-r" | "-p" | "--eval")
                    || w.starts_with("-e")
            })
    {
        out.unreadable.push(format!(
            "`{name}` runs inline code, which rules cannot read"
        ));
        return;
    }
    if matches!(name, "eval" | "trap") {
        let args = if name == "trap" {
            &literal[1..literal.len().min(2)]
        } else {
            &literal[1..]
        };
        match args.iter().cloned().collect::<Option<Vec<String>>>() {
            Some(parts) => program(&parts.join(" "), depth + 1, out),
            None => out
                .unreadable
                .push(format!("`{name}` runs a string computed when it runs")),
        }
    }
}

/// What a wrapper runs: its words after its own options and values.
fn wrapped<'a>(name: &str, args: &'a [String]) -> &'a [String] {
    // Options taking a value as the next word.
    let with_value: &[&str] = match name {
        "nice" => &["-n", "--adjustment"],
        "env" => &["-u", "--unset", "-C", "--chdir", "-S", "--split-string"],
        "timeout" => &["-s", "--signal", "-k", "--kill-after"],
        "sudo" | "doas" => &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"],
        "xargs" => &[
            "-I",
            "-n",
            "-P",
            "-d",
            "-a",
            "-E",
            "-L",
            "-s",
            "--delimiter",
        ],
        "stdbuf" => &["-i", "-o", "-e"],
        "exec" => &["-a"],
        _ => &[],
    };
    let mut i = 0;
    while let Some(word) = args.get(i) {
        if word == "--" {
            i += 1;
            break;
        }
        let assignment = name == "env" && word.contains('=') && !word.starts_with('-');
        if !(word.starts_with('-') || assignment) {
            break;
        }
        i += if with_value.contains(&word.as_str()) {
            2
        } else {
            1
        };
    }
    // `timeout DURATION COMMAND`.
    if name == "timeout" && i < args.len() {
        i += 1;
    }
    args.get(i..).unwrap_or_default()
}

/// A shell: its `-c` command line is read; one reading its commands from
/// its input cannot be.
fn shell(
    name: &str,
    words: &[String],
    literal: &[Option<String>],
    heredoc: bool,
    depth: usize,
    out: &mut Reading,
) {
    let mut i = 1;
    // `busybox sh …`.
    if name == "busybox" {
        match words.get(1).map(|w| base_name(w)) {
            Some(shell) if SHELLS.contains(&shell) && shell != "busybox" => i = 2,
            _ => return,
        }
    }
    let mut command_string = false;
    let mut stdin = false;
    while let Some(word) = words.get(i) {
        if word == "--" {
            i += 1;
            break;
        }
        let Some(flags) = word.strip_prefix('-').or_else(|| word.strip_prefix('+')) else {
            break;
        };
        match flags.strip_prefix('-') {
            // `--rcfile FILE`; other long options (`--norc`) stand alone.
            Some("rcfile" | "init-file") => i += 1,
            Some(_) => {}
            None => {
                command_string |= flags.contains('c');
                stdin |= flags.contains('s');
                // `-o pipefail`, `-O extglob`.
                if flags.contains('o') || flags.contains('O') {
                    i += 1;
                }
            }
        }
        i += 1;
        if command_string {
            break;
        }
    }
    if command_string {
        match literal.get(i).cloned().flatten() {
            Some(line) => program(&line, depth + 1, out),
            None if i >= words.len() => {}
            None => out
                .unreadable
                .push(format!("`{name} -c` runs a string computed when it runs")),
        }
        return;
    }
    if stdin || i >= words.len() || heredoc {
        out.unreadable.push(format!(
            "`{name}` reads its commands from its input, which rules cannot read"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands(line: &str) -> Vec<String> {
        read(line).commands.iter().map(|c| c.join(" ")).collect()
    }

    #[test]
    fn compound_lines_are_read_whole() {
        assert_eq!(
            commands("git status && git push"),
            ["git status", "git push"]
        );
        assert_eq!(
            commands("a; b || c | d & (e); { f; }"),
            ["a", "b", "c", "d", "e", "f"]
        );
        assert_eq!(
            commands("echo \"$(git push)\" `git fetch`"),
            ["echo \"$(git push)\" `git fetch`", "git push", "git fetch"]
        );
        assert_eq!(commands("X=$(git push) true"), ["true", "git push"]);
        assert_eq!(
            commands("sh -c 'eval \"ls; git push\"'"),
            [
                "sh -c eval \"ls; git push\"",
                "eval ls; git push",
                "ls",
                "git push"
            ]
        );
        assert_eq!(commands("'git' \"push\""), ["git push"]);
        assert_eq!(
            commands("env -i A=1 timeout 5 /usr/bin/git push"),
            [
                "env -i timeout 5 /usr/bin/git push",
                "timeout 5 /usr/bin/git push",
                "/usr/bin/git push"
            ]
        );
        assert_eq!(commands("for x in a; do git push; done"), ["git push"]);
        assert!(read("git status && git push").unreadable.is_empty());
    }

    #[test]
    fn what_cannot_be_read_is_said() {
        for line in [
            "echo Z2l0IHB1c2g= | base64 -d | sh",
            "bash -s < x",
            "sh <<EOF\ngit push\nEOF",
            "$cmd push",
            "eval \"$x\"",
            "sh -c \"$x\"",
            "python3 -c 'import os'",
            "git status &&",
            "command $(echo git) push",
        ] {
            assert!(
                !read(line).unreadable.is_empty(),
                "{line}: {:?}",
                read(line)
            );
        }
        for line in [
            "sh build.sh",
            "git push \"$REMOTE\"",
            "python3 x.py",
            "cat <<EOF\nhi\nEOF",
        ] {
            assert!(read(line).unreadable.is_empty(), "{line}: {:?}", read(line));
        }
    }
}
