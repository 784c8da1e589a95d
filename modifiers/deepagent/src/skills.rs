//! Skills: folders of instructions the model reads when a task calls for
//! them (the Anthropic / deepagents format).
//!
//! ```text
//!  /skills/                          (a directory mounted as a route, or any backend path)
//!    pdf-forms/SKILL.md   ---\n name: pdf-forms\n description: Fill PDF forms\n ---\n <instructions>
//!    pdf-forms/fields.py  (files beside it, read on demand)
//!        │ load_skills: one SKILL.md per folder, YAML front matter (name, description)
//!        ▼
//!  system prompt: "## Skills" + "- **pdf-forms**: Fill PDF forms (`/skills/pdf-forms/SKILL.md`)"
//!        │ the model decides
//!        ▼
//!  read_file /skills/pdf-forms/SKILL.md  ─▶ the full instructions
//! ```
//!
//! The prompt lists names and descriptions only, so many skills cost a few
//! lines each. A `SKILL.md` whose front matter is missing or malformed is
//! skipped with a warning that names the file; the other skills still load.
//! Skills are read again at the start of every `invoke`, so a skill added
//! while a session lives appears at its next turn.

use std::collections::BTreeSet;

use async_trait::async_trait;
use lc_agent::{ChatRequest, NetworkModifier, NodeRef, Result, RunnableNetwork};
use parking_lot::Mutex;
use serde::Deserialize;

use lc_agent_filesystem::{path, Backend, BackendSource, FsError};

/// The file that makes a folder a skill.
pub(crate) const SKILL_FILE: &str = "SKILL.md";

/// Where the deep agent mounts a skills directory.
pub(crate) const SKILLS_ROUTE: &str = "/skills";

/// The opening of the system-prompt section.
pub(crate) const SKILLS_PROMPT: &str = "## Skills

You have skills: folders with instructions (and files beside them) for particular kinds of \
task. When a task matches a skill's description, read its SKILL.md with `read_file` before you \
start and follow it; read the files it mentions when you need them.";

/// One skill: what the prompt lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// The skill's name (front matter `name`).
    pub name: String,
    /// When to use it (front matter `description`).
    pub description: String,
    /// The virtual path of its `SKILL.md`.
    pub path: String,
}

/// Why a `SKILL.md` was skipped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The file does not start with a `---` front matter block.
    #[error("{path}: no YAML front matter (the file must start with `---`, then `name:` and `description:`, then `---`)")]
    NoFrontMatter {
        /// The file.
        path: String,
    },
    /// The front matter is not YAML of the expected shape.
    #[error("{path}: invalid front matter: {source}")]
    Yaml {
        /// The file.
        path: String,
        /// The parser's error (line and column included).
        #[source]
        source: serde_yaml_ng::Error,
    },
    /// `name` or `description` is empty.
    #[error("{path}: the front matter's `{field}` is empty")]
    Empty {
        /// The file.
        path: String,
        /// The empty field.
        field: &'static str,
    },
    /// Another skill has this name already.
    #[error("{path}: a skill named `{name}` is loaded already (from {first})")]
    Duplicate {
        /// The file.
        path: String,
        /// The name.
        name: String,
        /// The file that defined it first.
        first: String,
    },
    /// The file or its folder could not be read.
    #[error("{path}: cannot read it: {source}")]
    Read {
        /// The file or folder.
        path: String,
        /// The backend's error.
        #[source]
        source: FsError,
    },
}

#[derive(Deserialize)]
struct FrontMatter {
    name: String,
    description: String,
}

/// Reads one `SKILL.md` (its text and virtual path).
pub(crate) fn parse_skill(path: &str, text: &str) -> std::result::Result<Skill, SkillError> {
    let no_front = || SkillError::NoFrontMatter {
        path: path.to_string(),
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(no_front());
    }
    let mut yaml = String::new();
    let mut closed = false;
    for line in lines {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        yaml.push_str(line);
    }
    if !closed {
        return Err(no_front());
    }
    let front: FrontMatter = serde_yaml_ng::from_str(&yaml).map_err(|source| SkillError::Yaml {
        path: path.to_string(),
        source,
    })?;
    for (field, value) in [("name", &front.name), ("description", &front.description)] {
        if value.trim().is_empty() {
            return Err(SkillError::Empty {
                path: path.to_string(),
                field,
            });
        }
    }
    Ok(Skill {
        name: front.name.trim().to_string(),
        description: front
            .description
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
        path: path.to_string(),
    })
}

/// Finds the skills under `root` (each folder directly below it with a
/// `SKILL.md`), sorted by name, and the files that were skipped and why.
/// A missing `root` has no skills.
pub(crate) async fn load_skills(
    backend: &dyn Backend,
    root: &str,
) -> (Vec<Skill>, Vec<SkillError>) {
    let root = match path::normalize(root) {
        Ok(root) => root,
        Err(source) => {
            return (
                Vec::new(),
                vec![SkillError::Read {
                    path: root.to_string(),
                    source,
                }],
            )
        }
    };
    let entries = match backend.ls(&root, false).await {
        Ok(entries) => entries,
        Err(FsError::DirectoryNotFound(_) | FsError::PathNotFound(_)) => {
            return (Vec::new(), Vec::new())
        }
        Err(source) => return (Vec::new(), vec![SkillError::Read { path: root, source }]),
    };
    // In path order, so that of two skills with one name the same one
    // wins on every backend.
    let mut files: Vec<String> = entries
        .into_iter()
        .filter(|e| e.is_dir)
        .map(|e| path::join(&e.path, SKILL_FILE))
        .collect();
    files.sort();
    let mut skills: Vec<Skill> = Vec::new();
    let mut errors = Vec::new();
    let downloads = backend.download_files(files).await;
    for download in downloads {
        let file = download.path;
        let text = match (download.content, download.error) {
            (Some(bytes), _) => String::from_utf8_lossy(&bytes).into_owned(),
            // A folder without SKILL.md is not a skill.
            (None, Some(lc_agent_filesystem::FileOpError::FileNotFound)) => continue,
            (None, error) => {
                errors.push(SkillError::Read {
                    path: file.clone(),
                    source: FsError::Io {
                        path: file,
                        reason: error.map_or("unknown error", |e| e.as_str()).to_string(),
                    },
                });
                continue;
            }
        };
        match parse_skill(&file, &text) {
            Ok(skill) => match skills.iter().find(|s| s.name == skill.name) {
                Some(first) => errors.push(SkillError::Duplicate {
                    path: file,
                    name: skill.name,
                    first: first.path.clone(),
                }),
                None => skills.push(skill),
            },
            Err(e) => errors.push(e),
        }
    }
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    (skills, errors)
}

