//! The environment an agent's process starts from. It is built from scratch
//! rather than inherited: the server's own environment carries its secrets
//! (`DATABASE_URL`, signing keys, cloud credentials) and an agent must only see
//! what its config and its run give it.

use std::ffi::OsString;

/// Server variables a child still gets, because ordinary programs (shells,
/// git, node-based CLIs) misbehave without them: where to find programs and
/// the home directory, locale and time zone, temp dir, who the user is, the
/// terminal type, per-user XDG dirs, extra CA certificates for TLS behind a
/// corporate proxy, and the proxy itself. Secrets do not belong here; an agent
/// that needs one gets it through `adapterConfig.env`.
const INHERITED: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
];

/// Families of variables inherited whole (`LC_ALL`, `XDG_CONFIG_HOME`, ...).
const INHERITED_PREFIXES: &[&str] = &["LC_", "XDG_"];

fn inherited(name: &str, extra: &[&str]) -> bool {
    INHERITED.contains(&name)
        || extra.contains(&name)
        || INHERITED_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The allow-listed part of this process's environment, plus the variables
/// named in `extra` (e.g. the one credential a coding CLI reads).
pub(crate) fn base(extra: &[&str]) -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(k, _)| k.to_str().is_some_and(|k| inherited(k, extra)))
        .collect()
}

/// Configures `command` to start from [`base`] instead of our environment;
/// the caller layers the config's and the run's variables on top.
pub(crate) fn clear(command: &mut tokio::process::Command, extra: &[&str]) {
    command.env_clear().envs(base(extra));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_named_variables_and_families_pass() {
        assert!(
            inherited("PATH", &[]) && inherited("LC_ALL", &[]) && inherited("XDG_DATA_HOME", &[])
        );
        assert!(!inherited("DATABASE_URL", &[]) && !inherited("ANTHROPIC_API_KEY", &[]));
        assert!(inherited("ANTHROPIC_API_KEY", &["ANTHROPIC_API_KEY"]));
        assert!(!inherited("PATHX", &[]) && !inherited("LC", &[]));
    }
}
