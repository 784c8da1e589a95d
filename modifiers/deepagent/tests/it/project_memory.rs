//! Project memory files: found from the workspace root up to the
//! repository root and in the user's directory, nearest first, in the
//! system prompt (snapshot); the token budget; read again when a file
//! changes, also when the model edits it with the file tools; the
//! blueprint's shapes.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::{
    Attachments, ChatModel, ChatRequest, ChatResponse, HumanNode, ModelError, RunnableNetwork,
    ScriptedChatModel, Turn,
};
use lc_agent_deepagent::{AgentSpec, ProjectMemory, ProjectMemorySpec, Workspace};
use parking_lot::Mutex;
use serde_json::json;

/// Replays turns and keeps every request's system text.
#[derive(Clone, Default)]
struct Recorder {
    turns: Arc<Mutex<Vec<Turn>>>,
    systems: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    fn new(mut turns: Vec<Turn>) -> Self {
        turns.reverse();
        Self {
            turns: Arc::new(Mutex::new(turns)),
            systems: Arc::default(),
        }
    }
}

#[async_trait]
impl ChatModel for Recorder {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let system = request
            .messages()
            .into_iter()
            .filter(|m| m.role() == "system")
            .map(|m| m.text().to_string())
            .collect::<Vec<_>>()
            .join("\n\n");
        self.systems.lock().push(system);
        let turn = self.turns.lock().pop().ok_or(ModelError::ScriptExhausted {
            name: "recorder".into(),
            played: 0,
        })?;
        Ok(ChatResponse {
            content: turn.content,
            tool_calls: turn.tool_calls,
            ..Default::default()
        })
    }
}

/// A repository: `.git`, `AGENTS.md` at the top, `pkg/` (the workspace)
/// with its own `AGENTS.md` and `CLAUDE.md`; and a user directory.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().join("repo");
    std::fs::create_dir_all(top.join(".git")).unwrap();
    std::fs::create_dir_all(top.join("pkg")).unwrap();
    std::fs::write(
        top.join("AGENTS.md"),
        "# Repository rules\n\n- Run `cargo fmt` before every commit.\n- Never push to main.\n",
    )
    .unwrap();
    std::fs::write(
        top.join("pkg/AGENTS.md"),
        "# pkg\n\nThis package is the parser; keep it free of I/O.\n",
    )
    .unwrap();
    std::fs::write(
        top.join("pkg/CLAUDE.md"),
        "Prefer small functions with doc comments.\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("user")).unwrap();
    std::fs::write(
        dir.path().join("user/AGENTS.md"),
        "Answer in British English.\n",
    )
    .unwrap();
    // Above the repository root: never read.
    std::fs::write(dir.path().join("AGENTS.md"), "OUTSIDE-THE-REPOSITORY\n").unwrap();
    dir
}

fn network(model: impl ChatModel + 'static) -> RunnableNetwork {
    RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("m")
        .model("m", model)
        .build()
}

async fn turn(net: &RunnableNetwork, text: &str) {
    {
        let _scope = net.enter();
        HumanNode::new(text);
    }
    net.invoke().await.unwrap();
}

fn redacted(text: &str, dir: &Path) -> String {
    let real = std::fs::canonicalize(dir).unwrap();
    text.replace(&real.display().to_string(), "<tmp>")
        .replace(&dir.display().to_string(), "<tmp>")
}

#[tokio::test]
async fn the_files_go_in_the_prompt_nearest_first_with_their_paths() {
    let dir = repository();
    let model = Recorder::new(vec![Turn::text("ok")]);
    let net = network(model.clone());
    let memory = ProjectMemory::new(["AGENTS.md", "CLAUDE.md"])
        .root(dir.path().join("repo/pkg"))
        .user_dir(dir.path().join("user"));
    net.add_modifier(memory.clone()).unwrap();
    turn(&net, "hi").await;

    let system = model.systems.lock()[0].clone();
    let section = format!("\n\n{system}")
        .split("\n\n## ")
        .find(|s| s.starts_with("Project memory"))
        .map(|s| format!("## {s}"))
        .unwrap_or_else(|| panic!("no project memory section in\n{system}"));
    assert_eq!(Some(section.clone()), memory.section());
    assert!(!section.contains("OUTSIDE-THE-REPOSITORY"), "{section}");
    insta::with_settings!({snapshot_path => "../../../../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("project_memory_prompt_section", redacted(&section, dir.path()));
    });
}

#[tokio::test]
async fn without_a_repository_only_the_root_is_read() {
    let dir = repository();
    std::fs::remove_dir(dir.path().join("repo/.git")).unwrap();
    let net = network(ScriptedChatModel::new(["ok"]));
    let memory = ProjectMemory::new(["AGENTS.md"])
        .root(dir.path().join("repo/pkg"))
        .user_dir(None);
    net.add_modifier(memory.clone()).unwrap();
    turn(&net, "hi").await;
    let section = memory.section().unwrap();
    assert!(section.contains("keep it free of I/O"), "{section}");
    assert!(!section.contains("Never push to main"), "{section}");

    // No file at all: no section.
    let empty = tempfile::tempdir().unwrap();
    let net = network(ScriptedChatModel::new(["ok"]));
    let memory = ProjectMemory::new(["AGENTS.md"])
        .root(empty.path())
        .user_dir(None);
    net.add_modifier(memory.clone()).unwrap();
    turn(&net, "hi").await;
    assert_eq!(memory.section(), None);
}