/// The system-prompt section listing `skills` (`None` when there are
/// none).
pub(crate) fn skills_section(skills: &[Skill]) -> Option<String> {
    if skills.is_empty() {
        return None;
    }
    let mut out = format!("{SKILLS_PROMPT}\n");
    for s in skills {
        out.push_str(&format!(
            "\n- **{}**: {} (`{}`)",
            s.name, s.description, s.path
        ));
    }
    Some(out)
}

/// Lists the skills under a backend path in the system prompt (see the
/// module docs of `skills.rs`).
///
/// ```
/// use lc_agent::{Attachments, HumanNode, RunnableNetwork, ScriptedChatModel};
/// use lc_agent_filesystem::{Backend, StateBackend};
/// use lc_agent_deepagent::SkillsModifier;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let net = RunnableNetwork::builder().default_node("chat").chat_model("m")
///     .model("m", ScriptedChatModel::new(["ok"])).build();
/// StateBackend::new(net.clone())
///     .write("/skills/csv/SKILL.md", "---\nname: csv\ndescription: Clean CSV files\n---\n...", false)
///     .await.unwrap();
/// let skills = SkillsModifier::new(StateBackend::factory(), "/skills");
/// net.add_modifier(skills.clone()).unwrap();
/// { let _s = net.enter(); HumanNode::new("hi"); }
/// net.invoke().await.unwrap();
/// assert_eq!(skills.skills()[0].name, "csv");
/// # });
/// ```
#[derive(Clone)]
pub struct SkillsModifier {
    backend: BackendSource,
    roots: Vec<String>,
    loaded: std::sync::Arc<Mutex<Vec<Skill>>>,
    warned: std::sync::Arc<Mutex<BTreeSet<String>>>,
}

impl std::fmt::Debug for SkillsModifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillsModifier")
            .field("backend", &self.backend)
            .field("roots", &self.roots)
            .finish_non_exhaustive()
    }
}

impl SkillsModifier {
    /// Skills in the folders under `root` of `backend` (the paths the
    /// prompt gives are `backend`'s: use the file tools' backend, so that
    /// `read_file` finds them).
    pub fn new(backend: impl Into<BackendSource>, root: impl Into<String>) -> Self {
        Self {
            backend: backend.into(),
            roots: vec![root.into()],
            loaded: Default::default(),
            warned: Default::default(),
        }
    }

    /// Also the skills under `root` of the same backend (a name found
    /// under an earlier root wins).
    #[must_use]
    pub fn root(mut self, root: impl Into<String>) -> Self {
        self.roots.push(root.into());
        self
    }

    /// The skills found by the latest `invoke`.
    pub fn skills(&self) -> Vec<Skill> {
        self.loaded.lock().clone()
    }

    /// Reads the skills now: the skills, and what was skipped.
    pub async fn load(&self, network: &RunnableNetwork) -> (Vec<Skill>, Vec<SkillError>) {
        let backend = self.backend.resolve(network);
        let mut skills: Vec<Skill> = Vec::new();
        let mut errors = Vec::new();
        for root in &self.roots {
            let (found, skipped) = load_skills(&*backend, root).await;
            errors.extend(skipped);
            for skill in found {
                match skills.iter().find(|s| s.name == skill.name) {
                    Some(first) => errors.push(SkillError::Duplicate {
                        path: skill.path,
                        name: skill.name,
                        first: first.path.clone(),
                    }),
                    None => skills.push(skill),
                }
            }
        }
        skills.sort_by(|a, b| a.name.cmp(&b.name));
        (skills, errors)
    }
}

#[async_trait]
impl NetworkModifier for SkillsModifier {
    fn id(&self) -> &str {
        "skills"
    }

    async fn on_begin_invoke(&self, network: &RunnableNetwork) -> Result<()> {
        let (skills, errors) = self.load(network).await;
        for e in errors {
            let text = e.to_string();
            // Once per problem, not at every turn.
            if self.warned.lock().insert(text.clone()) {
                tracing::warn!("skipping a skill: {text}");
            }
        }
        *self.loaded.lock() = skills;
        Ok(())
    }

    async fn on_chat_request(
        &self,
        _network: &RunnableNetwork,
        _node: &NodeRef,
        request: &mut ChatRequest,
    ) -> Result<()> {
        if let Some(section) = skills_section(&self.loaded.lock()) {
            request.system.push(section);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skill_is_its_front_matter_and_a_file_without_one_is_refused() {
        let skill = parse_skill(
            "/skills/csv/SKILL.md",
            "---\nname: csv\ndescription: Clean CSV files\n---\nSteps...",
        )
        .unwrap();
        assert_eq!(
            (skill.name.as_str(), skill.description.as_str()),
            ("csv", "Clean CSV files")
        );
        assert!(parse_skill("/skills/x/SKILL.md", "no front matter").is_err());
    }
}
