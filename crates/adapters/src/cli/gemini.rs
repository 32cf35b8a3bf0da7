//! `adapterType: "gemini_local"`: Google's Gemini CLI,
//! `gemini --output-format stream-json --prompt <prompt>`.
//!
//! Upstream's `engine` picks between this CLI engine and ACP, and an unset
//! or `"auto"` engine means ACP there. Here an unset engine is the CLI
//! engine: it reports tokens (upstream's ACP runs record none) and resumes
//! a task's session with `--resume`, which gemini 0.61's ACP `session/load`
//! did not do for upstream. `engine: "acp"` (and `"auto"` with `gemini`
//! installed) runs `gemini --acp` through `crate::acp` instead.
//!
//! The CLI prices nothing; [`price`] uses Google's list prices.

mod models;
mod parse;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use parse::GeminiParser;

use super::stream::{Summary, Usage};
use super::{Built, CliConfig, CliKind, RunSpec, ENGINE_UPSTREAM_UNUSED};
use crate::config::{Fields, KnownKeys};
use crate::models::{DetectedModel, Model};
use crate::BoxFuture;
use paperclip_core::billing::BillingType;

/// Upstream's model id for "let the CLI choose": no `--model` flag.
pub const AUTO_MODEL: &str = "auto";

#[derive(Clone, Copy)]
pub struct Gemini;

pub struct GeminiExtra {
    sandbox: bool,
}

impl CliKind for Gemini {
    type Extra = GeminiExtra;

    fn kind(&self) -> &'static str {
        "gemini_local"
    }

    fn default_command(&self) -> &'static str {
        "gemini"
    }

    fn provider(&self, _model: Option<&str>) -> &'static str {
        "google"
    }

    /// A Gemini or Google API key is metered; without one Gemini uses its
    /// Google login.
    fn billing_type(&self, env: &BTreeMap<String, String>) -> BillingType {
        BillingType::by_key(
            super::is_set(env, "GEMINI_API_KEY") || super::is_set(env, "GOOGLE_API_KEY"),
        )
    }

    /// `sandbox` is read (`--sandbox` or `--sandbox=none`). Unused of
    /// upstream's: `approvalMode` and `yolo`, which only its environment
    /// test's hello prompt reads (runs are always `--approval-mode yolo`,
    /// as upstream's), besides the engine keys.
    fn known_keys(&self) -> KnownKeys {
        KnownKeys::new(&["sandbox"], &["approvalMode", "yolo"]).with(&[], ENGINE_UPSTREAM_UNUSED)
    }

    fn parse_extra(&self, f: &mut Fields<'_>) -> GeminiExtra {
        GeminiExtra {
            sandbox: f.bool("sandbox", false),
        }
    }

    fn build(&self, run: &RunSpec<'_, GeminiExtra>) -> std::io::Result<Built> {
        let mut args: Vec<String> = vec!["--output-format".into(), "stream-json".into()];
        if let Some(session) = run.session_id {
            args.extend(["--resume".into(), session.to_string()]);
        }
        if let Some(model) = run.config.model.as_deref().filter(|m| *m != AUTO_MODEL) {
            args.extend(["--model".into(), model.to_string()]);
        }
        // Unattended: no one is there to approve a tool call.
        args.extend(["--approval-mode".into(), "yolo".into()]);
        args.push(if run.extra.sandbox {
            "--sandbox".into()
        } else {
            "--sandbox=none".into()
        });
        args.extend(run.config.extra_args.iter().cloned());
        args.extend(["--prompt".into(), prompt(run)?]);

        let mut notes = Vec::new();
        let home = home_of(run.config);
        if let (Some(skills), Some(home)) = (run.skills_dir, &home) {
            notes.extend(link_skills(skills, &home.join(".gemini").join("skills")));
        }
        if let Some(home) = &home {
            notes.extend(auth_choice_note(run.config, home));
        }
        Ok(Built {
            args,
            prompt_on_stdin: false,
            env: headless_env(std::env::var("TERM").ok().as_deref()),
            notes,
        })
    }

    fn parser(&self) -> Box<dyn super::stream::StreamParser> {
        Box::new(GeminiParser::default())
    }

    fn acp_command(&self) -> Option<&'static str> {
        Some("gemini --acp")
    }

    fn models<'a>(&'a self, config: &'a CliConfig) -> BoxFuture<'a, Vec<Model>> {
        Box::pin(models::list(config))
    }

    fn known_models(&self) -> Vec<Model> {
        models::known()
    }

    fn detect_model<'a>(&'a self, config: &'a CliConfig) -> BoxFuture<'a, Option<DetectedModel>> {
        Box::pin(async move { models::detect(config) })
    }

    /// 0.61: `Error resuming session: Invalid session identifier "<id>".`
    fn resume_rejected(&self, text: &str) -> bool {
        let t = text.to_ascii_lowercase();
        t.contains("error resuming session")
            || t.contains("invalid session identifier")
            || t.contains("session") && (t.contains("not found") || t.contains("unknown session"))
    }

    fn complete(&self, summary: &mut Summary, config: &CliConfig) {
        if summary.model.is_none() {
            summary.model = config.model.clone().filter(|m| m != AUTO_MODEL);
        }
    }
}

