//! Host confinement of local agent runs: the agent-runs spec's
//! `filesystemScope` / `filesystemExtraPaths` / `networkScope` /
//! `networkAllowlist`, enforced with bubblewrap (`bwrap`) on Linux.
//!
//! - `filesystemScope: "workspace"`: the agent sees the system read-only
//!   (`/usr`, `/etc`, ...), writes only its working directory (the task's
//!   worktree), its adapter-managed session dirs, a private `/tmp` and the
//!   `rw` extra paths; everything else of the host is hidden or read-only.
//! - `networkScope`: the agent gets a network namespace of its own (no
//!   route out). `"deny"` lets it reach only the Paperclip API and its model
//!   provider; `"allowlist"` adds the workspace's git remote and the listed
//!   hosts. Loopback destinations (the API, a local provider) are mirrored
//!   at the same address inside; the rest goes through an HTTP(S) proxy
//!   (`HTTPS_PROXY`) that accepts only allowed `host:port`s.
//!
//! How the traffic gets out of a namespace with no route: this binary is
//! re-executed as a helper (see [`enter`]). Outside the sandbox it listens
//! on a unix socket, runs `bwrap`, and connects what the sandbox asks for
//! if the allow-list says so (`proxy.rs`); inside, the same binary listens
//! on the sandbox's loopback and forwards each connection over the socket
//! (`helper.rs`). The outer helper is the run's root process, so a request
//! it relays to the API is still recognised as the run's (`local_peer`),
//! never as the board's.
//!
//! Off unless the agent's config asks: a process agent is any command a
//! board chose, and confining it by default would hide the files it was
//! written to use. Asked for and impossible (no `bwrap`, a kernel without
//! user namespaces), the run fails saying why; it never runs unconfined.

mod allow;
mod bwrap;
mod helper;
mod plan;
mod proxy;
mod reach;
mod sandbox;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

pub use allow::Entry;
pub(crate) use plan::prepare;

use crate::config::Fields;

/// `argv[1]` of this binary re-executed as the confinement helper.
pub const HELPER_ARG: &str = "__paperclip-confine";

/// Set by [`enter`]: this program can re-execute itself as the helper.
static HELPER_READY: AtomicBool = AtomicBool::new(false);

/// Called first thing in `main` of a program that runs confined agents:
/// when this process is the helper, runs it and exits; otherwise records
/// that confinement is available and returns.
pub fn enter() {
    let mut args = std::env::args_os();
    if args.nth(1).is_some_and(|a| a == HELPER_ARG) {
        std::process::exit(helper::main(args.collect()));
    }
    HELPER_READY.store(true, Ordering::Relaxed);
}

pub(crate) fn helper_ready() -> bool {
    HELPER_READY.load(Ordering::Relaxed)
}

