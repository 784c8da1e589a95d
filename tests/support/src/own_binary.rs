//! The CLI's tests run the real `lc-agent`: this checkout's build, linked
//! into the test's directory and checked, started without the caller's
//! model settings, fed a stdin.
//!
//! A target directory shared by several checkouts may hold another
//! checkout's `lc-agent`, rebuilt while the tests run; [`own_binary`] links
//! the file cargo built for this test run and asks it where it was built
//! from (`LC_AGENT_PRINT_BUILT_FROM=1` makes it print its crate's
//! directory and exit), so a test never runs someone else's build.
//!
//! The paths are the caller's: `env!("CARGO_BIN_EXE_lc-agent")` and
//! `env!("CARGO_MANIFEST_DIR")` of the CLI crate's tests.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The variables of the caller's environment that choose a model or a
/// provider; [`offline`] removes them.
pub const MODEL_VARIABLES: &[&str] = &[
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_MODEL",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_MODEL",
    "LC_AGENT_PROVIDER",
];

/// The checkout a binary was built from (it prints it when asked).
pub fn built_from(bin: &Path) -> String {
    let out = Command::new(bin)
        .env("LC_AGENT_PRINT_BUILT_FROM", "1")
        .output()
        .unwrap_or_else(|e| panic!("{} does not run: {e}", bin.display()));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A hard link (else a copy) in `dir` of `built` (the binary cargo built
/// for this test run), checked to be the build of `checkout` (the crate
/// directory it prints under `LC_AGENT_PRINT_BUILT_FROM`); the link keeps
/// the checked file whatever happens to the original. Panics, saying to
/// run the tests again, when it is another checkout's build.
pub fn own_binary(built: &Path, checkout: &str, dir: &Path) -> PathBuf {
    let name = built.file_name().unwrap_or(built.as_os_str());
    let bin = dir.join(name);
    if !bin.exists() && std::fs::hard_link(built, &bin).is_err() {
        std::fs::copy(built, &bin)
            .unwrap_or_else(|e| panic!("copying {} failed: {e}", built.display()));
    }
    assert_eq!(
        built_from(&bin),
        checkout,
        "{} is not this checkout's build (another checkout sharing the target \
         directory rebuilt it); run the tests again",
        built.display()
    );
    bin
}

/// `bin` as a command with none of the caller's [`MODEL_VARIABLES`]: a
/// test sets the model it means (a `--script`, a stand-in server).
pub fn offline(bin: &Path) -> Command {
    let mut command = Command::new(bin);
    for name in MODEL_VARIABLES {
        command.env_remove(name);
    }
    command
}

/// Runs `command` with `stdin` written to it (then closed) and its stdout
/// and stderr captured.
pub fn run_with_stdin(command: &mut Command, stdin: &str) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{command:?} does not start: {e}"));
    // A program that exits without reading its stdin closes the pipe: not
    // the test's failure.
    if let Some(mut pipe) = child.stdin.take() {
        let _ = pipe.write_all(stdin.as_bytes());
    }
    child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("{command:?} failed: {e}"))
}
