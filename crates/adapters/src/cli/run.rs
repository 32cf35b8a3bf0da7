//! A CLI run from spawn to outcome: the command line, the stream parsed as
//! it arrives (usage so far, the session), and the verdict from the exit and
//! the summary; and the environment probe that says what is missing.

use super::*;
use crate::config::{describe, truncate};
use crate::environment::{self, Check, Level, Report};
use crate::process::{self, Exit, Spawn, Stop};
use crate::{ErrorCode, Invocation, Outcome, OutcomeStatus, RunSink, Stream, UsageSoFar};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};
use stream::{Lines, StreamParser, Summary, Usage};

impl<K: CliKind> CliAdapter<K> {
    pub(crate) async fn run(&self, inv: Invocation, sink: Arc<dyn RunSink>) -> Outcome {
        let (cfg, extra) = match self.parse(&inv.config) {
            Ok(parsed) => parsed,
            Err(errors) => return Outcome::failed(ErrorCode::SpawnFailed, describe(&errors)),
        };
        let cwd = match process::working_dir(cfg.cwd.as_deref(), &inv.default_cwd).await {
            Ok(cwd) => cwd,
            Err(message) => return Outcome::failed(ErrorCode::InvalidWorkingDirectory, message),
        };
        let env = process::merged_env(&inv.env, &cfg.env);
        let billing = self.billing(&env);
        // Checked before spawning so a missing CLI is named as such, with
        // where we looked, rather than as a spawn error.
        let Some(program) =
            environment::resolve_command(&cfg.command, env.get("PATH").map(String::as_str), &cwd)
        else {
            return Outcome::failed(
                ErrorCode::AdapterNotInstalled,
                format!(
                    "{} is not installed: `{}` was not found on PATH (set adapterConfig.command to its path)",
                    self.kind.kind(),
                    cfg.command
                ),
            );
        };
        let scratch = inv
            .default_cwd
            .parent()
            .unwrap_or(&inv.default_cwd)
            .join(".paperclip")
            .join(&inv.agent_id)
            .join(self.kind.kind());
        if let Err(e) = std::fs::create_dir_all(&scratch) {
            return Outcome::failed(
                ErrorCode::SpawnFailed,
                format!("cannot create {}: {e}", scratch.display()),
            );
        }
        let prompt = inv.prompt.clone().unwrap_or_default();
        let run = RunSpec {
            config: &cfg,
            extra: &extra,
            prompt: &prompt,
            session_id: inv.session_id.as_deref(),
            cwd: &cwd,
            skills_dir: inv.skills_dir.as_deref(),
            scratch: &scratch,
        };
        let built = match self.kind.build(&run) {
            Ok(built) => built,
            Err(e) => {
                return Outcome::failed(
                    ErrorCode::SpawnFailed,
                    format!("preparing the {} run failed: {e}", self.kind.kind()),
                )
            }
        };
        for note in &built.notes {
            sink.log(Stream::System, &format!("{note}\n"));
        }
        let mut full_env = built.env;
        full_env.extend(env);
        let prepared = match self.kind.prepare(&run, &built.args, &mut full_env) {
            Ok(prepared) => prepared,
            Err(outcome) => return *outcome,
        };
        for note in &prepared.notes {
            sink.log(Stream::System, &format!("{note}\n"));
        }
        if let Some(id) = &prepared.session_id {
            // Known before the CLI prints anything: a restart finds it here.
            stream::Item::Init {
                session_id: Some(id.clone()),
                model: cfg.model.clone(),
                tools: Vec::new(),
            }
            .emit(&*sink);
        }
        let spawn = Spawn {
            program: program.display().to_string(),
            args: built.args,
            cwd,
            env: full_env,
            // The CLI's own credential may come from the server's environment.
            inherit: crate::detect::key_var(self.kind.kind())
                .into_iter()
                .collect(),
            stdin: built.prompt_on_stdin.then(|| prompt.clone()),
            timeout: cfg.timeout,
            grace: cfg.grace,
            stop_now: inv.stop_now.clone(),
            confine: crate::confine::request(
                &inv.config,
                self.kind.kind(),
                vec![scratch.clone()],
                inv.skills_dir
                    .iter()
                    .chain(&cfg.instructions_file)
                    .cloned()
                    .collect(),
            ),
        };
        let parser = Arc::new(Mutex::new(self.kind.parser()));
        let waiting = paperclip_core::run_status::StatusUpdate::new(
            "waiting on the model",
            Some(paperclip_core::run_status::StatusColor::Blue),
        );
        waiting.iter().for_each(|w| sink.status(w));
        let exit = process::execute(
            &spawn,
            &inv.cancel,
            sink.clone(),
            Some(Box::new(ParseTap {
                lines: Lines::default(),
                parser: parser.clone(),
                sink: sink.clone(),
                kind: self.kind.clone(),
                config: cfg.clone(),
                billing,
                reported: None,
            })),
        )
        .await;
        for path in &prepared.remove_after {
            let _ = std::fs::remove_dir_all(path);
        }
        let mut summary = parser.lock().unwrap().summary();
        if summary.session_id.is_none() {
            summary.session_id = prepared.session_id;
        }
        self.kind.complete(&mut summary, &cfg);
        let mut out = self.outcome(&cfg, exit, summary, inv.session_id.is_some());
        super::stamp_billing(&mut out, billing);
        out
    }