/// The prompt: the agent's instructions file first (gemini has no flag for
/// extra system instructions), then the run's prompt, then how to reach
/// the API with the CLI's shell tool.
fn prompt(run: &RunSpec<'_, GeminiExtra>) -> std::io::Result<String> {
    let mut text = String::new();
    if let Some(file) = &run.config.instructions_file {
        text.push_str(&std::fs::read_to_string(file)?);
        text.push_str(&format!(
            "\n\n(These instructions are from {}; resolve relative paths in them from its folder.)\n\n",
            file.display()
        ));
    }
    text.push_str(run.prompt);
    text.push_str(
        "\n\nCall the Paperclip API with curl through run_shell_command; PAPERCLIP_API_URL, \
         PAPERCLIP_API_KEY, PAPERCLIP_RUN_ID and PAPERCLIP_TASK_ID are set in its shell. \
         The paperclip skill has the details.",
    );
    Ok(text)
}

/// The HOME the CLI will read: the agent's own, else the server's.
fn home_of(config: &CliConfig) -> Option<PathBuf> {
    config
        .env
        .get("HOME")
        .cloned()
        .or_else(|| std::env::var("HOME").ok())
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// A terminal and browser setting that make gemini fail fast instead of
/// prompting: a colour terminal (it warns on a dumb one), no browser for
/// a login. Gemini 0.61 refuses to run headless in a folder not trusted
/// (exit 55); the run's folder is one the board gave the agent, so it is
/// trusted for the run. Gemini starts a second Node process of itself to
/// raise its heap limit to half the machine's memory; a run is one prompt
/// and the default heap is gigabytes, so the run keeps the first process
/// (measured: 1.7 s of CPU per start against 1.0 s, and one Node process
/// fewer per turn). The agent's `env` overrides any of these
/// (`GEMINI_CLI_NO_RELAUNCH: ""` brings the second process back).
fn headless_env(server_term: Option<&str>) -> BTreeMap<String, String> {
    let mut env = BTreeMap::from([
        ("COLORTERM".to_string(), "truecolor".to_string()),
        ("NO_BROWSER".to_string(), "1".to_string()),
        ("GEMINI_CLI_TRUST_WORKSPACE".to_string(), "true".to_string()),
        ("GEMINI_CLI_NO_RELAUNCH".to_string(), "true".to_string()),
    ]);
    let term = server_term.unwrap_or("").trim().to_ascii_lowercase();
    if term.is_empty() || term == "dumb" || term == "vt100" {
        env.insert("TERM".into(), "xterm-256color".into());
    }
    env
}

/// Links each skill folder into the CLI's user skills dir, where gemini
/// discovers skills. Only links are replaced: a folder of the same name the
/// user made is left alone (and said).
fn link_skills(skills: &Path, target: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(skills) else {
        return Vec::new();
    };
    let mut notes = Vec::new();
    if let Err(e) = std::fs::create_dir_all(target) {
        return vec![format!(
            "[paperclip] could not create {}: {e}; skills not linked",
            target.display()
        )];
    }
    for entry in entries.flatten() {
        let source = entry.path();
        if !source.is_dir() {
            continue;
        }
        let link = target.join(entry.file_name());
        match std::fs::symlink_metadata(&link) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if std::fs::read_link(&link).ok().as_deref() == Some(source.as_path()) {
                    continue;
                }
                let _ = std::fs::remove_file(&link);
            }
            Ok(_) => {
                notes.push(format!(
                    "[paperclip] {} exists and is not a link; the {} skill there is the user's",
                    link.display(),
                    entry.file_name().to_string_lossy()
                ));
                continue;
            }
            Err(_) => {}
        }
        if let Err(e) = std::os::unix::fs::symlink(&source, &link) {
            notes.push(format!(
                "[paperclip] could not link {}: {e}",
                link.display()
            ));
        }
    }
    notes
}

