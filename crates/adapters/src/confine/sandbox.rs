//! What a filesystem-confined sandbox shows of the host: the working
//! directory, a checkout's git control files, the CLI's session dirs, the
//! files the adapter hands the agent, and the config's extra paths.

use std::path::{Path, PathBuf};

use super::bwrap::{Bind, Layout};
use super::plan::EnvFn;
use super::Request;
use crate::process::Spawn;

/// What a filesystem-confined agent sees besides the system.
pub(super) fn layout(req: &Request, spec: &Spawn, env: &EnvFn<'_>) -> Layout {
    let rw = |path: PathBuf| Bind {
        path,
        writable: true,
        optional: false,
    };
    let ro_try = |path: PathBuf| Bind {
        path,
        writable: false,
        optional: true,
    };
    let mut binds = vec![rw(spec.cwd.clone())];
    if let Some(ws) = spec.env.get("PAPERCLIP_WORKSPACE_CWD") {
        let ws = PathBuf::from(ws);
        if ws.is_absolute() && ws.is_dir() {
            binds.push(rw(ws));
        }
    }
    binds.extend(git_binds(&spec.cwd));
    let (dirs, files, readable) = session_paths(req.adapter, env);
    for dir in dirs.into_iter().chain(req.writable.iter().cloned()) {
        // Made now so the bind has a source; a session dir is the CLI's.
        let _ = std::fs::create_dir_all(&dir);
        binds.push(rw(dir));
    }
    for file in files {
        binds.push(Bind {
            path: file,
            writable: true,
            optional: true,
        });
    }
    for path in readable.into_iter().chain(req.readable.iter().cloned()) {
        binds.push(ro_try(path));
    }
    if let Some(program) = program_path(&spec.program, &spec.cwd) {
        binds.push(ro_try(program));
    }
    for extra in &req.confinement.extra_paths {
        binds.push(Bind {
            path: extra.path.clone(),
            writable: extra.writable,
            optional: true,
        });
    }
    if let Some(home) = env("HOME").map(PathBuf::from) {
        for name in [".gitconfig", ".config/git"] {
            binds.push(ro_try(home.join(name)));
        }
    }
    // A relative path (a config's) means nothing to bwrap.
    binds.retain(|b| b.path.is_absolute());
    Layout {
        binds,
        home: env("HOME")
            .map(PathBuf::from)
            .filter(|h| h.is_absolute() && h.parent().is_some()),
    }
}

/// A git checkout's control files: a worktree's common `.git` must be
/// writable (commits, the index), but nothing in it that makes git run a
/// program (hooks, `core.hooksPath`, `core.fsmonitor`) may be, since the
/// server runs git in this repository outside any sandbox.
fn git_binds(cwd: &Path) -> Vec<Bind> {
    let ro = |path: PathBuf| Bind {
        path,
        writable: false,
        optional: true,
    };
    let dot = cwd.join(".git");
    if dot.is_dir() {
        return vec![ro(dot.join("hooks")), ro(dot.join("config"))];
    }
    let Ok(text) = std::fs::read_to_string(&dot) else {
        return Vec::new();
    };
    let Some(gitdir) = text.trim().strip_prefix("gitdir:").map(str::trim) else {
        return Vec::new();
    };
    let gitdir = cwd.join(gitdir);
    let common = match std::fs::read_to_string(gitdir.join("commondir")) {
        Ok(rel) => gitdir.join(rel.trim()),
        Err(_) => gitdir.clone(),
    };
    let Ok(common) = common.canonicalize() else {
        return Vec::new();
    };
    vec![
        Bind {
            path: common.clone(),
            writable: true,
            optional: false,
        },
        ro(common.join("hooks")),
        ro(common.join("config")),
        ro(gitdir.join("config.worktree")),
    ]
}

/// Where each CLI keeps its sessions and settings (writable dirs, writable
/// files, readable files), from the run's environment as the CLI reads it.
fn session_paths(adapter: &str, env: &EnvFn<'_>) -> (Vec<PathBuf>, Vec<PathBuf>, Vec<PathBuf>) {
    let home = env("HOME").map(PathBuf::from);
    let under_home = |rel: &str| home.as_ref().map(|h| h.join(rel));
    let xdg = |var: &str, rel: &str| env(var).map(PathBuf::from).or_else(|| under_home(rel));
    let (mut dirs, mut files, mut readable) = (Vec::new(), Vec::new(), Vec::new());
    match adapter {
        "claude_local" => {
            dirs.extend(
                env("CLAUDE_CONFIG_DIR")
                    .map(PathBuf::from)
                    .or_else(|| under_home(".claude")),
            );
            files.extend(under_home(".claude.json"));
        }
        "codex_local" => {
            dirs.extend(
                env("CODEX_HOME")
                    .map(PathBuf::from)
                    .or_else(|| under_home(".codex")),
            );
        }
        // Settings, chats per project, linked skills.
        "gemini_local" => dirs.extend(under_home(".gemini")),
        "opencode_local" => {
            for (var, rel) in [
                ("XDG_DATA_HOME", ".local/share"),
                ("XDG_STATE_HOME", ".local/state"),
                ("XDG_CONFIG_HOME", ".config"),
                ("XDG_CACHE_HOME", ".cache"),
            ] {
                dirs.extend(xdg(var, rel).map(|d| d.join("opencode")));
            }
            readable.extend(env("OPENCODE_CONFIG").map(PathBuf::from));
        }
        _ => {}
    }
    dirs.retain(|d| d.is_absolute());
    (dirs, files, readable)
}

/// A command given as a path is shown read-only (one found on PATH lives
/// in a system directory, which the sandbox shows anyway).
fn program_path(program: &str, cwd: &Path) -> Option<PathBuf> {
    program.contains('/').then(|| cwd.join(program))
}