    /// Who pays for a run with `env`, counting the credential the child
    /// inherits from the server's environment when the run sets none (see
    /// `Spawn::inherit` below).
    fn billing(&self, env: &BTreeMap<String, String>) -> paperclip_core::billing::BillingType {
        let mut env = env.clone();
        if let Some(key) = crate::detect::key_var(self.kind.kind()) {
            if !env.contains_key(key) {
                if let Ok(value) = std::env::var(key) {
                    env.insert(key.to_string(), value);
                }
            }
        }
        self.kind.billing_type(&env)
    }

    pub(crate) fn outcome(
        &self,
        cfg: &CliConfig,
        exit: Result<Exit, Outcome>,
        summary: Summary,
        resumed: bool,
    ) -> Outcome {
        let mut out = match exit {
            Err(outcome) => outcome,
            Ok(exit) => self.judge(cfg, &exit, &summary, resumed),
        };
        if !summary.usage.is_empty() || summary.model.is_some() {
            let u = &summary.usage;
            out.usage = Some(json!({
                "provider": self.kind.provider(summary.model.as_deref()),
                "model": summary.model,
                "inputTokens": u.input_tokens,
                "cachedInputTokens": u.cached_input_tokens,
                "outputTokens": u.output_tokens,
                "costUsd": u.cost_usd,
            }));
        }
        out.result = Some(json!({
            "sessionId": summary.session_id,
            "text": summary.result_text,
            "stopReason": summary.stop_reason,
            "numTurns": summary.num_turns,
            "contextTokens": summary.context_tokens,
            "quotaWindows": (!summary.quota.is_empty()).then(|| json!({
                "provider": self.kind.provider(summary.model.as_deref()),
                "windows": summary.quota,
            })),
        }));
        // A rejected session must not be saved again.
        if out.error_code != Some(ErrorCode::ResumeSessionInvalid) {
            out.session_id = summary.session_id;
        }
        out
    }

    fn judge(&self, cfg: &CliConfig, exit: &Exit, summary: &Summary, resumed: bool) -> Outcome {
        use std::os::unix::process::ExitStatusExt;
        let mut out = match exit.stopped {
            Some((Stop::Timeout, _)) => Outcome::ended(
                OutcomeStatus::TimedOut,
                ErrorCode::Timeout,
                format!(
                    "timed out after {}s",
                    cfg.timeout.unwrap_or_default().as_secs_f64()
                ),
            ),
            Some((Stop::Cancel, _)) => {
                Outcome::ended(OutcomeStatus::Cancelled, ErrorCode::Cancelled, "cancelled")
            }
            None => self.judge_exit(exit, summary, resumed),
        };
        out.exit_code = exit.status.code();
        out.signal = match exit.stopped {
            Some((_, name)) => Some(name.to_string()),
            None => exit.status.signal().map(|s| format!("signal {s}")),
        };
        out
    }

