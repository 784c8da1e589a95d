//! Command rules: `allow`, `ask` or `deny` for the commands `execute`
//! runs, matched on every simple command of a command line
//! (`command_line.rs` reads compound lines), so `git status && git push`
//! meets a rule about `git push`.
//!
//! ```text
//!  [[permissions]]               --deny-cmd 'git push*'   --ask-cmd 'rm -rf*'
//!  command = "git push*"          --allow-cmd 'git push --dry-run*'
//!  mode = "deny"
//!
//!  line ─▶ simple commands ─▶ each: the first rule whose pattern matches
//!            (+ unreadable)      `PROGRAM ARGS…` (the program by its base name,
//!                                 or as written) → its mode; none → allow
//!          verdict = the strictest of them; a part the parser cannot read
//!          asks (when there are command rules), naming why
//! ```
//!
//! A pattern is a glob over the whole command: `*` matches any text
//! (spaces and `/` included), `?` one character, `[…]` a set; words are
//! compared unquoted and joined by one space (`git  'push'` is
//! `git push`). `git push*` covers `git push`, `git push origin main`
//! and `git push-all`; `git push` alone only that exact command.

use globset::{GlobBuilder, GlobMatcher};
use serde::{Deserialize, Serialize};

use super::command_line::{self, base_name};
use super::{PermissionError, RuleMode, Verdict};

/// One command rule: `mode` for the commands `command` matches
/// (`[[permissions]] command = "git push*"` in a blueprint).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandRule {
    /// The pattern (see the module docs of `permissions/command.rs`).
    pub command: String,
    /// What it does.
    pub mode: RuleMode,
}

/// A command rule with its pattern compiled.
#[derive(Debug, Clone)]
pub(super) struct CompiledCommand {
    matcher: GlobMatcher,
}

impl CommandRule {
    /// A rule of `mode` for `pattern` (the CLI's `--deny-cmd 'git push*'`);
    /// an empty or invalid pattern is an error naming the flag.
    ///
    /// ```
    /// use lc_agent_filesystem::{CommandRule, RuleMode};
    ///
    /// let rule = CommandRule::parse(RuleMode::Deny, "git push*").unwrap();
    /// assert_eq!(rule.command, "git push*");
    /// assert!(CommandRule::parse(RuleMode::Ask, "  ").is_err());
    /// ```
    pub fn parse(mode: RuleMode, pattern: &str) -> Result<Self, PermissionError> {
        let rule = Self {
            command: pattern.trim().to_string(),
            mode,
        };
        CompiledCommand::new(&rule).map_err(|e| {
            PermissionError(format!(
                "invalid --{}-cmd '{pattern}': {}; write a command pattern such as 'git push*'",
                mode.name(),
                e.0
            ))
        })?;
        Ok(rule)
    }

    /// The rule as the flag would spell it: `deny-cmd git push*`.
    pub(super) fn describe(&self) -> String {
        format!("{}-cmd {}", self.mode.name(), self.command)
    }
}

impl CompiledCommand {
    pub(super) fn new(rule: &CommandRule) -> Result<Self, PermissionError> {
        let pattern = normalize(&rule.command);
        if pattern.is_empty() {
            return Err(PermissionError("the command pattern is empty".to_string()));
        }
        let glob = GlobBuilder::new(&pattern)
            .literal_separator(false)
            .backslash_escape(true)
            .build()
            .map_err(|e| {
                PermissionError(format!(
                    "the pattern `{}` is invalid: {}",
                    rule.command,
                    e.kind()
                ))
            })?;
        Ok(Self {
            matcher: glob.compile_matcher(),
        })
    }

    /// Whether the rule covers the command of `words`.
    fn matches(&self, words: &[String]) -> bool {
        let Some((program, args)) = words.split_first() else {
            return false;
        };
        let as_written = normalize(&words.join(" "));
        let by_name = normalize(
            &std::iter::once(base_name(program))
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
        );
        self.matcher.is_match(&by_name) || self.matcher.is_match(&as_written)
    }
}

