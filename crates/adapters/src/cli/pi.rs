//! `adapterType: "pi_local"`: Pi (`@mariozechner/pi-coding-agent`),
//! `pi --mode json -p ... <prompt>`, the original's way to run any provider
//! Pi knows, local model servers included.
//!
//! Pi has no base-URL flag: a custom provider (an Ollama, LM Studio or vLLM
//! server, a gateway) exists only in a `models.json` of its agent directory.
//! The original's `env.PAPERCLIP_PI_PROVIDERS` (that file's `providers`
//! object; the server's own variable when the agent's env has none) is
//! written to a directory of this run's own, which `PI_CODING_AGENT_DIR`
//! points at; the variable itself never reaches Pi, since it may hold keys.
//! The user's own agent directory stays visible through links, so their
//! logins and settings keep working.
//!
//! No `pi --list-models` gate before a run, unlike the original: Pi sends an
//! unlisted id to the provider as it is (a model pulled on the server since
//! works), a model the server does not have is refused by it within a second
//! (`model_unavailable`), and the gate cost a process per run while refusing
//! working custom-provider configs.
//!
//! Sessions: a file per agent and task, chosen before the run (the session
//! id is its path), resumed with `--session` on the task's next run.

mod models;
mod parse;
mod providers;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;

use super::stream::{StreamParser, Summary};
use super::{Built, CliConfig, CliKind, Prepared, RunSpec};
use crate::config::{Fields, KnownKeys};
use crate::models::{DetectedModel, Model};
use crate::{BoxFuture, ErrorCode, Outcome};

pub use models::forget_cached;
pub use parse::PiParser;

/// The variable holding the original's custom providers (Pi's `providers`).
pub const PROVIDERS_VAR: &str = "PAPERCLIP_PI_PROVIDERS";
/// Pi's variable naming its agent directory (models.json, auth.json, ...).
const AGENT_DIR_VAR: &str = "PI_CODING_AGENT_DIR";
/// Pi's variable naming where it keeps sessions; here, where ours go.
const SESSION_DIR_VAR: &str = "PI_CODING_AGENT_SESSION_DIR";
const THINKING: &[&str] = &["off", "minimal", "low", "medium", "high", "xhigh"];
/// The tools the original enables: all of Pi's built-in ones.
const TOOLS: &str = "read,bash,edit,write,grep,find,ls";
/// A longer prompt goes on stdin: one argument may hold at most 128 KiB.
const PROMPT_ARG_MAX: usize = 64 * 1024;

#[derive(Clone, Copy)]
pub struct Pi;

pub struct PiExtra {
    thinking: Option<String>,
}

impl CliKind for Pi {
    type Extra = PiExtra;