    fn judge_exit(&self, exit: &Exit, summary: &Summary, resumed: bool) -> Outcome {
        let code = exit.status.code();
        if code == Some(0) && summary.completed && summary.error.is_none() {
            return Outcome::succeeded();
        }
        let said = summary
            .error
            .clone()
            .or_else(|| exit.stderr_tail.clone())
            .or_else(|| summary.last_other_line.clone())
            .unwrap_or_default();
        let all = format!(
            "{said}\n{}\n{}",
            exit.stderr_tail.as_deref().unwrap_or(""),
            summary.last_other_line.as_deref().unwrap_or("")
        );
        let said = truncate(said.trim(), 1000).to_string();
        let name = self.name;
        if resumed && self.kind.resume_rejected(&all) {
            return Outcome::failed(
                ErrorCode::ResumeSessionInvalid,
                format!("{name} could not resume the saved session: {said}"),
            );
        }
        if let Some(class) = classify::classify(&all) {
            return Outcome::failed(class, said);
        }
        if summary.json_lines == 0 {
            let got = summary
                .last_other_line
                .clone()
                .or_else(|| exit.stderr_tail.clone())
                .unwrap_or_else(|| "no output".into());
            return Outcome::failed(
                ErrorCode::OutputParseError,
                format!("{name} did not print its JSON event stream; last output: {got}"),
            );
        }
        match code {
            Some(0) => Outcome::failed(
                if summary.error.is_some() {
                    ErrorCode::NonzeroExit
                } else {
                    ErrorCode::OutputParseError
                },
                if said.is_empty() {
                    format!("{name} exited without reporting a result")
                } else {
                    said
                },
            ),
            Some(c) => Outcome::failed(
                ErrorCode::NonzeroExit,
                if said.is_empty() {
                    format!("{name} exited with code {c}")
                } else {
                    format!("{name} exited with code {c}: {said}")
                },
            ),
            None => Outcome::failed(
                ErrorCode::NonzeroExit,
                format!("{name} was killed by a signal"),
            ),
        }
    }

    pub(crate) async fn probe(&self, config: &Value, default_cwd: &Path) -> Report {
        let kind = self.kind.kind();
        let (cfg, _) = match self.parse(config) {
            Ok(parsed) => parsed,
            Err(errors) => return Report::new(kind, environment::config_checks(Err(errors))),
        };
        let mut checks = environment::config_checks(Ok(()));
        let cwd = environment::cwd_checks(cfg.cwd.as_deref(), default_cwd, &mut checks);
        let path_var = cfg.env.get("PATH").cloned();
        match environment::resolve_command(&cfg.command, path_var.as_deref(), &cwd) {
            None => checks.push(
                Check::new(
                    ErrorCode::AdapterNotInstalled.as_str(),
                    Level::Error,
                    format!("`{}` is not installed or not on PATH", cfg.command),
                )
                .hint(format!(
                    "Install it ({}) or set command to the CLI's full path",
                    install_hint(kind)
                )),
            ),
            Some(program) => {
                checks.push(Check::new(
                    "command_found",
                    Level::Info,
                    format!("Found {}", program.display()),
                ));
                let env: Vec<(String, String)> = cfg.env.clone().into_iter().collect();
                match environment::version(&program, &env).await {
                    Ok(version) => checks.push(
                        Check::new(
                            "command_version",
                            Level::Info,
                            format!(
                                "Dry run: `{} --version` answered, so the CLI starts (no model was called)",
                                cfg.command
                            ),
                        )
                        .detail(version),
                    ),
                    Err(why) => checks.push(
                        Check::new(
                            ErrorCode::SpawnFailed.as_str(),
                            Level::Error,
                            format!("`{}` does not start", cfg.command),
                        )
                        .detail(why),
                    ),
                }
            }
        }
        // Whether the CLI would find credentials; a run without them fails
        // at its first request, so say it now (the key itself is never shown).
        let auth = crate::detect::auth(kind, &cfg.env, &crate::detect::server_env());
        checks.push(match (auth.ready, auth.hint) {
            (true, _) => Check::new("auth_ready", Level::Info, auth.message),
            (false, hint) => {
                let check = Check::new("auth_env_missing", Level::Warn, auth.message);
                match hint {
                    Some(h) => check.hint(h),
                    None => check,
                }
            }
        });
        Report::new(kind, checks)
    }
}

