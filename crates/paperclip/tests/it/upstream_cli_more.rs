//! More of the upstream `paperclipai` CLI's client commands against this
//! binary (issue 40): those that reach routes we serve but that the tree
//! (`upstream_cli_tree/`) does not run: runs, their logs and workspace
//! operations, agent keys and prompts, issue read and inbox state, company archive/export/import/delete,
//! members and invites, an adapter override, assets, the `skill` and `skills` groups
//! and `secrets`. Each command runs as a person would (with `--json` where
//! it prints JSON) and its effect is read back through our HTTP API. Each
//! part is one test with its own server, so nextest runs them side by side.

mod company;
mod issues;
mod runs;
mod skills;
mod workspace_log;

use crate::common;

use std::collections::HashMap;

use common::upstream::{upstream_cli, Cli, Outcome};
use common::TestServer;
use serde_json::Value;

struct More {
    cli: Cli,
    vars: HashMap<&'static str, String>,
    ran: usize,
}

impl More {
    /// A server of its own, a company in it (`{cid}`) and the CLI pointed at
    /// it, or `None` when the CLI is missing (`common/upstream.rs`).
    async fn start() -> Option<(TestServer, More)> {
        let path = upstream_cli()?;
        let s = TestServer::start().await;
        let mut more = More::on(path, &s);
        let company = s.company("More&Co").await;
        more.set("cid", &company);
        Some((s, more))
    }

    fn on(path: std::path::PathBuf, s: &TestServer) -> More {
        More {
            cli: Cli::new(path, s),
            vars: HashMap::new(),
            ran: 0,
        }
    }

    /// `{name}` in later commands becomes `value["id"]`.
    fn set(&mut self, name: &'static str, value: &Value) -> String {
        let id = value["id"]
            .as_str()
            .unwrap_or_else(|| panic!("no id for {name} in {value}"))
            .to_string();
        self.vars.insert(name, id.clone());
        id
    }

    fn var(&self, name: &str) -> String {
        self.vars[name].clone()
    }

    fn fill(&self, command: &str) -> Vec<String> {
        let mut filled = command.to_string();
        for (k, v) in &self.vars {
            filled = filled.replace(&format!("{{{k}}}"), v);
        }
        split(&filled)
    }

    /// Runs one command as given; it must succeed.
    async fn ok(&mut self, command: &str) -> Outcome {
        let args = self.fill(command);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.ran += 1;
        self.cli.ok(&args).await
    }

    /// Runs one command with `--json`; it must succeed and print JSON.
    async fn json(&mut self, command: &str) -> Value {
        self.ok(&format!("{command} --json")).await.json()
    }

    /// Runs one command given as its words (for payloads that are not one
    /// word in `fill`'s sense) with `--json`.
    async fn argv(&mut self, words: &[&str]) -> Value {
        let mut args = words.to_vec();
        args.push("--json");
        self.ran += 1;
        self.cli.ok(&args).await.json()
    }

    /// Each part runs a known number of commands, so one dropped shows.
    fn ran(&self, part: &str, expected: usize) {
        eprintln!(
            "{part}: {} upstream CLI commands worked against us",
            self.ran
        );
        assert_eq!(self.ran, expected, "{part}: commands run");
    }
}

/// Splits on spaces outside braces and double quotes, so a `{...}` JSON
/// payload or a `"..."` phrase stays one argument (the quotes are dropped).
fn split(command: &str) -> Vec<String> {
    let (mut args, mut current, mut depth, mut quoted) = (Vec::new(), String::new(), 0, false);
    for c in command.chars() {
        match c {
            '"' if depth == 0 => {
                quoted = !quoted;
                continue;
            }
            '{' if !quoted => depth += 1,
            '}' if !quoted => depth -= 1,
            ' ' if depth == 0 && !quoted => {
                args.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    args.push(current);
    args
}