/// What an agent's `adapterConfig` asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Confinement {
    /// `filesystemScope: "workspace"`.
    pub filesystem: bool,
    pub extra_paths: Vec<ExtraPath>,
    pub network: Option<Network>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ExtraPath {
    pub path: PathBuf,
    pub writable: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Network {
    /// Only the Paperclip API and the model provider.
    Deny,
    /// Those, the workspace's git remote, and these.
    Allowlist(Vec<Entry>),
}

/// Reads the four keys, recording every problem in `f`; `None` when none
/// asks for confinement.
pub(crate) fn parse(f: &mut Fields<'_>) -> Option<Confinement> {
    let filesystem = match f.get("filesystemScope") {
        None => false,
        Some(Value::String(s)) if s == "workspace" => true,
        Some(_) => {
            f.error(
                &["filesystemScope"],
                "must be \"workspace\" (or null for no filesystem confinement)",
            );
            false
        }
    };
    let extra_paths = extra_paths(f);
    if !extra_paths.is_empty() && !filesystem && f.get("filesystemScope").is_none() {
        f.error(
            &["filesystemExtraPaths"],
            "takes effect only with filesystemScope \"workspace\"; set it too, or remove this",
        );
    }
    let list = allowlist(f);
    let network = match f.get("networkScope") {
        None => None,
        Some(Value::String(s)) if s == "deny" => Some(Network::Deny),
        Some(Value::String(s)) if s == "allowlist" => Some(Network::Allowlist(list.clone())),
        Some(_) => {
            f.error(
                &["networkScope"],
                "must be \"deny\" or \"allowlist\" (or null for no network confinement)",
            );
            None
        }
    };
    // A list without a scope would read as a restriction nothing enforces.
    if f.get("networkAllowlist").is_some() && f.get("networkScope").is_none() {
        f.error(
            &["networkAllowlist"],
            "takes effect only with networkScope \"allowlist\"; set it too, or remove this",
        );
    }
    (filesystem || network.is_some()).then_some(Confinement {
        filesystem,
        extra_paths,
        network,
    })
}

fn extra_paths(f: &mut Fields<'_>) -> Vec<ExtraPath> {
    let Some(value) = f.get("filesystemExtraPaths") else {
        return Vec::new();
    };
    let Value::Array(items) = value else {
        f.error(
            &["filesystemExtraPaths"],
            "must be an array of absolute paths or { \"path\", \"access\": \"ro\" | \"rw\" }",
        );
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let index = i.to_string();
        let (path, writable) = match item {
            Value::String(path) => (path.as_str(), false),
            Value::Object(obj) => {
                if let Some(key) = obj.keys().find(|k| *k != "path" && *k != "access") {
                    f.error(
                        &["filesystemExtraPaths", &index, key],
                        "unknown key (only path and access)",
                    );
                    continue;
                }
                let writable = match obj.get("access") {
                    None | Some(Value::Null) => false,
                    Some(Value::String(a)) if a == "ro" => false,
                    Some(Value::String(a)) if a == "rw" => true,
                    Some(_) => {
                        f.error(
                            &["filesystemExtraPaths", &index, "access"],
                            "must be \"ro\" or \"rw\"",
                        );
                        continue;
                    }
                };
                match obj.get("path") {
                    Some(Value::String(path)) => (path.as_str(), writable),
                    _ => {
                        f.error(
                            &["filesystemExtraPaths", &index, "path"],
                            "is required (an absolute path)",
                        );
                        continue;
                    }
                }
            }
            _ => {
                f.error(
                    &["filesystemExtraPaths", &index],
                    "must be an absolute path or { \"path\", \"access\" }",
                );
                continue;
            }
        };
        match check_path(path) {
            Ok(path) => out.push(ExtraPath { path, writable }),
            Err(why) => {
                let at: &[&str] = if item.is_string() {
                    &["filesystemExtraPaths", &index]
                } else {
                    &["filesystemExtraPaths", &index, "path"]
                };
                f.error(at, why);
            }
        }
    }
    out
}

fn check_path(path: &str) -> Result<PathBuf, String> {
    let p = std::path::Path::new(path);
    if !p.is_absolute() {
        return Err(format!("{path:?} must be an absolute path"));
    }
    if path.contains('\0') {
        return Err("must not contain NUL".into());
    }
    if p.components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(format!("{path:?} must not contain .."));
    }
    if p.parent().is_none() {
        return Err("/ would expose the whole host; name the directories the agent needs".into());
    }
    Ok(p.to_path_buf())
}

fn allowlist(f: &mut Fields<'_>) -> Vec<Entry> {
    let Some(value) = f.get("networkAllowlist") else {
        return Vec::new();
    };
    let Value::Array(items) = value else {
        f.error(
            &["networkAllowlist"],
            "must be an array of host names, each with an optional :port",
        );
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let parsed = match item {
            Value::String(s) => Entry::parse(s),
            _ => Err("must be a string (a host name with an optional :port)".into()),
        };
        match parsed {
            Ok(entry) => out.push(entry),
            Err(why) => f.error(&["networkAllowlist", &i.to_string()], why),
        }
    }
    out
}

/// The confinement an already validated config asks for.
pub fn from_config(config: &Value) -> Option<Confinement> {
    let mut f = Fields::new(config).ok()?;
    parse(&mut f)
}

/// Whether the config sets any of the keys (`null` is unset).
pub fn asked(config: &Value) -> bool {
    crate::config::CONFINEMENT_KEYS
        .iter()
        .any(|k| config.get(k).is_some_and(|v| !v.is_null()))
}