#[tokio::test]
async fn the_budget_truncates_the_farther_files_first_and_says_so() {
    let dir = repository();
    let long: String = (0..400)
        .map(|i| format!("- rule number {i}: keep the tests green\n"))
        .collect();
    std::fs::write(dir.path().join("repo/AGENTS.md"), &long).unwrap();
    let net = network(ScriptedChatModel::new(["ok"]));
    let memory = ProjectMemory::new(["AGENTS.md", "CLAUDE.md"])
        .root(dir.path().join("repo/pkg"))
        .user_dir(dir.path().join("user"))
        .max_tokens(200);
    net.add_modifier(memory.clone()).unwrap();
    turn(&net, "hi").await;
    let section = memory.section().unwrap();
    // The nearest files whole, the repository's cut at a line, the user's left out.
    assert!(section.contains("keep it free of I/O"), "{section}");
    assert!(section.contains("Prefer small functions"), "{section}");
    assert!(section.contains("- rule number 0: keep the tests green"));
    assert!(!section.contains("rule number 399"), "{section}");
    assert!(
        section.contains("[truncated: the project memory budget (200 tokens) holds about"),
        "{section}"
    );
    assert!(
        section.contains("[left out, over the project memory budget (200 tokens):"),
        "{section}"
    );
    assert!(!section.contains("British English"), "{section}");
    let counter = lc_agent_deepagent::counter_for_model("m");
    let body: usize = section
        .split("\n### ")
        .skip(1)
        .map(|part| counter.count(part))
        .sum();
    assert!(
        body < 200 + 150,
        "the files' text stays near the budget: {body}"
    );
}

#[tokio::test]
async fn a_changed_file_is_read_again_at_the_next_turn() {
    let dir = repository();
    let root = dir.path().join("repo/pkg");
    let net = network(ScriptedChatModel::new(["one", "two", "three"]));
    let memory = ProjectMemory::new(["AGENTS.md"]).root(&root).user_dir(None);
    net.add_modifier(memory.clone()).unwrap();
    turn(&net, "first").await;
    assert!(memory.section().unwrap().contains("keep it free of I/O"));

    std::fs::write(root.join("AGENTS.md"), "# pkg\n\nThe parser may log now.\n").unwrap();
    turn(&net, "second").await;
    let section = memory.section().unwrap();
    assert!(section.contains("The parser may log now."), "{section}");
    assert!(!section.contains("keep it free of I/O"), "{section}");

    std::fs::remove_file(root.join("AGENTS.md")).unwrap();
    turn(&net, "third").await;
    assert!(!memory
        .section()
        .unwrap()
        .contains("The parser may log now."));
}

#[tokio::test]
async fn the_model_updates_the_file_with_the_file_tools_and_reads_it_next_turn() {
    let dir = repository();
    let root = dir.path().join("repo/pkg");
    let model = Recorder::new(vec![
        Turn::call(
            "c1",
            "edit_file",
            json!({"file_path": "/AGENTS.md", "old_string": "keep it free of I/O.", "new_string": "keep it free of I/O.\n- Tabs, never spaces."}),
        ),
        Turn::text("Noted in /AGENTS.md."),
        Turn::text("Using tabs."),
    ]);
    let mut spec = AgentSpec::from_toml("[models.main]\nmodel = \"m\"").unwrap();
    spec.backend = Workspace::directory(&root);
    let net = spec
        .builder(|_, _| Ok(Arc::new(model.clone()) as Arc<dyn ChatModel>))
        .unwrap()
        .build()
        .unwrap();
    turn(&net, "Remember: tabs, never spaces.").await;
    turn(&net, "Indent this.").await;
    assert!(std::fs::read_to_string(root.join("AGENTS.md"))
        .unwrap()
        .contains("- Tabs, never spaces."));
    let systems = model.systems.lock().clone();
    assert_eq!(systems.len(), 3);
    // In the workspace, the file is shown by its path in the file tools.
    assert!(systems[0].contains("### `/AGENTS.md`"), "{}", systems[0]);
    assert!(
        !systems[1].contains("Tabs, never spaces"),
        "not in the middle of a turn"
    );
    assert!(
        systems[2].contains("- Tabs, never spaces."),
        "{}",
        systems[2]
    );

    // Off in the blueprint: no section.
    let model = Recorder::new(vec![Turn::text("ok")]);
    spec.project_memory.enabled = false;
    let net = spec
        .builder(|_, _| Ok(Arc::new(model.clone()) as Arc<dyn ChatModel>))
        .unwrap()
        .build()
        .unwrap();
    turn(&net, "hi").await;
    assert!(!model.systems.lock()[0].contains("## Project memory"));
}

#[test]
fn a_blueprint_says_the_names_off_or_a_table() {
    let spec = AgentSpec::from_toml("").unwrap();
    assert_eq!(spec.project_memory, ProjectMemorySpec::default());
    assert!(spec.project_memory.enabled);
    assert_eq!(spec.project_memory.files, ["AGENTS.md"]);
    // The default is not written into a saved blueprint.
    assert!(serde_json::to_value(&spec)
        .unwrap()
        .get("project_memory")
        .is_none());

    let names = AgentSpec::from_toml("project_memory = [\"AGENTS.md\", \"CLAUDE.md\"]").unwrap();
    assert_eq!(names.project_memory.files, ["AGENTS.md", "CLAUDE.md"]);
    assert!(names.project_memory.enabled);

    let off = AgentSpec::from_toml("project_memory = false").unwrap();
    assert!(!off.project_memory.enabled);

    let table = AgentSpec::from_toml(
        "[project_memory]\nfiles = [\"CLAUDE.md\"]\nmax_tokens = 100\nenabled = true",
    )
    .unwrap();
    assert_eq!(table.project_memory.files, ["CLAUDE.md"]);
    assert_eq!(table.project_memory.max_tokens, Some(100));

    // Saved and read back the same (the session's blueprint).
    for spec in [names, off, table] {
        let json = serde_json::to_string(&spec).unwrap();
        assert_eq!(AgentSpec::from_json(&json).unwrap(), spec, "{json}");
    }
}