fn install_hint(kind: &str) -> &'static str {
    match kind {
        "claude_local" => "npm install -g @anthropic-ai/claude-code",
        "codex_local" => "npm install -g @openai/codex",
        "opencode_local" => "npm install -g opencode-ai",
        "gemini_local" => "npm install -g @google/gemini-cli",
        "pi_local" => "npm install -g @mariozechner/pi-coding-agent",
        _ => "Install the CLI or set adapterConfig.command",
    }
}

/// Feeds stdout into the parser line by line and reports each transcript
/// item as it is read, so the UI sees steps while the CLI still runs, and
/// the run's usage each time it grows, so budgets act while it runs.
pub(crate) struct ParseTap<K: CliKind> {
    pub(crate) lines: Lines,
    pub(crate) parser: Arc<Mutex<Box<dyn StreamParser>>>,
    pub(crate) sink: Arc<dyn RunSink>,
    pub(crate) kind: K,
    pub(crate) config: CliConfig,
    /// Who pays for the run, decided once at its start.
    pub(crate) billing: paperclip_core::billing::BillingType,
    /// The usage last reported, so an unchanged total is not reported again.
    pub(crate) reported: Option<Usage>,
}

impl<K: CliKind> ParseTap<K> {
    fn feed(&mut self, line: &str) {
        let (items, running) = {
            let mut parser = self.parser.lock().unwrap();
            let items = parser.line(line);
            let (model, usage) = parser.running();
            let changed = !usage.is_empty() && self.reported.as_ref() != Some(usage);
            let finished = parser.finished();
            (
                items,
                changed.then(|| (model.map(str::to_string), usage.clone(), finished)),
            )
        };
        for item in items {
            item.emit(&*self.sink);
        }
        if let Some((model, usage, finished)) = running {
            // The first usage is the model's first answer: no longer waiting.
            if self.reported.is_none() && !finished {
                let working = paperclip_core::run_status::StatusUpdate::new(
                    "the model answered; working",
                    Some(paperclip_core::run_status::StatusColor::Green),
                );
                working.iter().for_each(|w| self.sink.status(w));
            }
            self.reported = Some(usage.clone());
            self.sink.usage(&self.so_far(model, usage, finished));
        }
    }

    /// The usage with what the CLI leaves out (its model, a price) filled in
    /// as the end-of-run summary will be.
    fn so_far(&self, model: Option<String>, usage: Usage, finished: bool) -> UsageSoFar {
        let mut s = Summary {
            model,
            usage,
            ..Summary::default()
        };
        self.kind.complete(&mut s, &self.config);
        UsageSoFar {
            provider: self.kind.provider(s.model.as_deref()).to_string(),
            model: s.model,
            input_tokens: s.usage.input_tokens,
            cached_input_tokens: s.usage.cached_input_tokens,
            output_tokens: s.usage.output_tokens,
            cost_usd: s.usage.cost_usd,
            billing_type: self.billing,
            finished,
        }
    }
}

impl<K: CliKind> process::Tap for ParseTap<K> {
    fn text(&mut self, text: &str) {
        for line in self.lines.push(text) {
            self.feed(&line);
        }
    }

    fn end(&mut self) {
        if let Some(line) = self.lines.finish() {
            self.feed(&line);
        }
    }
}
