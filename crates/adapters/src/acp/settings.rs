//! The ACP engine's keys, upstream's names: `engine` on `claude_local`,
//! `codex_local` and `gemini_local`, and the engine's settings with their
//! older `acp`-prefixed names (read when the new one is unset, as upstream
//! does).

use std::path::PathBuf;

use serde_json::Value;

use super::updates::{NonInteractive, PermissionMode};
use crate::config::Fields;

/// The keys the engine reads.
pub const KEYS: &[&str] = &[
    "engine",
    "agentCommand",
    "acpAgentCommand",
    "mode",
    "acpMode",
    "permissionMode",
    "acpPermissionMode",
    "nonInteractivePermissions",
    "acpNonInteractivePermissions",
    "stateDir",
    "acpStateDir",
];

/// Accepted without effect: upstream keeps an agent process warm between
/// runs for this long; here the agent's process ends with each run, and a
/// follow-up loads the session in a new one.
pub const UNUSED: &[&str] = &["warmHandleIdleMs", "acpWarmHandleIdleMs"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Cli,
    Acp,
    /// ACP when its agent command is installed, else the CLI.
    Auto,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `None`: the CLI engine, as before the key existed.
    pub engine: Option<Engine>,
    /// The agent command line (`agentCommand`), split into words.
    pub command: Option<Vec<String>>,
    /// `oneshot`: a fresh session every run (none is saved).
    pub oneshot: bool,
    pub permission: PermissionMode,
    pub non_interactive: NonInteractive,
    pub state_dir: Option<PathBuf>,
}

impl Settings {
    /// Reads the keys into `f` (its errors are the config's).
    pub(crate) fn read(f: &mut Fields<'_>) -> Settings {
        let engine = match f.string("engine").map(|e| e.trim().to_ascii_lowercase()) {
            None => None,
            Some(e) if e.is_empty() => None,
            Some(e) => match e.as_str() {
                "cli" => Some(Engine::Cli),
                "acp" => Some(Engine::Acp),
                "auto" => Some(Engine::Auto),
                _ => {
                    f.error(&["engine"], "must be one of cli, acp, auto");
                    None
                }
            },
        };
        let command = first(f, "agentCommand", "acpAgentCommand").and_then(|(key, c)| {
            match split_command(&c) {
                Some(words) if !words.is_empty() => Some(words),
                _ => {
                    f.error(&[key], "must be a command line (unbalanced quotes?)");
                    None
                }
            }
        });
        let oneshot = match first(f, "mode", "acpMode") {
            None => false,
            Some((_, m)) if m == "persistent" => false,
            Some((_, m)) if m == "oneshot" => true,
            Some((key, _)) => {
                f.error(&[key], "must be persistent or oneshot");
                false
            }
        };
        let permission = match first(f, "permissionMode", "acpPermissionMode") {
            None => PermissionMode::ApproveAll,
            Some((key, m)) => match m.as_str() {
                "approve-all" => PermissionMode::ApproveAll,
                // Upstream reads its older "default" as approve-reads.
                "approve-reads" | "default" => PermissionMode::ApproveReads,
                "deny-all" => PermissionMode::DenyAll,
                _ => {
                    f.error(
                        &[key],
                        "must be one of approve-all, approve-reads, deny-all",
                    );
                    PermissionMode::ApproveAll
                }
            },
        };
        let non_interactive = match first(
            f,
            "nonInteractivePermissions",
            "acpNonInteractivePermissions",
        ) {
            None => NonInteractive::Deny,
            Some((_, m)) if m == "deny" => NonInteractive::Deny,
            Some((_, m)) if m == "fail" => NonInteractive::Fail,
            Some((key, _)) => {
                f.error(&[key], "must be deny or fail");
                NonInteractive::Deny
            }
        };
        let state_dir = first(f, "stateDir", "acpStateDir").and_then(|(key, d)| {
            let p = PathBuf::from(d);
            if p.is_absolute() {
                Some(p)
            } else {
                f.error(&[key], "must be an absolute path");
                None
            }
        });
        Settings {
            engine,
            command,
            oneshot,
            permission,
            non_interactive,
            state_dir,
        }
    }

    /// The settings of a config that has been validated.
    pub fn of(config: &Value) -> Settings {
        match Fields::new(config) {
            Ok(mut f) => Settings::read(&mut f),
            Err(_) => Settings::read(&mut Fields::new(&Value::Object(Default::default())).unwrap()),
        }
    }
}

/// The first of two keys that holds a non-blank string, trimmed.
fn first(
    f: &mut Fields<'_>,
    key: &'static str,
    old: &'static str,
) -> Option<(&'static str, String)> {
    for k in [key, old] {
        if let Some(s) = f.string(k) {
            let s = s.trim().to_string();
            if !s.is_empty() {
                return Some((k, s));
            }
        }
    }
    None
}

/// Splits a command line into words as a shell would for plain words and
/// quotes (no expansion: the words are run as given, never by a shell).
pub fn split_command(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => word.push(chars.next()?),
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                word.push(chars.next()?);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return None;
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn command_lines_split_like_a_shell_without_one() {
        assert_eq!(split_command("gemini --acp").unwrap(), ["gemini", "--acp"]);
        assert_eq!(
            split_command(r#"npx "@zed-industries/codex-acp" --flag 'a b' c\ d"#).unwrap(),
            ["npx", "@zed-industries/codex-acp", "--flag", "a b", "c d"]
        );
        assert_eq!(split_command("  ").unwrap(), Vec::<String>::new());
        assert!(split_command("bad 'quote").is_none());
    }

    #[test]
    fn keys_read_with_their_older_names_and_bad_values_are_named() {
        let s = Settings::of(&json!({
            "engine": "ACP", "acpAgentCommand": "my-acp --x", "acpMode": "oneshot",
            "acpPermissionMode": "deny-all", "nonInteractivePermissions": "fail", "stateDir": "/tmp/s",
        }));
        assert_eq!(s.engine, Some(Engine::Acp));
        assert_eq!(s.command.as_deref().unwrap(), ["my-acp", "--x"]);
        assert!(s.oneshot);
        assert_eq!(s.permission, PermissionMode::DenyAll);
        assert_eq!(s.non_interactive, NonInteractive::Fail);
        // The newer name wins.
        let s = Settings::of(
            &json!({"permissionMode": "approve-reads", "acpPermissionMode": "deny-all"}),
        );
        assert_eq!(s.permission, PermissionMode::ApproveReads);
        assert_eq!(Settings::of(&json!({})).engine, None);

        let bad = json!({"engine": "fast", "mode": "sometimes", "permissionMode": "yolo",
                         "nonInteractivePermissions": "ask", "stateDir": "rel"});
        let mut f = Fields::new(&bad).unwrap();
        Settings::read(&mut f);
        let errors = f.finish(()).unwrap_err();
        let paths: Vec<&str> = errors.iter().map(|e| e.path[0].as_str()).collect();
        assert_eq!(
            paths,
            [
                "engine",
                "mode",
                "permissionMode",
                "nonInteractivePermissions",
                "stateDir"
            ]
        );
    }
}