/// Gemini 0.61 with `GOOGLE_GEMINI_BASE_URL` set picks a gateway auth type
/// and refuses to start ("Invalid auth method selected.") unless the
/// home's settings choose the API key. Said before the run, since the CLI's
/// own message does not name the fix.
fn auth_choice_note(config: &CliConfig, home: &Path) -> Option<String> {
    config.env.get("GOOGLE_GEMINI_BASE_URL")?;
    let path = home.join(".gemini").join("settings.json");
    let settings = std::fs::read_to_string(&path).unwrap_or_default();
    (!settings.contains("gemini-api-key")).then(|| {
        format!(
            "[paperclip] GOOGLE_GEMINI_BASE_URL is set but {} does not select the API key \
             (security.auth.selectedType \"gemini-api-key\"); gemini may refuse with \
             \"Invalid auth method selected.\"",
            path.display()
        )
    })
}

/// Google's list prices in USD per million tokens (uncached input, cached
/// input, output), standard paid tier, text, from ai.google.dev's Gemini
/// API pricing page as of 2025-12. Thinking tokens are billed as output.
/// Gemini 2.5 Pro's rates double for prompts over 200k tokens: its second
/// row.
const RATES: &[(&str, f64, f64, f64)] = &[
    ("gemini-2.5-flash-lite", 0.10, 0.01, 0.40),
    ("gemini-2.5-flash", 0.30, 0.03, 2.50),
    ("gemini-2.5-pro", 1.25, 0.125, 10.0),
];
const PRO_LONG: (f64, f64, f64) = (2.50, 0.25, 15.0);
const PRO_LONG_PROMPT: u64 = 200_000;

/// The list price of `usage` on `model`, or `None` for a model not in the
/// table. The longest prefix wins when what follows is a version tag
/// (`-001`, `-preview-06-17`), so `gemini-2.5-flash-lite` is not priced as
/// `gemini-2.5-flash`. The run's output gives no per-request sizes: 2.5 Pro
/// is priced at its short-prompt rate only when all of the run's prompts
/// together stay under 200k tokens (then each did); otherwise at the long
/// rate, an upper bound, so a budget stops early rather than late.
pub fn price(model: &str, usage: &Usage) -> Option<f64> {
    let id = model.strip_prefix("models/").unwrap_or(model);
    let &(prefix, mut input, mut cached, mut output) = RATES
        .iter()
        .filter(|(p, ..)| {
            id.strip_prefix(p).is_some_and(|rest| {
                rest.is_empty()
                    || rest.starts_with("-0")
                    || rest.starts_with("-preview")
                    || rest.starts_with("-latest")
            })
        })
        .max_by_key(|(p, ..)| p.len())?;
    let prompt = usage.input_tokens + usage.cached_input_tokens;
    if prefix == "gemini-2.5-pro" && prompt > PRO_LONG_PROMPT {
        (input, cached, output) = PRO_LONG;
    }
    let m = 1_000_000.0;
    Some(
        usage.input_tokens as f64 * input / m
            + usage.cached_input_tokens as f64 * cached / m
            + usage.output_tokens as f64 * output / m,
    )
}

#[cfg(test)]
mod tests;