    fn kind(&self) -> &'static str {
        "pi_local"
    }

    fn default_command(&self) -> &'static str {
        "pi"
    }

    /// The provider part of `provider/id`: `ollama`, `openrouter`, or the
    /// name of a custom provider.
    fn provider(&self, model: Option<&str>) -> &'static str {
        model
            .and_then(|m| m.split_once('/'))
            .map(|(p, _)| intern(p))
            .unwrap_or("pi")
    }

    fn known_keys(&self) -> KnownKeys {
        KnownKeys::new(&["thinking"], &[])
    }

    fn parse_extra(&self, f: &mut Fields<'_>) -> PiExtra {
        match f.get("model") {
            Some(Value::String(m)) if split_model(m).is_some() => {}
            Some(Value::String(_)) | None => f.error(
                &["model"],
                "is required as provider/model, e.g. ollama/qwen3:8b or anthropic/claude-sonnet-4-5",
            ),
            Some(_) => {}
        }
        let thinking = f.string("thinking").filter(|s| !s.is_empty());
        if let Some(t) = &thinking {
            if !THINKING.contains(&t.as_str()) {
                f.error(
                    &["thinking"],
                    format!("must be one of {}", THINKING.join(", ")),
                );
            }
        }
        // A literal value is checked now; a secret's only at the run.
        if let Some(Value::String(raw)) = f.get("env").and_then(|e| e.get(PROVIDERS_VAR)).cloned() {
            if let Err(why) = providers::parse(&raw) {
                f.error(&["env", PROVIDERS_VAR], &why);
            }
        }
        PiExtra { thinking }
    }

    fn build(&self, run: &RunSpec<'_, PiExtra>) -> std::io::Result<Built> {
        let mut args: Vec<String> = ["--mode", "json", "-p"].map(String::from).to_vec();
        if let Some(file) = &run.config.instructions_file {
            args.extend(["--append-system-prompt".into(), file.display().to_string()]);
        }
        let mut skills = Vec::new();
        if let Some(dir) = run.skills_dir {
            // The Paperclip skill is how the agent works at all, so all of
            // it goes in the system prompt; other skills are offered by name.
            let paperclip = dir.join("paperclip").join("SKILL.md");
            if paperclip.is_file() {
                args.extend([
                    "--append-system-prompt".into(),
                    paperclip.display().to_string(),
                ]);
            }
            if let Ok(entries) = std::fs::read_dir(dir) {
                for e in entries.flatten() {
                    if e.file_name() != "paperclip" && e.path().join("SKILL.md").is_file() {
                        skills.push(e.path().display().to_string());
                    }
                }
            }
            skills.sort();
        }
        if let Some((provider, model)) = run.config.model.as_deref().and_then(split_model) {
            args.extend([
                "--provider".into(),
                provider.into(),
                "--model".into(),
                model.into(),
            ]);
        }
        if let Some(t) = &run.extra.thinking {
            args.extend(["--thinking".into(), t.clone()]);
        }
        args.extend(["--tools".into(), TOOLS.into()]);
        let session = match run.session_id {
            Some(saved) => PathBuf::from(saved),
            None => new_session_file(&session_dir(run.config, run.scratch))?,
        };
        args.extend(["--session".into(), session.display().to_string()]);
        for skill in skills {
            args.extend(["--skill".into(), skill]);
        }
        args.extend(run.config.extra_args.iter().cloned());
        let on_stdin = run.prompt.len() > PROMPT_ARG_MAX;
        if !on_stdin {
            // Pi reads `@name` as a file to include and `-x` as a flag.
            let guarded = if run.prompt.starts_with(['@', '-']) {
                format!(" {}", run.prompt)
            } else {
                run.prompt.to_string()
            };
            args.push(guarded);
        }
        Ok(Built {
            args,
            prompt_on_stdin: on_stdin,
            env: BTreeMap::new(),
            notes: Vec::new(),
        })
    }

    fn prepare(
        &self,
        run: &RunSpec<'_, PiExtra>,
        args: &[String],
        env: &mut BTreeMap<String, String>,
    ) -> Result<Prepared, Box<Outcome>> {
        let session = args
            .iter()
            .position(|a| a == "--session")
            .and_then(|i| args.get(i + 1))
            .cloned();
        if let (Some(saved), Some(path)) = (run.session_id, &session) {
            if let Err(why) = resumable(Path::new(path), run.cwd) {
                return Err(Box::new(Outcome::failed(
                    ErrorCode::ResumeSessionInvalid,
                    format!("pi_local cannot resume the saved session {saved}: {why}"),
                )));
            }
        }
        let mut prepared = Prepared {
            session_id: session,
            ..Prepared::default()
        };
        // The server's own variable is the default for every pi_local
        // agent, as in the original (and what the models route lists).
        let Some(raw) = env
            .remove(PROVIDERS_VAR)
            .or_else(|| std::env::var(PROVIDERS_VAR).ok())
        else {
            return Ok(prepared);
        };
        let spawn_failed = |why: String| Box::new(Outcome::failed(ErrorCode::SpawnFailed, why));
        let list = providers::parse(&raw)
            .map_err(|why| spawn_failed(format!("env.{PROVIDERS_VAR} {why}")))?;
        if list.is_empty() {
            return Ok(prepared);
        }
        let expanded = providers::expand(&list, |name| {
            env.get(name)
                .cloned()
                .or_else(|| std::env::var(name).ok())
                .filter(|v| !v.is_empty())
        });
        let user_dir = env
            .get(AGENT_DIR_VAR)
            .map(PathBuf::from)
            .or_else(|| {
                env.get("HOME")
                    .map(|h| Path::new(h).join(".pi").join("agent"))
            })
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".pi").join("agent")));
        let dir = providers::write_agent_dir(run.scratch, &expanded, user_dir.as_deref()).map_err(
            |e| {
                spawn_failed(format!(
                    "cannot write Pi's models.json for {PROVIDERS_VAR}: {e}"
                ))
            },
        )?;
        let names: Vec<&str> = list.keys().map(String::as_str).collect();
        prepared.notes.push(format!(
            "{PROVIDERS_VAR}: {} custom Pi provider(s) ({}) in a models.json of this run's own; {AGENT_DIR_VAR} points at it",
            names.len(),
            names.join(", ")
        ));
        env.insert(AGENT_DIR_VAR.into(), dir.display().to_string());
        prepared.remove_after.push(dir);
        Ok(prepared)
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(PiParser::default())
    }

    fn models<'a>(&'a self, config: &'a CliConfig) -> BoxFuture<'a, Vec<Model>> {
        Box::pin(models::list(config))
    }

    fn detect_model<'a>(&'a self, config: &'a CliConfig) -> BoxFuture<'a, Option<DetectedModel>> {
        Box::pin(async move { models::detect(config) })
    }

    fn resume_rejected(&self, text: &str) -> bool {
        let t = text.to_ascii_lowercase();
        t.contains("no session found")
            || t.contains("session not found")
            || t.contains("unknown session")
    }

    fn complete(&self, summary: &mut Summary, config: &CliConfig) {
        let model = config.model.as_deref().and_then(split_model);
        if summary.model.is_none() {
            summary.model = config.model.clone();
        }
        // Pi prices a custom model from its declared `cost` table and
        // otherwise at zero: a zero is a price only when one was declared.
        if summary.usage.cost_usd.is_some_and(|c| c == 0.0) {
            let declared = model.is_some_and(|(provider, id)| {
                config
                    .env
                    .get(PROVIDERS_VAR)
                    .cloned()
                    .or_else(|| std::env::var(PROVIDERS_VAR).ok())
                    .and_then(|raw| providers::parse(&raw).ok())
                    .is_some_and(|list| providers::declares_cost(&list, provider, id))
            });
            if !declared {
                summary.usage.cost_usd = None;
            }
        }
        // Pi writes a session file once the conversation has an answer; a
        // run that failed before one leaves nothing to resume.
        if summary
            .session_id
            .as_deref()
            .is_some_and(|s| !Path::new(s).is_file())
        {
            summary.session_id = None;
        }
    }
}