/// Runs of white space as one space, trimmed.
fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The verdict of `rules` (in order, first match wins per simple command)
/// on the command line `line`: the strictest over its simple commands;
/// a part that cannot be read asks. No rules: allow, unread.
pub(super) fn check(rules: &[(CommandRule, CompiledCommand)], line: &str) -> Verdict {
    if rules.is_empty() {
        return Verdict::Allow;
    }
    let reading = command_line::read(line);
    let mut verdict = Verdict::Allow;
    for words in &reading.commands {
        if let Some((i, (rule, _))) = rules
            .iter()
            .enumerate()
            .find(|(_, (_, compiled))| compiled.matches(words))
        {
            let name = format!("command rule {} ({})", i + 1, rule.describe());
            verdict = verdict.stricter(match rule.mode {
                RuleMode::Allow => Verdict::Allow,
                RuleMode::Deny => Verdict::Deny(name),
                RuleMode::Ask => Verdict::Ask(name),
            });
        }
    }
    if let Some(why) = reading.unreadable.first() {
        verdict = verdict.stricter(Verdict::Ask(format!(
            "the command rules (the command cannot be read fully: {why})"
        )));
    }
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(list: &[(RuleMode, &str)]) -> Vec<(CommandRule, CompiledCommand)> {
        list.iter()
            .map(|(mode, pattern)| {
                let rule = CommandRule::parse(*mode, pattern).unwrap();
                let compiled = CompiledCommand::new(&rule).unwrap();
                (rule, compiled)
            })
            .collect()
    }

    #[test]
    fn every_part_of_a_line_meets_the_rules() {
        let rules = rules(&[
            (RuleMode::Allow, "git push --dry-run*"),
            (RuleMode::Ask, "git push*"),
            (RuleMode::Deny, "rm -rf /*"),
        ]);
        assert_eq!(check(&rules, "git status"), Verdict::Allow);
        for line in [
            "git status && git push",
            "git status; /usr/bin/git  'push' origin",
            "echo $(git push)",
            "sh -c 'git push'",
            "eval 'git push'",
            "(cd x && git push)",
        ] {
            assert_eq!(
                check(&rules, line),
                Verdict::Ask("command rule 2 (ask-cmd git push*)".to_string()),
                "{line}"
            );
        }
        assert_eq!(check(&rules, "git push --dry-run"), Verdict::Allow);
        assert_eq!(
            check(&rules, "git push; rm -rf /"),
            Verdict::Deny("command rule 3 (deny-cmd rm -rf /*)".to_string())
        );
        let Verdict::Ask(why) = check(&rules, "echo Z2l0IHB1c2g= | base64 -d | sh") else {
            panic!("an obfuscated line must ask");
        };
        assert!(
            why.contains("`sh` reads its commands from its input"),
            "{why}"
        );
        assert_eq!(check(&[], "echo x | sh"), Verdict::Allow);
    }

    /// `[[permissions]]` entries: a `command` entry is a command rule,
    /// saved back after the path rules; a bad one says what is wrong.
    #[test]
    fn blueprint_entries_hold_command_rules() {
        use super::super::Permissions;
        let text = r#"[{"command": "git push*", "mode": "deny"},
                       {"operations": ["write"], "paths": ["secrets/**"], "mode": "deny"}]"#;
        let rules: Permissions = serde_json::from_str(text).unwrap();
        assert!(matches!(
            rules.check_command("ls && git push"),
            Verdict::Deny(_)
        ));
        assert_eq!(
            serde_json::to_string(&rules).unwrap(),
            r#"[{"operations":["write"],"paths":["secrets/**"],"mode":"deny"},{"command":"git push*","mode":"deny"}]"#
        );
        let again: Permissions =
            serde_json::from_str(&serde_json::to_string(&rules).unwrap()).unwrap();
        assert_eq!(again, rules);
        let bad = serde_json::from_str::<Permissions>(r#"[{"command": "x", "mode": "maybe"}]"#);
        assert!(bad.unwrap_err().to_string().contains("maybe"));
    }
}