/// A spawn's confinement: the config's, plus what the adapter knows its
/// agent must reach (its scratch dir, the skills it loads).
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub confinement: Confinement,
    /// `process`, `claude_local`, ...: which session dirs and provider.
    pub adapter: &'static str,
    /// Adapter-managed directories the agent writes (created if missing).
    pub writable: Vec<PathBuf>,
    /// Files and directories the adapter hands the agent to read.
    pub readable: Vec<PathBuf>,
}

/// The request for a run of `adapter` with this (validated) config, if it
/// asks for confinement.
pub(crate) fn request(
    config: &Value,
    adapter: &'static str,
    writable: Vec<PathBuf>,
    readable: Vec<PathBuf>,
) -> Option<Request> {
    from_config(config).map(|confinement| Request {
        confinement,
        adapter,
        writable,
        readable,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn errors(config: Value) -> Vec<(String, String)> {
        let mut f = Fields::new(&config).unwrap();
        parse(&mut f);
        match f.finish(()) {
            Ok(()) => Vec::new(),
            Err(errors) => errors
                .into_iter()
                .map(|e| (e.path.join("."), e.message))
                .collect(),
        }
    }

    #[test]
    fn the_seed_example_parses() {
        let config = json!({
            "filesystemScope": "workspace",
            "filesystemExtraPaths": ["/opt/toolchains", {"path": "/var/cache/pnpm", "access": "rw"}],
            "networkScope": "allowlist",
            "networkAllowlist": ["api.anthropic.com", "127.0.0.1:4100"],
        });
        assert_eq!(errors(config.clone()), []);
        let c = from_config(&config).unwrap();
        assert!(c.filesystem);
        assert_eq!(
            c.extra_paths,
            [
                ExtraPath {
                    path: "/opt/toolchains".into(),
                    writable: false
                },
                ExtraPath {
                    path: "/var/cache/pnpm".into(),
                    writable: true
                },
            ]
        );
        let Some(Network::Allowlist(list)) = c.network else {
            panic!("{:?}", c.network)
        };
        assert_eq!(
            list[1],
            Entry {
                host: "127.0.0.1".into(),
                port: Some(4100)
            }
        );
        assert!(from_config(&json!({ "networkScope": null })).is_none());
        assert_eq!(
            from_config(&json!({ "networkScope": "deny" }))
                .unwrap()
                .network,
            Some(Network::Deny)
        );
    }

    #[test]
    fn every_bad_value_is_named_by_its_path() {
        let found = errors(json!({
            "filesystemScope": "everything",
            "filesystemExtraPaths": ["relative/path", {"path": "/x", "access": "rwx"}, {"path": "/a/../b"}, 3, {"path": "/y", "mode": "rw"}, "/"],
            "networkScope": "open",
            "networkAllowlist": ["*.example.com", "ok.example", 7],
        }));
        let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "filesystemScope",
                "filesystemExtraPaths.0",
                "filesystemExtraPaths.1.access",
                "filesystemExtraPaths.2.path",
                "filesystemExtraPaths.3",
                "filesystemExtraPaths.4.mode",
                "filesystemExtraPaths.5",
                "networkAllowlist.0",
                "networkAllowlist.2",
                "networkScope",
            ],
            "{found:?}"
        );
        assert!(found[0].1.contains("\"workspace\""));
        assert!(found[7].1.contains("wildcards"));
    }

    #[test]
    fn a_list_or_extra_paths_without_their_scope_are_refused() {
        let found =
            errors(json!({ "networkAllowlist": ["a.example"], "filesystemExtraPaths": ["/opt"] }));
        let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            ["filesystemExtraPaths", "networkAllowlist"],
            "{found:?}"
        );
        // Deny with a leftover list is stricter than the list: accepted.
        assert_eq!(
            errors(json!({ "networkScope": "deny", "networkAllowlist": ["a.example"] })),
            []
        );
        assert!(asked(&json!({ "networkScope": "deny" })));
        assert!(!asked(&json!({ "networkScope": null, "command": "x" })));
    }
}