/// `provider/id` split at the first `/` (an id may hold more).
fn split_model(model: &str) -> Option<(&str, &str)> {
    model
        .trim()
        .split_once('/')
        .filter(|(p, m)| !p.is_empty() && !m.is_empty())
}

/// The config's `PI_CODING_AGENT_SESSION_DIR` (Pi's own variable), else
/// the agent's scratch directory.
fn session_dir(config: &CliConfig, scratch: &Path) -> PathBuf {
    config
        .env
        .get(SESSION_DIR_VAR)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| scratch.join("sessions"))
}

fn new_session_file(dir: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let now = chrono::Utc::now();
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Ok(dir.join(format!(
        "{}-{}-{n}.jsonl",
        now.format("%Y%m%dT%H%M%S%.9fZ"),
        std::process::id()
    )))
}

/// Whether Pi would continue the saved session here: its file is there and
/// was made in this working directory (Pi runs a resumed session's tools in
/// the directory its header names).
fn resumable(file: &Path, cwd: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|_| "its file is gone".to_string())?;
    let header: Value = text
        .lines()
        .next()
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or("its file has no session header")?;
    match header.get("cwd").and_then(Value::as_str) {
        Some(made) if Path::new(made) != cwd => Err(format!(
            "it was made in {made}, this run works in {}",
            cwd.display()
        )),
        _ => Ok(()),
    }
}

/// A provider's name as the `'static` biller name usage reports carry. The
/// set of names is the agents' configs', so small; past a bound (or for an
/// odd name) the biller is plain `pi`.
pub(super) fn intern(name: &str) -> &'static str {
    static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !ok {
        return "pi";
    }
    let mut names = NAMES.lock().unwrap();
    if let Some(known) = names.iter().find(|n| **n == name) {
        return known;
    }
    if names.len() >= 256 {
        return "pi";
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.push(leaked);
    leaked
}

#[cfg(test)]
mod tests;
