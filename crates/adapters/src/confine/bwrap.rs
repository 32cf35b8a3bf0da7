//! The `bwrap` command line: which namespaces, and what of the host the
//! sandbox sees. Pure functions of a [`Layout`] (the host is looked at only
//! for which of `/bin`, `/lib*` are symlinks), so the arguments are tested
//! without running anything.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One host path shown in the sandbox at the same place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bind {
    pub path: PathBuf,
    pub writable: bool,
    /// Skipped when missing (`--bind-try`) instead of failing the run.
    pub optional: bool,
}

/// What a filesystem-confined sandbox shows besides the system.
#[derive(Debug, Default)]
pub(crate) struct Layout {
    pub binds: Vec<Bind>,
    /// The agent's `$HOME`: present (so tools can stat it) but read-only,
    /// apart from the session dirs bound inside it.
    pub home: Option<PathBuf>,
}

/// System directories shown read-only; a bind below one is redundant
/// unless it makes something writable.
const SYSTEM: &[&str] = &[
    "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// Namespaces and process hygiene, both modes. As root, bwrap would leave
/// the sandbox every capability (enough to remount `/` writable), hence
/// `--cap-drop ALL`. `--die-with-parent`: the helper that started bwrap is
/// the run's root process; when it is killed, so is the sandbox.
pub(crate) fn namespace_args(net: bool) -> Vec<String> {
    let mut args: Vec<String> = [
        "--die-with-parent",
        "--cap-drop",
        "ALL",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
    ]
    .map(String::from)
    .into();
    if net {
        args.push("--unshare-net".into());
    }
    args
}

/// Network confinement alone: the host's filesystem as it is.
pub(crate) fn host_args() -> Vec<String> {
    [
        "--bind",
        "/",
        "/",
        "--dev-bind",
        "/dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    .map(String::from)
    .into()
}

/// Filesystem confinement: the system read-only, a private `/tmp`, the
/// layout's binds, and everything else hidden; the root and any directory
/// created to hold a bind are made read-only last, so a write outside the
/// binds fails instead of landing in a throwaway directory.
pub(crate) fn workspace_args(layout: &Layout) -> Vec<String> {
    let mut args = Vec::new();
    let mut push = |parts: &[&str]| args.extend(parts.iter().map(|s| s.to_string()));
    push(&["--ro-bind", "/usr", "/usr"]);
    for dir in ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"] {
        match std::fs::symlink_metadata(dir) {
            Ok(m) if m.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(dir) {
                    push(&["--symlink", &target.to_string_lossy(), dir]);
                }
            }
            Ok(m) if m.is_dir() => push(&["--ro-bind", dir, dir]),
            _ => {}
        }
    }
    push(&["--ro-bind", "/etc", "/etc"]);
    // `/etc/resolv.conf` often points here (systemd-resolved).
    push(&[
        "--ro-bind-try",
        "/run/systemd/resolve",
        "/run/systemd/resolve",
    ]);
    push(&["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]);

    let binds = merged(&layout.binds);
    let tmp = Path::new("/tmp");
    // A bind deeper in /tmp would get its parents made in the writable
    // private /tmp; a tmpfs of their own, read-only at the end, stops a
    // write there looking like it worked.
    let mut sealed: BTreeSet<PathBuf> = BTreeSet::new();
    let dests = binds.iter().map(|b| &b.path).chain(layout.home.as_ref());
    for dest in dests {
        if let Ok(rest) = dest.strip_prefix(tmp) {
            if let Some(first) = rest.components().next() {
                sealed.insert(tmp.join(first));
            }
        }
    }
    for bind in &binds {
        sealed.remove(&bind.path);
    }

    enum Op<'a> {
        Tmpfs(&'a Path),
        Bind(&'a Bind),
        Dir(&'a Path),
    }
    let mut ops: Vec<(usize, Op)> = Vec::new();
    for dir in &sealed {
        ops.push((depth(dir), Op::Tmpfs(dir)));
    }
    for bind in &binds {
        ops.push((depth(&bind.path), Op::Bind(bind)));
    }
    if let Some(home) = &layout.home {
        ops.push((depth(home), Op::Dir(home)));
    }
    // Parents before children: a later mount shows over an earlier one.
    ops.sort_by_key(|(d, _)| *d);
    for (_, op) in ops {
        match op {
            Op::Tmpfs(dir) => push(&["--tmpfs", &dir.to_string_lossy()]),
            Op::Dir(dir) => push(&["--dir", &dir.to_string_lossy()]),
            Op::Bind(b) => {
                let flag = match (b.writable, b.optional) {
                    (true, false) => "--bind",
                    (true, true) => "--bind-try",
                    (false, false) => "--ro-bind",
                    (false, true) => "--ro-bind-try",
                };
                let p = b.path.to_string_lossy();
                push(&[flag, &p, &p]);
            }
        }
    }
    for dir in &sealed {
        push(&["--remount-ro", &dir.to_string_lossy()]);
    }
    push(&["--remount-ro", "/"]);
    args
}

/// One bind per path (writable if any asked so, required if any did), and
/// no read-only bind of what the system mounts already show.
fn merged(binds: &[Bind]) -> Vec<Bind> {
    let mut out: Vec<Bind> = Vec::new();
    for b in binds {
        if !b.writable && SYSTEM.iter().any(|s| b.path.starts_with(s)) {
            continue;
        }
        match out.iter_mut().find(|o| o.path == b.path) {
            Some(o) => {
                o.writable |= b.writable;
                o.optional &= b.optional;
            }
            None => out.push(b.clone()),
        }
    }
    out
}

fn depth(path: &Path) -> usize {
    path.components().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bind(path: &str, writable: bool) -> Bind {
        Bind {
            path: path.into(),
            writable,
            optional: false,
        }
    }

    /// The flags after the fixed system part.
    fn tail(args: &[String]) -> Vec<String> {
        let at = args.iter().position(|a| a == "/tmp").unwrap() + 1;
        args[at..].to_vec()
    }

    #[test]
    fn binds_go_parents_first_and_tmp_parents_are_sealed_read_only() {
        let layout = Layout {
            binds: vec![
                bind("/tmp/data/worktrees/t1/.git/hooks", false),
                bind("/tmp/data/worktrees/t1", true),
                bind("/usr/local/bin/tool", false),
                bind("/srv/cache", true),
                bind("/tmp/sock", false),
                bind("/srv/cache", false),
            ],
            home: Some("/root".into()),
        };
        let args = workspace_args(&layout);
        let tail = tail(&args).join(" ");
        assert_eq!(
            tail,
            "--dir /root --tmpfs /tmp/data --bind /srv/cache /srv/cache --ro-bind /tmp/sock /tmp/sock \
             --bind /tmp/data/worktrees/t1 /tmp/data/worktrees/t1 \
             --ro-bind /tmp/data/worktrees/t1/.git/hooks /tmp/data/worktrees/t1/.git/hooks \
             --remount-ro /tmp/data --remount-ro /"
        );
        assert!(args.windows(3).any(|w| w == ["--ro-bind", "/usr", "/usr"]));
        assert!(args.windows(3).any(|w| w == ["--ro-bind", "/etc", "/etc"]));
    }

    #[test]
    fn a_home_in_tmp_is_read_only_too() {
        let layout = Layout {
            binds: vec![Bind {
                path: "/tmp/h/.claude".into(),
                writable: true,
                optional: true,
            }],
            home: Some("/tmp/h".into()),
        };
        let tail = tail(&workspace_args(&layout)).join(" ");
        assert_eq!(
            tail,
            "--tmpfs /tmp/h --dir /tmp/h --bind-try /tmp/h/.claude /tmp/h/.claude \
             --remount-ro /tmp/h --remount-ro /"
        );
    }

    #[test]
    fn namespaces_drop_capabilities_and_the_network_only_when_asked() {
        let fs = namespace_args(false);
        assert!(fs.windows(2).any(|w| w == ["--cap-drop", "ALL"]));
        assert!(!fs.contains(&"--unshare-net".to_string()));
        assert!(namespace_args(true).contains(&"--unshare-net".to_string()));
    }
}
