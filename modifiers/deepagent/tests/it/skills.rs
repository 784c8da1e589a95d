//! Skills: discovery from a directory (mounted at `/skills` of a deep
//! agent) and from the session's own files, the system-prompt section
//! (snapshot), the model reading a SKILL.md with `read_file`, malformed
//! files skipped with a warning that names them, and the blueprint.

use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::{
    Attachments, ChatModel, ChatRequest, ChatResponse, HumanNode, Message, ModelError,
    RunnableNetwork, Turn,
};
use lc_agent_deepagent::{AgentSpec, DeepAgent, SkillError, SkillsModifier};
use lc_agent_filesystem::{Backend, FilesystemBackend, StateBackend};
use parking_lot::Mutex;
use serde_json::json;

/// Replays turns and keeps every request's messages.
#[derive(Clone, Default)]
struct Recorder {
    turns: Arc<Mutex<Vec<Turn>>>,
    requests: Arc<Mutex<Vec<Vec<Message>>>>,
}

impl Recorder {
    fn new(turns: Vec<Turn>) -> Self {
        let mut turns = turns;
        turns.reverse();
        Self {
            turns: Arc::new(Mutex::new(turns)),
            requests: Arc::default(),
        }
    }

    fn system_text(&self, call: usize) -> String {
        self.requests.lock()[call]
            .iter()
            .filter(|m| m.role() == "system")
            .map(|m| m.text().to_string())
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

#[async_trait]
impl ChatModel for Recorder {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.requests.lock().push(
            request
                .messages()
                .into_iter()
                .map(|m| m.into_owned())
                .collect(),
        );
        let turn = self.turns.lock().pop().ok_or(ModelError::ScriptExhausted {
            name: "recorder".into(),
            played: 0,
        })?;
        Ok(ChatResponse {
            content: turn.content,
            tool_calls: turn.tool_calls,
            ..ChatResponse::default()
        })
    }
}

const PDF_SKILL: &str = "---
name: pdf-forms
description: >
  Fill in PDF forms: find the fields,
  write the values, check the result.
license: Apache-2.0
---
# Filling PDF forms

1. List the fields with the script in fields.md.
2. SECRET-STEP: write each value.
";

/// A skills folder: two good skills, and everything that is not one.
fn skills_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let put = |path: &str, text: &str| {
        let file = dir.path().join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    };
    put("pdf-forms/SKILL.md", PDF_SKILL);
    put("pdf-forms/fields.md", "Run `fields.py`.\n");
    put(
        "csv-cleaner/SKILL.md",
        "---\nname: csv-cleaner\ndescription: \"Clean CSV files: quotes, encodings, blank rows\"\n---\nSteps.\n",
    );
    put(
        "broken/SKILL.md",
        "---\nname: broken\ndescription: [unclosed\n---\nbody\n",
    );
    put("no-front/SKILL.md", "# Just a heading\n");
    put(
        "no-description/SKILL.md",
        "---\nname: lonely\ndescription: \"  \"\n---\n",
    );
    put(
        "twin/SKILL.md",
        "---\nname: csv-cleaner\ndescription: Another one\n---\n",
    );
    put("notes/todo.txt", "not a skill\n");
    put("README.md", "The skills of this project.\n");
    dir
}

#[tokio::test]
async fn malformed_skills_are_skipped_and_named() {
    let dir = skills_dir();
    let net = RunnableNetwork::new();
    let load = |root: &str| {
        let backend = FilesystemBackend::new(dir.path()).unwrap();
        let skills = SkillsModifier::new(backend, root);
        let net = net.clone();
        async move { skills.load(&net).await }
    };
    let (skills, errors) = load("/").await;
    let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["csv-cleaner", "pdf-forms"],
        "the good ones still load"
    );
    assert_eq!(
        skills[1].description,
        "Fill in PDF forms: find the fields, write the values, check the result."
    );
    assert_eq!(skills[1].path, "/pdf-forms/SKILL.md");
    let mut messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
    messages.sort();
    assert_eq!(messages.len(), 4, "{messages:#?}");
    assert!(
        messages[0].starts_with("/broken/SKILL.md: invalid front matter: "),
        "{}",
        messages[0]
    );
    assert!(
        messages[0].contains("line"),
        "the YAML error says where: {}",
        messages[0]
    );
    assert_eq!(
        messages[1],
        "/no-description/SKILL.md: the front matter's `description` is empty"
    );
    assert!(
        messages[2].starts_with("/no-front/SKILL.md: no YAML front matter"),
        "{}",
        messages[2]
    );
    assert!(
        messages[3].starts_with("/twin/SKILL.md: a skill named `csv-cleaner` is loaded already"),
        "{}",
        messages[3]
    );
    assert!(errors.iter().any(|e| matches!(e, SkillError::Yaml { .. })));

    // A root that does not exist has no skills and no errors.
    let (none, errors) = load("/nowhere").await;
    assert!(none.is_empty() && errors.is_empty());
}

#[tokio::test]
async fn a_deep_agent_lists_its_skills_and_reads_one() {
    let dir = skills_dir();
    let model = Recorder::new(vec![
        Turn::call(
            "c1",
            "read_file",
            json!({"file_path": "/skills/pdf-forms/SKILL.md"}),
        ),
        Turn::text("I will follow the pdf-forms skill."),
    ]);
    let net = DeepAgent::builder()
        .model(model.clone())
        .skills_dir(dir.path())
        .build()
        .unwrap();
    {
        let _scope = net.enter();
        HumanNode::new("Fill in the tax form.");
    }
    let reply = net.invoke().await.unwrap();
    assert_eq!(reply.text(), "I will follow the pdf-forms skill.");

    let system = model.system_text(0);
    let section = system
        .split("\n\n## ")
        .find(|s| s.starts_with("Skills"))
        .map(|s| format!("## {s}"))
        .unwrap_or_else(|| panic!("no skills section in\n{system}"));
    insta::with_settings!({snapshot_path => "../../../../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("skills_prompt_section", section);
    });
    assert!(
        !system.contains("SECRET-STEP"),
        "the prompt lists names and descriptions only"
    );
    // The model read the whole file through the file tools.
    let read = net
        .nodes()
        .into_iter()
        .find_map(|n| match n.output().as_deref() {
            Some(Message::Tool { content, .. }) => Some(content.clone()),
            _ => None,
        })
        .unwrap();
    assert!(read.contains("SECRET-STEP: write each value."), "{read}");
    // Files beside it are reachable too, and the session's own files are
    // untouched by the mount.
    assert!(net.files().is_empty());
}

#[tokio::test]
async fn skills_in_the_session_files_and_from_a_blueprint() {
    let dir = skills_dir();
    let toml = format!(
        "[models.main]\nmodel = \"m\"\n\n[skills]\ndir = {:?}\nroutes = [\"/team-skills\"]\n\n\
         [summarization]\nevery_human_turns = 4\ncontext_windows = {{ models = {{ m = 8000 }} }}\n",
        dir.path().display().to_string()
    );
    let spec = AgentSpec::from_toml(&toml).unwrap();
    assert_eq!(
        spec.summarization.as_ref().unwrap().every_human_turns,
        Some(4)
    );
    assert_eq!(
        AgentSpec::from_json(&serde_json::to_string(&spec).unwrap()).unwrap(),
        spec,
        "the blueprint round-trips with skills and summarization"
    );
    let model = Recorder::new(vec![Turn::text("ok"), Turn::text("ok again")]);
    let main: Arc<dyn ChatModel> = Arc::new(model.clone());
    let net = spec
        .builder(move |_, _| Ok(main.clone()))
        .unwrap()
        .build()
        .unwrap();
    let ids: Vec<String> = net.modifiers().iter().map(|m| m.id().to_string()).collect();
    assert!(
        ids.contains(&"skills".to_string()) && ids.contains(&"summarization".to_string()),
        "{ids:?}"
    );
    // A skill written into the session's files (the team's route) joins
    // at the next turn.
    {
        let _scope = net.enter();
        HumanNode::new("hello");
    }
    net.invoke().await.unwrap();
    assert!(!model.system_text(0).contains("release-notes"));
    StateBackend::new(net.clone())
        .write(
            "/team-skills/release-notes/SKILL.md",
            "---\nname: release-notes\ndescription: Write release notes from the git log\n---\n",
            false,
        )
        .await
        .unwrap();
    {
        let _scope = net.enter();
        HumanNode::new("hello again");
    }
    net.invoke().await.unwrap();
    let system = model.system_text(1);
    assert!(
        system.contains("- **release-notes**: Write release notes from the git log (`/team-skills/release-notes/SKILL.md`)"),
        "{system}"
    );
    assert!(system.contains("- **pdf-forms**"), "{system}");

    // The same modifier on its own, over the session's files.
    let alone = SkillsModifier::new(StateBackend::factory(), "/team-skills");
    let (skills, errors) = alone.load(&net).await;
    assert_eq!(skills.len(), 1);
    assert!(errors.is_empty());
    let _: &dyn Backend = &StateBackend::new(RunnableNetwork::new());
}
